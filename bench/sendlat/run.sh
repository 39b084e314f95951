#!/usr/bin/env bash
# Transactional send latency (accept → relay sink) and max sustained rate.
#
#   bench/sendlat/run.sh                                   # SQLite, 200/s for 30 s, then steps
#   DB=postgres bench/sendlat/run.sh                       # PostgreSQL, fresh schema (needs psql)
#   RATE=200 DURATION=30s RATES=200,400,600,800,1000 STEP_DURATION=15s bench/sendlat/run.sh
#   MODE=workflow RATE=1000 DURATION=20s RATES= bench/sendlat/run.sh   # events that start workflow runs
#
# Starts `lasso serve` relaying to sendlat's SMTP sink, creates a key and a
# verified domain, and lets sendlat create/publish the transactional email.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DB=${DB:-sqlite}
RATE=${RATE:-200}
DURATION=${DURATION:-30s}
RATES=${RATES-200,400,600,800,1000,1200,1400,1600,2000}
STEP_DURATION=${STEP_DURATION:-15s}
PG_URL=${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
LOG_LEVEL=${LOG_LEVEL:-warn}
MODE=${MODE:-transactional}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lasso-sendlat.XXXXXX")
SERVER_PID=""; SCHEMA=""
cleanup() {
	[[ -n "$SERVER_PID" ]] && { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
	[[ -n "$SCHEMA" ]] && psql "$PG_URL" -qAt -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
	[[ -n "${KEEP:-}" ]] && cp "$WORK/server.log" "$KEEP" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

cd "$ROOT"
go build -o bin/lasso ./cmd/lasso
go build -o bin/sendlat ./bench/sendlat

DBARGS=()
if [[ "$DB" == postgres ]]; then
	SCHEMA="sendlat_$$_$RANDOM"
	psql "$PG_URL" -qAt -c "CREATE SCHEMA $SCHEMA" >/dev/null
	DBARGS=(--database-url "${PG_URL}&search_path=${SCHEMA}")
fi
MODEARGS=(-mode "$MODE")
if [[ "$MODE" == workflow ]]; then
	if [[ "$DB" == postgres ]]; then MODEARGS+=(-database-url "${PG_URL}&search_path=${SCHEMA}")
	else MODEARGS+=(-database-url "$WORK/data/lasso.db"); fi
fi
HTTP_PORT=$(free_port); SINK_PORT=$(free_port)
KEY=$(bin/lasso keys create --team B --data-dir "$WORK/data" "${DBARGS[@]}")
bin/lasso domains add --team B --domain example.com --verified --data-dir "$WORK/data" "${DBARGS[@]}" >/dev/null
bin/lasso serve --data-dir "$WORK/data" "${DBARGS[@]}" --http-addr "127.0.0.1:$HTTP_PORT" \
	--smtp-addr off --bounce-addr off --rate-limit=0 --log-level "$LOG_LEVEL" \
	--smtp-relay "smtp://127.0.0.1:$SINK_PORT?tls=none" --hostname mta.bench.test ${SERVER_ARGS:-} >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$HTTP_PORT/api/v1/api-key" -H "Authorization: Bearer $KEY" && break; sleep 0.1; done

echo "# backend=$DB $(nproc) CPUs, $(go version | awk '{print $3}')"
bin/sendlat -url "http://127.0.0.1:$HTTP_PORT" -key "$KEY" -sink-addr "127.0.0.1:$SINK_PORT" -setup "${MODEARGS[@]}" -rate "$RATE" -d "$DURATION" "$@"
if [[ -n "$RATES" ]]; then bin/sendlat -url "http://127.0.0.1:$HTTP_PORT" -key "$KEY" -sink-addr "127.0.0.1:$SINK_PORT" -setup "${MODEARGS[@]}" -rate 0 -warmup 0 -rates "$RATES" -d "$STEP_DURATION" "$@"; fi

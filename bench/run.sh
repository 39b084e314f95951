#!/usr/bin/env bash
# Benchmark the Lasso API: event sends and contact upserts, on SQLite and then
# on PostgreSQL, at a few concurrencies; prints the median of RUNS runs.
#
#   bench/run.sh                       # everything (about 8 minutes)
#   BACKENDS=sqlite CONCS="32" RUNS=1 bench/run.sh
#
# Environment:
#   CONCS      concurrencies                        (default "8 32 64")
#   DURATION   length of one run                    (default 10s)
#   RUNS       runs per setting; the table shows medians (default 3)
#   WARMUP     warm-up per endpoint before measuring (default 3s)
#   BACKENDS   "sqlite postgres"                    (default both)
#   BENCH_POSTGRES_URL  (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#              a fresh schema is created and dropped (needs psql)
#   LOG_LEVEL  server log level (default info: one log line per request, as in production)
#   KEEP       directory to copy the raw results and server logs into (optional)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONCS=${CONCS:-"8 32 64"}
DURATION=${DURATION:-10s}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-3s}
BACKENDS=${BACKENDS:-"sqlite postgres"}
PG_URL=${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
LOG_LEVEL=${LOG_LEVEL:-info}
KEEP=${KEEP:-}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lasso-bench.XXXXXX")
SERVER_PID=""
SCHEMA=""

cleanup() {
	if [[ -n "$SERVER_PID" ]]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
	if [[ -n "$SCHEMA" ]]; then
		psql "$PG_URL" -qAt -c "SET client_min_messages TO warning; DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
		SCHEMA=""
	fi
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

cpu_ticks() { # utime+stime of a process, in clock ticks
	awk '{print $14+$15}' "/proc/$1/stat"
}

pg_ticks() { # utime+stime of all local postgres processes (the PostgreSQL server side)
	local p
	for p in $(pgrep -x postgres 2>/dev/null); do
		awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || true
	done | awk '{s += $1} END {print s + 0}'
}

busy_ticks() { # busy CPU ticks of the whole machine (all processes)
	awk '/^cpu / {print $2+$3+$4+$7+$8+$9; exit}' /proc/stat
}

echo "== building (go build) into $WORK"
(cd "$ROOT" && go build -o "$WORK/lasso" ./cmd/lasso && go build -o "$WORK/loadgen" ./bench/loadgen)
HZ=$(getconf CLK_TCK)

echo "== machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(go version | cut -d' ' -f3)"
grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: /== cpu: /' || true

RESULTS="$WORK/results.tsv"
: >"$RESULTS"

for backend in $BACKENDS; do
	data="$WORK/data-$backend"
	mkdir -p "$data"
	dbargs=(--data-dir "$data")
	if [[ "$backend" == postgres ]]; then
		if ! psql "$PG_URL" -qAt -c 'SELECT 1' >/dev/null 2>&1; then
			echo "== postgres: cannot connect to $PG_URL, skipping" >&2
			continue
		fi
		SCHEMA="bench_$$_$RANDOM"
		psql "$PG_URL" -qAt -c "CREATE SCHEMA $SCHEMA" >/dev/null
		sep='?'
		[[ "$PG_URL" == *\?* ]] && sep='&'
		dbargs+=(--database-url "${PG_URL}${sep}search_path=$SCHEMA")
	fi

	key=$("$WORK/lasso" keys create --team "Bench" "${dbargs[@]}")
	port=$(free_port)
	smtp=$(free_port)
	url="http://127.0.0.1:$port"
	# Note: --rate-limit=-1 (with "="): the CLI parser reads "-1" as a flag otherwise.
	"$WORK/lasso" serve "${dbargs[@]}" --http-addr "127.0.0.1:$port" --smtp-addr "127.0.0.1:$smtp" \
		--rate-limit=-1 --log-level "$LOG_LEVEL" >"$WORK/server-$backend.log" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do
		curl -fsS "$url/healthz" >/dev/null 2>&1 && break
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server-$backend.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "== $backend: server pid $SERVER_PID on $url; load average $(cut -d' ' -f1-3 /proc/loadavg)"

	for ep in events contacts; do
		"$WORK/loadgen" -url "$url" -key "$key" -endpoint "$ep" -c 32 -d "$WARMUP" -prefix "warm-$backend-$ep" -tsv >/dev/null
	done

	for ep in events contacts; do
		for c in $CONCS; do
			for r in $(seq "$RUNS"); do
				t0=$(cpu_ticks "$SERVER_PID")
				m0=$(busy_ticks)
				p0=$(pg_ticks)
				w0=$(date +%s.%N)
				line=$("$WORK/loadgen" -url "$url" -key "$key" -endpoint "$ep" -c "$c" -d "$DURATION" -prefix "$backend-$ep-$c-$r" -tsv)
				w1=$(date +%s.%N)
				p1=$(pg_ticks)
				m1=$(busy_ticks)
				t1=$(cpu_ticks "$SERVER_PID")
				# CPU time / wall time = cores kept busy: by the server, and by
				# everything else on the machine except the server and loadgen.
				cores=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v w0="$w0" -v w1="$w1" 'BEGIN{printf "%.2f", (b-a)/hz/(w1-w0)}')
				lg=$(echo "$line" | awk -F'\t' '{print $12}')
				pg=0
				if [[ "$backend" == postgres ]]; then
					pg=$(awk -v a="$p0" -v b="$p1" -v hz="$HZ" -v w0="$w0" -v w1="$w1" 'BEGIN{printf "%.2f", (b-a)/hz/(w1-w0)}')
				fi
				other=$(awk -v a="$m0" -v b="$m1" -v hz="$HZ" -v w0="$w0" -v w1="$w1" -v s="$cores" -v l="$lg" -v p="$pg" 'BEGIN{o=(b-a)/hz/(w1-w0)-s-l-p; if (o<0) o=0; printf "%.2f", o}')
				printf '%s\t%s\t%s\t%s\t%s\n' "$backend" "$line" "$cores" "$pg" "$other" | tee -a "$RESULTS"
			done
		done
	done

	curl -fsS "$url/metrics" >"$WORK/metrics-$backend.txt" 2>/dev/null || true
	if [[ -s "$WORK/metrics-$backend.txt" ]]; then
		echo "== $backend: server-side mean latency per route (from /metrics, whole run incl. warm-up)"
		awk '/^lasso_http_request_duration_seconds_(sum|count)\{/ {
				match($0, /route="[^"]*"/); r=substr($0, RSTART+7, RLENGTH-8);
				if ($0 ~ /_sum\{/) s[r]=$NF; else n[r]=$NF }
			END { for (r in n) if (n[r] > 0) printf "   %-40s %9d requests  mean %.3f ms\n", r, n[r], 1000*s[r]/n[r] }' "$WORK/metrics-$backend.txt"
	fi
	cleanup
done

if [[ -n "$KEEP" ]]; then
	mkdir -p "$KEEP"
	cp "$RESULTS" "$WORK"/metrics-*.txt "$KEEP"/ 2>/dev/null || true
	for f in "$WORK"/server-*.log; do tail -n 200 "$f" >"$KEEP/$(basename "$f")"; done
	echo "== raw results kept in $KEEP"
fi

echo
echo "== medians of $RUNS run(s) of $DURATION each (req/s = successful responses per second; latency in ms, client side)"
# results.tsv: backend endpoint c rps p50 p90 p99 max requests ok non2xx errors loadgen-cores server-cores postgres-cores other-cores
awk -F'\t' '
	function median(s,   a, n, i, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) { t = a[i]; j = i - 1; while (j >= 1 && a[j] + 0 > t + 0) { a[j+1] = a[j]; j-- } a[j+1] = t }
		return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	{
		k = $1 SUBSEP $2 SUBSEP $3
		if (!(k in seen)) { seen[k] = 1; order[++m] = k }
		rps[k] = rps[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $7; mx[k] = mx[k] " " $8
		lg[k] = lg[k] " " $13; cores[k] = cores[k] " " $14; pgc[k] = pgc[k] " " $15; oth[k] = oth[k] " " $16; bad[k] += $11 + $12
	}
	END {
		printf "| %-8s | %-8s | %4s | %8s | %8s | %8s | %8s | %9s | %8s | %8s | %11s | %7s |\n", "backend", "endpoint", "c", "req/s", "p50 ms", "p99 ms", "max ms", "srv cores", "pg cores", "lg cores", "other cores", "non-2xx"
		printf "|----------|----------|------|----------|----------|----------|----------|-----------|----------|----------|-------------|---------|\n"
		for (i = 1; i <= m; i++) {
			k = order[i]; split(k, f, SUBSEP)
			printf "| %-8s | %-8s | %4s | %8.0f | %8.2f | %8.2f | %8.2f | %9.2f | %8.2f | %8.2f | %11.2f | %7d |\n", f[1], f[2], f[3], median(rps[k]), median(p50[k]), median(p99[k]), median(mx[k]), median(cores[k]), median(pgc[k]), median(lg[k]), median(oth[k]), bad[k]
		}
	}' "$RESULTS"

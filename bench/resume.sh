#!/usr/bin/env bash
# Intake latency while a paused workflow holding many contacts is resumed.
#
#   bench/resume.sh BIN [HELD] [yes|no]
#
# Starts BIN serve on a fresh SQLite data dir, creates a workflow
# EventTrigger "benchSignup" (loadgen's event) -> 1 h timer, starts it,
# pauses it with queueing, fills it with HELD held runs (loadgen events),
# then sends events paced at 1,500/s for 12 s and, 3 s in, resumes the
# workflow (yes) or not (no). Prints the resume call's duration and the
# paced run's loadgen summary (latency from the scheduled send time).
# Needs curl, jq, sqlite3, python3.
set -euo pipefail; [ -n "${DEBUG:-}" ] && set -x
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOADGEN=${LOADGEN:-$ROOT/bin/loadgen}
[ -x "$LOADGEN" ] || (cd "$ROOT" && go build -o bin/loadgen ./bench/loadgen)
BIN=${1:?usage: bench/resume.sh BIN HELD yes|no}; HELD=${2:-20000}; RESUME=${3:-yes}
D=$(mktemp -d "${TMPDIR:-/tmp}/lasso-resume.XXXX")
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])")
KEY=$($BIN keys create --team Bench --data-dir $D)
$BIN domains add --team Bench --domain example.com --verified --data-dir $D >/dev/null
$BIN serve --data-dir $D --http-addr 127.0.0.1:$PORT --smtp-addr off --bounce-addr off --rate-limit=0 --log-level warn >$D/log 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf $D' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
api() { curl -fsS -X "$1" "http://127.0.0.1:$PORT$2" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
WF=$(api POST /api/v1/workflows '{"name":"rearm"}')
ID=$(echo "$WF" | jq -r .id); ROOT=$(echo "$WF" | jq -r .rootNodeId); REV=$(echo "$WF" | jq -r .workflowRevisionId)
REV=$(api POST /api/v1/workflows/$ID/nodes/$ROOT "{\"expectedRevisionId\":\"$REV\",\"payload\":{\"typeName\":\"EventTrigger\",\"eventName\":\"benchSignup\",\"reEligible\":true}}" | jq -r .workflowRevisionId)
T=$(api POST /api/v1/workflows/$ID/nodes "{\"expectedRevisionId\":\"$REV\",\"insertMode\":\"after\",\"nodeTypeName\":\"TimerAction\",\"fromNodeId\":\"$ROOT\"}")
TID=$(echo "$T" | jq -r .node.id); REV=$(echo "$T" | jq -r .workflow.workflowRevisionId)
api POST /api/v1/workflows/$ID/nodes/$TID "{\"expectedRevisionId\":\"$REV\",\"payload\":{\"amount\":1,\"unit\":\"h\"}}" >/dev/null
api POST /api/lasso/workflows/$ID/start '' >/dev/null
api POST /api/lasso/workflows/$ID/pause '{"queueing":true}' >/dev/null
$LOADGEN -url http://127.0.0.1:$PORT -key "$KEY" -endpoint events -c 32 -n $HELD >/dev/null
sleep 3
Q=$(sqlite3 $D/lasso.db "select count(*) from workflow_runs where status='queued'" 2>/dev/null || echo "?")
# measured window: paced events for 12 s; resume 3 s in
$LOADGEN -url http://127.0.0.1:$PORT -key "$KEY" -endpoint events -c 64 -d 12s -rate 1500 > $D/lg.txt &
LG=$!
sleep 3
if [ "$RESUME" = yes ]; then s=$(date +%s.%N); api POST /api/lasso/workflows/$ID/resume '' >/dev/null; e=$(date +%s.%N); echo "resume call $(echo "$e - $s" | bc) s"; fi
wait $LG
echo "held=$Q $(grep -E 'successful|p50' $D/lg.txt | tr '\n' ' ')"

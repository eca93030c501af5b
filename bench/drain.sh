#!/usr/bin/env bash
# A clean drain under closed-loop load: `tutti serve` (demo_repository) with
# 8 gRPC and 8 HTTP keep-alive clients sending lenet5 requests one after
# another (bench/tools/drain_clients.py: each stops at its first answer that
# is not a result, as a client without retries does), sent SIGTERM 3 s in.
# Counts every client call's end per run: a result, a clean refusal
# (UNAVAILABLE; 503; a new connection refused after the server said
# Connection: close) or anything else (CANCELLED, a reset) — the last must
# be 0.
#   bench/drain.sh [RUNS] [--write-docs]
# (after scripts/build.sh and `tutti demo`; default 5 runs, about 15 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
RUNS=${1:-5}
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
{
echo "| run | gRPC results | gRPC UNAVAILABLE | gRPC other | HTTP results | HTTP 503 | HTTP new connection refused | HTTP other |"
echo "|---|---|---|---|---|---|---|---|"
for run in $(seq "$RUNS"); do
  build/bin/tutti serve --repo demo_repository --port 18600 --grpc-port 18601 > "$work/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do curl -sf localhost:18600/v2/health/ready > /dev/null && break; sleep 0.2; done
  /usr/bin/python3 bench/tools/drain_clients.py 18600 18601 8 10 > "$work/clients.txt" &
  clients=$!
  sleep 3
  kill -TERM "$server"
  wait "$server" || true
  server=
  wait "$clients"
  awk -v run="$run" '
    {for (i = 2; i <= NF; i++) {split($i, kv, "="); n[$1, kv[1]] += kv[2]; total[$1] += kv[2]}}
    END {
      g_other = total["grpc"] - n["grpc", "OK"] - n["grpc", "UNAVAILABLE"]
      h_other = total["http"] - n["http", "OK"] - n["http", "503"] - n["http", "ConnectionRefusedError"]
      printf "| %d | %d | %d | %d | %d | %d | %d | %d |\n", run, n["grpc", "OK"], n["grpc", "UNAVAILABLE"], g_other,
             n["http", "OK"], n["http", "503"], n["http", "ConnectionRefusedError"], h_other}' "$work/clients.txt"
done
} | tee "$work/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page drain "A clean drain" \
    "When a server is sent SIGTERM under closed-loop load on both protocols, does every client call end in a result or a clean refusal?" \
    "bench/drain.sh $RUNS --write-docs" \
    "\`tutti serve\` on demo_repository; 8 gRPC and 8 HTTP keep-alive Python clients (bench/tools/drain_clients.py) on the same 2 cores, each sending lenet5 requests back to back and stopping at its first answer that is not a result; SIGTERM 3 s in. The server stops accepting, answers every request it accepted, refuses calls (UNAVAILABLE, 503 with Connection: close) until none has come for 250 ms, then closes its listeners." \
    "$work/table.md"
fi

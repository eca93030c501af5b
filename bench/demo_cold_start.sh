#!/usr/bin/env bash
# No cold-start surprises: the demo repository (mlp, lenet5, resnet_small
# on the CPU torch executor) served with the default config, and loaded
# the moment the server says it is ready — one request at a time per model
# (closed loop, concurrency 1), 1,000 per model, the default 100 ms
# objective. A server that is ready has warmed every batch size it will
# run; none of these requests should be late or dropped. Each run is a
# fresh `tutti serve`. Printed per run: what the server counted (late,
# dropped) and what the client saw (bad, p99.9).
#   bench/demo_cold_start.sh [RUNS] [PER_MODEL]   (after scripts/build.sh; defaults 5 and 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
PER_MODEL=${2:-1000}
PORT=${PORT:-8095}
OUT=${OUT:-/tmp/tutti_demo_cold_start}
mkdir -p "$OUT"
build/bin/tutti demo --repo demo_repository > "$OUT/demo.log"  # trains and profiles only what is missing

printf "%-4s %8s %6s %8s %10s %10s\n" run answered late dropped client-bad p99.9-ms
for run in $(seq 1 "$RUNS"); do
  build/bin/tutti serve --repo demo_repository --port "$PORT" --grpc-port -1 > "$OUT/serve_$run.log" 2>&1 &
  SERVER=$!
  trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
  until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.02; done
  build/bin/tutti load --models mlp,lenet5,resnet_small --concurrency 1 --max-per-model "$PER_MODEL" \
    --duration-s 600 --warmup-s 0 --slo-ms 100 --port "$PORT" > "$OUT/load_$run.txt" 2>&1
  counts=$(curl -s "127.0.0.1:$PORT/metrics" | awk '/^tutti_requests_total/ {
      if ($1 ~ /outcome="(success|late)"/) answered += $2
      if ($1 ~ /outcome="late"/) late += $2
      if ($1 ~ /outcome="dropped"/) dropped += $2
    } END {printf "%d %d %d", answered, late, dropped}')
  read -r answered late dropped <<< "$counts"
  awk -v run="$run" -v a="$answered" -v l="$late" -v d="$dropped" '/^total/ {bad = $5; p = $9}
    END {printf "%-4s %8d %6d %8d %10s %10s\n", run, a, l, d, bad, p}' "$OUT/load_$run.txt"
  kill -TERM $SERVER; wait $SERVER 2>/dev/null || true
  trap - EXIT
done

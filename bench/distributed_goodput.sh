#!/usr/bin/env bash
# Distributed vs embedded end-to-end goodput: emulated ResNet50 (A100
# profile) on 8 emulated GPUs, SLO 20 ms, Poisson arrivals, deferred
# scheduling with early drop (bench/serve_resnet50_a100_8gpu.yaml).
#   embedded:    one `tutti serve` process
#   distributed: `tutti cluster` — etcd, 1 scheduler, 1 frontend and 8
#                backend processes, over Tutti's wire (Unix sockets)
# `tutti load --find-goodput` searches each one's goodput (p99 <= SLO); both
# and their ratio are printed. Everything shares this machine's cores.
#   bench/distributed_goodput.sh        (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8030}
PROBE_S=${PROBE_S:-5}
CONFIG=bench/serve_resnet50_a100_8gpu.yaml
OUT=${OUT:-/tmp/tutti_distributed_goodput}
mkdir -p "$OUT"

search() {  # $1: label, $2: port
  build/bin/tutti load --models resnet50 --rate 4000 --slo-ms 20 --duration-s "$PROBE_S" \
    --warmup-s 1 --find-goodput --tolerance 0.02 --port "$2" | tee "$OUT/$1.txt"
}
wait_ready() { until curl -sf "127.0.0.1:$1/v2/health/ready" > /dev/null; do sleep 0.2; done; }

echo "== embedded: tutti serve"
build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" --grpc-port 0 \
  > "$OUT/serve.log" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
wait_ready "$PORT"
search embedded "$PORT"
kill -TERM $PID; wait $PID || true

echo "== distributed: tutti cluster (etcd, 1 scheduler, 1 frontend, 8 backends)"
build/bin/tutti cluster --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" \
  > "$OUT/cluster.log" 2>&1 &
PID=$!
wait_ready "$PORT"
search distributed "$PORT"
kill -TERM $PID; wait $PID || true
trap - EXIT

embedded=$(awk '/^goodput:/ {print $2}' "$OUT/embedded.txt")
distributed=$(awk '/^goodput:/ {print $2}' "$OUT/distributed.txt")
awk -v d="$distributed" -v e="$embedded" \
  'BEGIN {printf "distributed / embedded goodput: %.1f / %.1f = %.1f%%\n", d, e, 100 * d / e}'

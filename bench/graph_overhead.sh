#!/usr/bin/env bash
# What a two-step graph costs: the graph zero_pair (zero_a, then zero_b on
# its output; zero-cost emulated models, l(b) = 1 us, eager scheduling)
# against its two models called one after the other by a client, at a
# light load (RATE r/s, default 500, Poisson, DURATION_S each). A client
# calling them back to back waits two round trips: the sum of the two
# models' latencies; the graph's answer takes one round trip and two
# schedulings. Printed: p50 and p99 of each (client-observed, server and
# client sharing the cores) and the graph's p50 against the sum.
#   bench/graph_overhead.sh [RATE] [DURATION_S]     (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-500}
DURATION=${2:-6}
PORT=${PORT:-8012}
build/bin/tutti serve --repo bench/graph_repository --config bench/serve_graph.yaml --port "$PORT" \
  --grpc-port -1 > /tmp/tutti_graph_overhead_serve.log 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
p() {  # model: "p50 p99" in ms
  build/bin/tutti load --models "$1" --rate "$RATE" --slo-ms 20 --duration-s "$DURATION" --warmup-s 1 \
    --port "$PORT" --seed 3 2>/dev/null | awk -v m="$1" '$1 == m {print $6, $8; exit}'
}
read -r a50 a99 < <(p zero_a)
read -r b50 b99 < <(p zero_b)
read -r g50 g99 < <(p zero_pair)
printf "%-28s %8s %8s\n" "" "p50 ms" "p99 ms"
printf "%-28s %8s %8s\n" "zero_a" "$a50" "$a99" "zero_b" "$b50" "$b99" "zero_pair (graph)" "$g50" "$g99"
awk -v a="$a50" -v b="$b50" -v g="$g50" 'BEGIN {
  printf "back to back (zero_a + zero_b p50s): %.3f ms; the graph: %.3f ms (%+.3f ms)\n", a + b, g, g - a - b }'

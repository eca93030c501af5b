#!/usr/bin/env bash
# The demo's graphs end to end: `tutti demo` trains the models of
# fashion_router (routed) and fashion_ensemble (merged) and records each
# graph's accuracy on the 10,000 Fashion-MNIST test images, measured
# offline (the saved models run directly). Then `tutti serve` serves the
# demo repository and `tutti load` sends every test image once to each
# graph over KServe v2 HTTP and then gRPC (closed loop, CONCURRENCY in
# flight, the graphs' 20 ms objective) and scores the answers. Exits 1
# unless every run answered all 10,000 and its accuracy equals the
# offline one.
#   bench/graph_accuracy.sh [CONCURRENCY]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
CONCURRENCY=${1:-32}
PORT=${PORT:-8014}
GRPC_PORT=${GRPC_PORT:-8015}
build/bin/tutti demo --repo demo_repository > /dev/null
build/bin/tutti serve --repo demo_repository --port "$PORT" --grpc-port "$GRPC_PORT" > /tmp/tutti_graph_accuracy.log 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
status=0
for graph in fashion_router fashion_ensemble; do
offline=$(awk '$1 == "accuracy:" {print $2}' "demo_repository/$graph/1/config.yaml")
for protocol in http grpc; do
  port=$PORT
  [[ $protocol == grpc ]] && port=$GRPC_PORT
  out=$(build/bin/tutti load --models "$graph" --protocol "$protocol" --port "$port" --max-per-model 10000 \
    --concurrency "$CONCURRENCY" --warmup-s 0 --duration-s 600 --slo-ms 20 --csv /tmp/tutti_graph_accuracy.csv 2>&1)
  echo "$out" | grep -E "^(model|$graph|    )"
  read -r labelled accuracy < <(awk -F, -v g="$graph" 'NR > 1 && $1 == g {print $(NF - 5), $(NF - 4); exit}' \
    /tmp/tutti_graph_accuracy.csv)
  verdict=$(awk -v a="$accuracy" -v o="$offline" -v n="$labelled" \
    'BEGIN {print (n == 10000 && sprintf("%.4f", a) == sprintf("%.4f", o)) ? "equal" : "DIFFERENT"}')
  echo "$graph over $protocol: $labelled of 10000 answered and scored, accuracy $accuracy; offline $offline: $verdict"
  [[ $verdict == equal ]] || status=1
done
done
exit $status

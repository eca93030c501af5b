#!/usr/bin/env bash
# INFaaS's model-less serving on the real server: `tutti serve` with the
# demo repository's generated variants (bench/serve_model_less.yaml: task
# fashion-mnist, accuracy >= 0.9 within 10 ms; lenet5 really runs on the CPU
# variant, the accelerators are emulated) and `tutti load` sending model-less
# queries (task:fashion-mnist@0.9, the test images' labels kept) under a load
# that rises and falls (SCHEDULE, over DURATION seconds; HTTP). Once with
# Tutti choosing and scaling the variants, then with fixed variants scaled
# horizontally only: the most accurate model on the fastest hardware
# (resnet_small@v100, INFaaS's Clipper/SageMaker GPU baselines) and the
# cheapest variant that is accurate enough (lenet5@cpu). Prints per run the
# cost (tutti_model_less_cost_total: instance-seconds x cost), the queries
# late or dropped, p99, the accuracy the answers scored against the labels
# (answers of emulated variants have placeholder outputs: their variant's
# measured accuracy is what they deliver) and who served them.
# The rates this 2-core machine drives over HTTP are low for these small
# models: one CPU instance carries them (`tutti bench model-less` simulates
# the load at which the variants' trade-offs show).
#   bench/model_less_serving.sh       (after scripts/run.sh has built the demo repository)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8020}
SCHEDULE=${SCHEDULE:-0:100,6:400,12:1600,18:400,24:100}
DURATION=${DURATION:-30}
printf "%-28s %8s %8s %8s %9s  %s\n" run cost "bad %" "p99 ms" accuracy "served by"
for run in "tutti:" "fixed most accurate:resnet_small@v100" "fixed cheapest:lenet5@cpu"; do
  label=${run%%:*}
  variant=${run#*:}
  config=$(mktemp)
  cat bench/serve_model_less.yaml > "$config"
  [ -n "$variant" ] && echo "  variants: [$variant]" >> "$config"
  build/bin/tutti serve --repo demo_repository --config "$config" --port "$PORT" --grpc-port -1 > /dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do
    curl -sf "localhost:$PORT/v2/health/ready" > /dev/null && break
    sleep 0.2
  done
  out=$(build/bin/tutti load --port "$PORT" --models task:fashion-mnist@0.9 --schedule "$SCHEDULE" \
        --duration-s "$DURATION" --slo-ms 10 2>&1)
  cost=$(curl -s "localhost:$PORT/metrics" | awk '/^tutti_model_less_cost_total/ {print $2}')
  kill -TERM "$server"
  wait "$server" || true
  rm -f "$config"
  row=$(echo "$out" | grep '^task:fashion-mnist@0.9 ')
  served=$(echo "$out" | grep -o 'served by [^;]*' | head -1)
  printf "%-28s %8.0f %8s %8s %9s  %s\n" "$label" "$cost" "$(echo "$row" | awk '{print $5}')" \
    "$(echo "$row" | awk '{print $8}')" "$(echo "$row" | awk '{print $10}')" "${served#served by }"
done

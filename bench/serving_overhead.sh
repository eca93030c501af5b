#!/usr/bin/env bash
# What the frontend and the scheduler add: a zero-cost emulated model
# (l(b) = 1 us) behind `tutti serve` (eager policy, one emulated GPU).
# 1) latency at a light load (1,000 r/s): p50/p99 are the added latency of
#    HTTP parsing, scheduling, dispatch and the response, client included;
# 2) the highest rate sustained with p99 within the model's 20 ms objective.
# Server and load generator share the machine's cores.
# CONSOLE=1: a console client stays connected throughout (curl reading
# /console/events, the feed a browser's console page reads: the server does
# the same work for it, and no browser competes for the cores).
#   bench/serving_overhead.sh           (after scripts/build.sh)
#   CONSOLE=1 bench/serving_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8011}
build/bin/tutti serve --repo bench/emulated_repository \
  --config bench/serve_zero_cost.yaml --port "$PORT" --grpc-port 0 > /dev/null &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
if [ "${CONSOLE:-0}" = 1 ]; then
  curl -sN "127.0.0.1:$PORT/console/events" > "${CONSOLE_LOG:-/dev/null}" &
  CONSOLE_CLIENT=$!
  trap 'kill $CONSOLE_CLIENT 2>/dev/null; kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
  echo "== a console client is connected to /console/events"
fi

echo "== added latency at 1,000 requests/s"
build/bin/tutti load --models zero_cost --rate 1000 --slo-ms 20 --duration-s 6 --warmup-s 1 --port "$PORT"
echo "== maximum sustained rate (p99 <= 20 ms)"
build/bin/tutti load --models zero_cost --rate 10000 --slo-ms 20 --duration-s 4 --warmup-s 1 \
  --find-goodput --tolerance 0.03 --port "$PORT"

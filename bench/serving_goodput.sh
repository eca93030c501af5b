#!/usr/bin/env bash
# End-to-end goodput vs the simulator's prediction: emulated ResNet50 (A100
# profile) on 8 emulated GPUs, SLO 20 ms, Poisson arrivals, deferred
# scheduling with early drop. `tutti serve` and `tutti load --find-goodput`
# share this machine's cores (pinning each to one core of a 2-core machine
# measured worse); both numbers and their ratio are printed.
# Probes run back to back on one server, so each starts in the wake of
# the one before (an overload, during the search's first doublings): the
# first WARMUP_S seconds of a probe are not measured — the time the delay
# model takes to forget a previous probe's delays (its estimates follow the
# last 20,000 samples, about a second at these rates, and hold a rise for a
# second).
#   bench/serving_goodput.sh            (after scripts/build.sh)
#   HOG=1 bench/serving_goodput.sh      the same beside a background CPU hog
#                                       (stress-ng --cpu 1 --cpu-load 30)
# LOAD_FLAGS: more `tutti load` flags, e.g. --kernel-timestamps=false (time
# answers when the client has read them, its own waits included).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8010}
PROBE_S=${PROBE_S:-6}
WARMUP_S=${WARMUP_S:-2}
if [ -n "${HOG:-}" ]; then
  command -v stress-ng > /dev/null || { echo "HOG=1 needs stress-ng (scripts/setup.sh installs it)"; exit 1; }
  stress-ng --cpu 1 --cpu-load 30 --quiet &
  HOG_PID=$!
fi
build/bin/tutti serve --repo bench/emulated_repository \
  --config ${CONFIG:-bench/serve_resnet50_a100_8gpu.yaml} --port "$PORT" --grpc-port -1 > /dev/null &
SERVER=$!
trap 'kill -TERM $SERVER ${HOG_PID:-} 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done

sim=$(build/bin/tutti sim goodput bench/resnet50_a100_8gpu_slo20.yaml 2>/dev/null | awk '/^goodput:/ {print $2}')
echo "tutti sim goodput (same workload): $sim r/s"
build/bin/tutti load --models resnet50 --rate 8000 --slo-ms 20 --duration-s "$PROBE_S" \
  --warmup-s "$WARMUP_S" --find-goodput --tolerance 0.02 --port "$PORT" ${LOAD_FLAGS:-} | tee /tmp/tutti_serving_goodput.txt
load=$(awk '/^goodput:/ {print $2}' /tmp/tutti_serving_goodput.txt)
awk -v l="$load" -v s="$sim" 'BEGIN {printf "end-to-end / simulated goodput: %.1f / %.1f = %.1f%%\n", l, s, 100 * l / s}'

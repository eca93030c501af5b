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
# PAIRS=N: N pairs of runs, each pair one without and one with a console
# client, back to back (the order alternating from pair to pair, so that
# neither side always runs first); prints each run's figures, the medians
# and worst runs of each side, and the ratios pair by pair (this machine
# drifts ±10% within minutes: a pair shares its drift).
#   bench/serving_overhead.sh           (after scripts/build.sh)
#   CONSOLE=1 bench/serving_overhead.sh
#   PAIRS=7 bench/serving_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8011}
SERVER="" CONSOLE_CLIENT=""
stop() {
  [ -n "$CONSOLE_CLIENT" ] && kill "$CONSOLE_CLIENT" 2> /dev/null || true
  [ -n "$SERVER" ] && { kill -TERM "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; }
  SERVER="" CONSOLE_CLIENT=""
}
trap stop EXIT

one_run() {  # $1: 1 with a console client connected
  build/bin/tutti serve --repo bench/emulated_repository \
    --config bench/serve_zero_cost.yaml --port "$PORT" --grpc-port 0 > /dev/null 2>&1 &
  SERVER=$!
  until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
  if [ "$1" = 1 ]; then
    curl -sN "127.0.0.1:$PORT/console/events" > "${CONSOLE_LOG:-/dev/null}" &
    CONSOLE_CLIENT=$!
    echo "== a console client is connected to /console/events"
  fi
  echo "== added latency at 1,000 requests/s"
  build/bin/tutti load --models zero_cost --rate 1000 --slo-ms 20 --duration-s 6 --warmup-s 1 --port "$PORT"
  echo "== maximum sustained rate (p99 <= 20 ms)"
  build/bin/tutti load --models zero_cost --rate 10000 --slo-ms 20 --duration-s 4 --warmup-s 1 \
    --find-goodput --tolerance 0.03 --port "$PORT"
  stop
}

if [ -z "${PAIRS:-}" ]; then
  one_run "${CONSOLE:-0}"
  exit 0
fi

# "highest p50 p99": the goodput search's result and the light load's
# latency (its `total` row), from one run's output.
figures() {
  awk '/^== added latency/ {light = 1} /^== maximum/ {light = 0}
       light && /^total/ {p50 = $6; p99 = $8}
       /^goodput:/ {g = $2}
       END {print g, p50, p99}'
}
without=() with=() w50=() c50=() w99=() c99=()
echo "serving_overhead: $PAIRS pairs, without and with a console client, alternated"
for i in $(seq "$PAIRS"); do
  order=(0 1)
  [ $((i % 2)) = 0 ] && order=(1 0)
  for c in "${order[@]}"; do
    read -r g p50 p99 < <(one_run "$c" | figures)
    if [ "$c" = 1 ]; then with+=("$g") c50+=("$p50") c99+=("$p99"); else without+=("$g") w50+=("$p50") w99+=("$p99"); fi
    echo "  pair $i, $([ "$c" = 1 ] && echo "with a console   " || echo "without a console"): highest rate $g r/s; at 1,000 r/s p50 $p50 ms, p99 $p99 ms"
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
least() { printf '%s\n' "$@" | sort -g | head -1; }
most() { printf '%s\n' "$@" | sort -g | tail -1; }
echo "without a console: highest rate median $(median "${without[@]}") r/s (worst $(least "${without[@]}")); p50 median $(median "${w50[@]}") ms (worst $(most "${w50[@]}")), p99 median $(median "${w99[@]}") ms (worst $(most "${w99[@]}"))"
echo "with a console:    highest rate median $(median "${with[@]}") r/s (worst $(least "${with[@]}")); p50 median $(median "${c50[@]}") ms (worst $(most "${c50[@]}")), p99 median $(median "${c99[@]}") ms (worst $(most "${c99[@]}"))"
ratios=()
for i in "${!with[@]}"; do ratios+=("$(awk -v a="${without[$i]}" -v b="${with[$i]}" 'BEGIN {printf "%.4f", b / a}')"); done
awk -v a="$(median "${without[@]}")" -v b="$(median "${with[@]}")" -v m="$(median "${ratios[@]}")" -v w="$(least "${ratios[@]}")" \
  'BEGIN {printf "highest rate with / without: the medians %+.1f%%; pair by pair median %+.1f%%, worst %+.1f%% (goal: within 5%%)\n",
          100 * (b / a - 1), 100 * (m - 1), 100 * (w - 1)}'

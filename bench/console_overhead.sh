#!/usr/bin/env bash
# What an open console costs the serving path: `tutti serve` with the
# zero-cost emulated model (bench/serve_zero_cost.yaml) at a fixed rate,
# without and with a console client (curl reading /console/events, the feed
# a browser's page reads: the server does the same work for it, and no
# browser competes for the cores), in alternated pairs. Prints per run the
# server's CPU per answered request (all its threads, from
# /proc/<pid>/task/*/schedstat, over the load only) and, with the console,
# the feed thread's CPU per sample; then the medians and the worst runs, and
# the ratio pair by pair (this machine drifts ±10% within minutes).
# Server and load generator share the machine's cores.
#   bench/console_overhead.sh [PAIRS (5)] [RATE (10000)] [SECONDS (10)]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-5}
RATE=${2:-10000}
SECONDS_PER_RUN=${3:-10}
PORT=${PORT:-8013}
cpu_ns() {  # CPU of process $1 (every thread), or of its threads named $2
  local t=0 f
  for f in /proc/$1/task/*; do
    if [ -z "${2:-}" ] || [ "$(cat "$f/comm")" = "$2" ]; then t=$((t + $(awk '{print $1}' "$f/schedstat"))); fi
  done
  echo "$t"
}
answered() { curl -s "127.0.0.1:$PORT/metrics" | awk '/^tutti_requests_total/ && /outcome="(success|late)"/ {s+=$2} END {print s+0}'; }
SERVER="" CLIENT=""
stop() {
  [ -n "$CLIENT" ] && kill "$CLIENT" 2> /dev/null || true
  [ -n "$SERVER" ] && { kill -TERM "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; }
  SERVER="" CLIENT=""
}
trap stop EXIT
run() {  # $1: 0 without a console client, 1 with one
  build/bin/tutti serve --repo bench/emulated_repository --config bench/serve_zero_cost.yaml --port "$PORT" \
    --grpc-port -1 > /dev/null 2>&1 &
  SERVER=$!
  until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
  if [ "$1" = 1 ]; then
    curl -sN "127.0.0.1:$PORT/console/events" > /dev/null &
    CLIENT=$!
    sleep 1.5  # the first sample
  fi
  local a0 t0 f0 a1 t1 f1
  a0=$(answered); t0=$(cpu_ns "$SERVER"); f0=$(cpu_ns "$SERVER" tutti-console)
  build/bin/tutti load --models zero_cost --rate "$RATE" --slo-ms 20 --duration-s "$SECONDS_PER_RUN" --warmup-s 0 \
    --port "$PORT" > /dev/null 2>&1
  t1=$(cpu_ns "$SERVER"); f1=$(cpu_ns "$SERVER" tutti-console); a1=$(answered)
  echo "$(( (t1 - t0) / (a1 - a0) )) $(( (f1 - f0) / SECONDS_PER_RUN ))"
  stop
}
echo "server CPU per answered request at $RATE r/s, $SECONDS_PER_RUN s per run, $PAIRS pairs alternated"
without=() with=() feed=()
for i in $(seq "$PAIRS"); do
  read -r a _ < <(run 0)
  read -r b f < <(run 1)
  without+=("$a") with+=("$b") feed+=("$f")
  echo "  pair $i: without a console ${a} ns, with one ${b} ns (feed thread: ${f} ns per sample)"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
worst() { printf '%s\n' "$@" | sort -n | tail -1; }
mw=$(median "${without[@]}") mc=$(median "${with[@]}")
echo "without a console: median $mw ns per request (worst $(worst "${without[@]}"))"
echo "with a console:    median $mc ns per request (worst $(worst "${with[@]}"))"
echo "feed thread:       median $(median "${feed[@]}") ns per sample (worst $(worst "${feed[@]}"))"
awk -v a="$mw" -v b="$mc" 'BEGIN {printf "with / without, the medians: %+.1f%%\n", 100 * (b / a - 1)}'
# Pair by pair (each pair ran back to back, so drift of the machine cancels):
ratios=()
for i in "${!with[@]}"; do ratios+=("$(awk -v a="${without[$i]}" -v b="${with[$i]}" 'BEGIN {printf "%.4f", b / a}')"); done
awk -v m="$(median "${ratios[@]}")" -v w="$(worst "${ratios[@]}")" \
  'BEGIN {printf "with / without, pair by pair: median %+.1f%%, worst %+.1f%% (goal: within 5%%)\n", 100 * (m - 1), 100 * (w - 1)}'

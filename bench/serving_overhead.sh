#!/usr/bin/env bash
# What the frontend and the scheduler add: a zero-cost emulated model
# (l(b) = 1 us) behind `tutti serve` (eager policy, one emulated GPU).
# 1) latency at a light load (1,000 r/s): p50/p99 are the added latency of
#    HTTP parsing, scheduling, dispatch and the response, client included;
# 2) capacity: the rate the server sustains with 128 requests kept in
#    flight (closed loop; its p99 is printed and must stay within the
#    model's 20 ms objective): what one core of serving path answers;
# 3) SEARCH=1 (the default without PAIRS): the highest open-loop (Poisson)
#    rate with p99 within 20 ms, by `tutti load --find-goodput`. Near that
#    rate a zero-cost server sits on a cliff (a backlog either drains or
#    grows for the rest of the probe), so this figure moves ±10-25% from
#    run to run; capacity (2) measures the same limit without the cliff.
# Where the machine has 2 or more cores the server runs on core 0 and the
# clients (load generator, console client) on the others (PIN=0: no
# pinning), so that what the server can do is not mixed with what the
# load generator takes from it.
# CONSOLE=1: a console client stays connected throughout (curl reading
# /console/events, the feed a browser's console page reads: the server does
# the same work for it, and no browser competes for the cores).
# PAIRS=N: N pairs of runs, each pair one without and one with a console
# client, back to back (the order alternating from pair to pair, so that
# neither side always runs first); prints each run's figures, the medians
# and worst runs of each side, and the ratios pair by pair (this machine
# drifts ±10% within minutes: a pair shares its drift).
# WITH=trace: the "with" side traces instead (`--trace-ratio`, TRACE_RATIO,
# default 0.01, its spans to a file): what tracing costs.
# WITH=binary: the "with" side serves with the tutti binary WITH_BINARY (a
# build of other code; the load generator is always build/bin/tutti): what
# a change costs, pair by pair.
# WITH=shards: both sides serve two zero-cost models, each on an emulated
# GPU of its own (bench/serve_zero_cost_2groups.yaml), half the load each;
# the "with" side schedules them as two shards (`--scheduler-shards 2`).
# Shards need cores: the server is not pinned (PIN=0 unless set).
#   bench/serving_overhead.sh           (after scripts/build.sh)
#   CONSOLE=1 bench/serving_overhead.sh
#   PAIRS=7 bench/serving_overhead.sh   (SEARCH=1 adds the open-loop search)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8011}
[ "${WITH:-}" = shards ] && PIN=${PIN:-0}
SERVER_CPUS=any CLIENT_CPUS=any ON_SERVER=() ON_CLIENT=()  # command prefixes
if [ "${PIN:-1}" = 1 ] && command -v taskset > /dev/null && [ "$(nproc)" -ge 2 ]; then
  SERVER_CPUS=0 CLIENT_CPUS="1-$(($(nproc) - 1))"
  ON_SERVER=(taskset -c "$SERVER_CPUS") ON_CLIENT=(taskset -c "$CLIENT_CPUS")
fi
WITH=${WITH:-console}
case "$WITH" in
  console) WITH_NAME="a console" ;;
  trace) WITH_NAME="tracing at ${TRACE_RATIO:-0.01}" ;;
  binary)
    [ -x "${WITH_BINARY:-}" ] || { echo "WITH=binary needs WITH_BINARY, a tutti binary" >&2; exit 2; }
    WITH_NAME="$WITH_BINARY" ;;
  shards) WITH_NAME="two scheduler shards" ;;
  *) echo "WITH must be console, trace, binary or shards" >&2; exit 2 ;;
esac
TRACE_FILE=${TRACE_FILE:-/tmp/tutti_serving_overhead_spans.jsonl}
SERVER="" CONSOLE_CLIENT=""
stop() {
  [ -n "$CONSOLE_CLIENT" ] && kill "$CONSOLE_CLIENT" 2> /dev/null || true
  [ -n "$SERVER" ] && { kill -TERM "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; }
  SERVER="" CONSOLE_CLIENT=""
}
trap stop EXIT

one_run() {  # $1: 1 with a console client connected (WITH=trace: tracing); $2: 1 with the open-loop search
  local flags=() bin=build/bin/tutti config=bench/serve_zero_cost.yaml models=zero_cost
  if [ "$WITH" = shards ]; then
    config=bench/serve_zero_cost_2groups.yaml models=zero_cost,zero_cost_b
    [ "$1" = 1 ] && flags=(--scheduler-shards 2)
  fi
  [ "$1" = 1 ] && [ "$WITH" = binary ] && bin=$WITH_BINARY
  if [ "$1" = 1 ] && [ "$WITH" = trace ]; then
    rm -f "$TRACE_FILE"
    flags=(--trace-file "$TRACE_FILE" --trace-ratio "${TRACE_RATIO:-0.01}")
  fi
  "${ON_SERVER[@]}" "$bin" serve --repo bench/emulated_repository \
    --config "$config" --port "$PORT" --grpc-port 0 "${flags[@]}" > /dev/null 2>&1 &
  SERVER=$!
  until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
  echo "== server on CPUs $SERVER_CPUS, clients on CPUs $CLIENT_CPUS"
  [ "${#flags[@]}" -gt 0 ] && [ "$WITH" = trace ] && echo "== tracing ${TRACE_RATIO:-0.01} of requests to $TRACE_FILE"
  if [ "$1" = 1 ] && [ "$WITH" = console ]; then
    "${ON_CLIENT[@]}" curl -sN "127.0.0.1:$PORT/console/events" > "${CONSOLE_LOG:-/dev/null}" &
    CONSOLE_CLIENT=$!
    echo "== a console client is connected to /console/events"
  fi
  local load=("${ON_CLIENT[@]}" build/bin/tutti load --models "$models" --slo-ms 20 --warmup-s 1 --port "$PORT")
  echo "== added latency at 1,000 requests/s"
  "${load[@]}" --rate 1000 --duration-s 6
  echo "== capacity: 128 requests in flight"
  "${load[@]}" --concurrency 128 --duration-s 6
  if [ "$2" = 1 ]; then
    echo "== maximum sustained open-loop rate (p99 <= 20 ms)"
    "${load[@]}" --rate 10000 --duration-s 4 --find-goodput --tolerance 0.03
  fi
  stop
}

if [ -z "${PAIRS:-}" ]; then
  one_run "${CONSOLE:-$([ "$WITH" = trace ] && echo 1 || echo 0)}" "${SEARCH:-1}"
  exit 0
fi
SEARCH=${SEARCH:-0}

# "capacity capacity-p99 search p50 p99" from one run's output (search: -
# without it); the light load's and the capacity's figures from their
# `total` rows.
figures() {
  awk '/^== added latency/ {s = "light"} /^== capacity/ {s = "capacity"} /^== maximum/ {s = "search"}
       s == "light" && /^total/ {p50 = $6; p99 = $8}
       s == "capacity" && /^total/ {cap = $4; cap99 = $8}
       /^goodput:/ {g = $2}
       END {print cap, cap99, (g == "" ? "-" : g), p50, p99}'
}
declare -A v  # v[side,metric]: space-separated values, one per run
echo "serving_overhead: $PAIRS pairs, without and with $WITH_NAME, alternated; server on CPUs $SERVER_CPUS"
for i in $(seq "$PAIRS"); do
  order=(0 1)
  [ $((i % 2)) = 0 ] && order=(1 0)
  for c in "${order[@]}"; do
    read -r cap cap99 g p50 p99 < <(one_run "$c" "$SEARCH" | figures)
    for m in cap cap99 g p50 p99; do v[$c,$m]+="${!m} "; done
    echo "  pair $i, $([ "$c" = 1 ] && echo "with $WITH_NAME" || echo "without $WITH_NAME"):" \
      "capacity $cap r/s (p99 $cap99 ms); open-loop search $g r/s; at 1,000 r/s p50 $p50 ms, p99 $p99 ms"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
least() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
most() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }
for c in 0 1; do
  printf '%s capacity median %s r/s (worst %s; p99 median %s ms, worst %s); p50 at 1,000 r/s median %s ms (worst %s), p99 median %s ms (worst %s)' \
    "$([ "$c" = 1 ] && echo "with $WITH_NAME:" || echo "without $WITH_NAME:")" \
    "$(median <<< "${v[$c,cap]}")" "$(least <<< "${v[$c,cap]}")" "$(median <<< "${v[$c,cap99]}")" "$(most <<< "${v[$c,cap99]}")" \
    "$(median <<< "${v[$c,p50]}")" "$(most <<< "${v[$c,p50]}")" "$(median <<< "${v[$c,p99]}")" "$(most <<< "${v[$c,p99]}")"
  [ "$SEARCH" = 1 ] && printf '; open-loop search median %s r/s (worst %s)' "$(median <<< "${v[$c,g]}")" "$(least <<< "${v[$c,g]}")"
  echo
done
# with / without, as medians of each side and pair by pair.
compare() {  # $1: metric, $2: its name
  local -a a b
  read -ra a <<< "${v[0,$1]}"
  read -ra b <<< "${v[1,$1]}"
  local ratios=""
  for i in "${!a[@]}"; do ratios+="$(awk -v a="${a[$i]}" -v b="${b[$i]}" 'BEGIN {printf "%.4f", b / a}') "; done
  awk -v a="$(median <<< "${v[0,$1]}")" -v b="$(median <<< "${v[1,$1]}")" -v m="$(median <<< "$ratios")" \
    -v w="$(least <<< "$ratios")" -v name="$2" -v goal="$(case $WITH in trace) echo "(goal: within 2%)" ;; shards) ;; *) echo "(goal: within 5%)" ;; esac)" \
    'BEGIN {printf "%s with / without: the medians %+.1f%%; pair by pair median %+.1f%%, worst %+.1f%% %s\n",
            name, 100 * (b / a - 1), 100 * (m - 1), 100 * (w - 1), goal}'
}
compare cap "capacity"
[ "$SEARCH" = 1 ] && compare g "open-loop search"
exit 0

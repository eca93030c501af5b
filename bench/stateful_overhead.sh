#!/usr/bin/env bash
# What NSPB (and, as a control that must show, Remus) adds to a stateful
# graph's latency, measured so that this noisy 2-core machine can resolve a
# few tenths of a percent — HAMS reports 0.5–3.7% (DSN'20).
#
# Each run is `tutti bench stateful --side-by-side`: no replication and the
# mode under test served at the same time, each with executors, backup and
# 16 clients of its own at one offered load (THINK_US mean pause), so both
# share every moment of the machine's drift. A round runs each pair both
# ways round (none first, then the mode first) and takes the mean of the
# two differences in p50: which of the two ran first no longer counts. The
# same estimator on none beside none, twice a round, is the null: what
# this method reads when there is nothing to find.
#
# Prints each round's differences, then per mode the median of the rounds
# with a distribution-free ~90% interval of that median (order statistics),
# and the same for the throughput.
#   bench/stateful_overhead.sh [ROUNDS] [MODEL] [LINK_US] [THINK_US] [SECONDS]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-10}
MODEL=${2:-gru_pipeline}
LINK_US=${3:-25}
THINK_US=${4:-2000}
SECONDS_PER_RUN=${5:-3}
build/bin/tutti demo --repo demo_repository > /dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One side-by-side run: "p50_first p50_second rps_first rps_second".
pair() {
  build/bin/tutti bench stateful --model "$MODEL" --modes "$1" --side-by-side --duration-s "$SECONDS_PER_RUN" \
    --link-us "$LINK_US" --think-us "$THINK_US" 2> "$out/stderr" |
    awk 'NR == 2 {p = $3; r = $2} NR == 3 {print p, $3, r, $2}'
}
printf '%-6s %-6s %10s %10s\n' round mode 'p50 %' 'req/s %' >&2
for i in $(seq 1 "$ROUNDS"); do
  for mode in nspb remus null; do
    if [ "$mode" = null ]; then first=none,none; second=none,none; else first=none,$mode; second=$mode,none; fi
    read -r a_none a_mode a_rnone a_rmode < <(pair "$first")
    read -r b_mode b_none b_rmode b_rnone < <(pair "$second")
    # Under the null, "the mode" is the second of the first run and the
    # first of the second, as for the modes.
    awk -v i="$i" -v m="$mode" -v an="$a_none" -v am="$a_mode" -v bm="$b_mode" -v bn="$b_none" \
      -v arn="$a_rnone" -v arm="$a_rmode" -v brm="$b_rmode" -v brn="$b_rnone" 'BEGIN {
        p = 50 * ((am / an - 1) + (bm / bn - 1)); r = 50 * ((arm / arn - 1) + (brm / brn - 1))
        printf "%-6d %-6s %+10.2f %+10.2f\n", i, m, p, r }' | tee -a "$out/rounds" >&2
  done
done
# The median of a mode's rounds, and the order statistics around it that
# hold the true median with probability about 0.9 (k = ⌊(n − 1.645√n)/2⌋).
echo
echo "p50 and throughput of each mode against none beside it ($ROUNDS rounds, $MODEL, link ${LINK_US} us, think ${THINK_US} us):"
for mode in nspb remus null; do
  for col in 3 4; do
    grep " $mode " "$out/rounds" | awk -v c="$col" '{print $c}' | sort -g | awk -v m="$mode" -v c="$col" '
      {v[NR] = $1}
      END {
        n = NR; med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        k = int((n - 1.645 * sqrt(n)) / 2); if (k < 1) k = 1
        printf "%-6s %-7s median %+6.2f%%   ~90%% interval [%+.2f%%, %+.2f%%]   rounds %+.2f … %+.2f\n",
          m, (c == 3 ? "p50" : "req/s"), med, v[k], v[n - k + 1], v[1], v[n]
      }'
  done
done

#!/usr/bin/env bash
# What NSPB (and, as a control that must show, Remus) adds to a stateful
# graph's latency, measured so that this noisy 2-core machine can resolve a
# few tenths of a percent — HAMS reports 0.5–3.7% (DSN'20).
#
# Each run is `tutti bench stateful --side-by-side`: no replication and the
# mode under test served in one process, each with executors, backup and
# 16 clients of its own at one offered load (THINK_US mean pause; 0: each
# client sends as soon as it is answered, so that the throughput columns
# compare the modes at saturation, each serving alone in its turns). By
# default they take turns of TURN_MS (100 ms: `--turn-ms`), each stack's
# clients starting images only in its own turns, so that each serves
# nearly alone — its backup's work weighs on its own answers only — while
# both sample every part of the run's drift; TURN_MS = 0 serves them at
# the same time instead, sharing every moment (and each backup's work).
# Served at once, two identical stacks' p50s differed by ±15–30% in a run
# (which one the scheduler's and the kernel's luck favoured that run);
# taking turns, by about ±3%. A round runs each pair both ways round (none
# first, then the mode first) and takes the mean of the two differences in
# p50: which of the two went first no longer counts. The same estimator on
# none beside none, twice a round, is the null: what this method reads
# when there is nothing to find.
#
# Prints each round's differences, then per mode the median of the rounds
# with a distribution-free ~90% interval of that median (order statistics),
# and the same for the throughput and for the dispatch delay each stack's
# scheduler planned with (µs; `plan us` of the bench). That plan is a p99.9
# of measured delays, held for a second (delays/delay_model.h): two stacks'
# estimates differ by tens of µs from run to run. Until torch executors
# started batches when free (executors/executor.h) every step waited for
# it, so each µs of it moved the graph's p50 by about a µs per step; now it
# moves an answer only through the scheduler's decisions (a batch's size, a
# drop), and the fit below finds little slope. What sets it is counted too: each
# stack's share of hand-offs over 100 µs (`>100us %` of the bench), as the
# difference in percentage points and, over all rounds, as the ratio of
# the mode's share to none's. PLANNED_US > 0 fixes the plan at
# that delay in both stacks, so that their difference is the mode's own;
# with measured plans the script also fits each round's p50 difference to
# its plan difference, whose intercept is the difference at equal plans.
# ACCEL_US > 0 has the stateful step's batches take at least that long, as
# on an accelerator (`--accelerator-us`: emulated time over the real GRU's
# outputs and states) — the scale of HAMS's GPU models. MODES (in the
# environment; default "nspb remus null") picks what each round measures.
#   bench/stateful_overhead.sh [ROUNDS] [MODEL] [LINK_US] [THINK_US] [SECONDS] [PLANNED_US] [TURN_MS] [ACCEL_US]
#   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-10}
MODEL=${2:-gru_pipeline}
LINK_US=${3:-25}
THINK_US=${4:-2000}
SECONDS_PER_RUN=${5:-3}
PLANNED_US=${6:-0}
TURN_MS=${7:-100}
ACCEL_US=${8:-0}
MODES=${MODES:-nspb remus null}
build/bin/tutti demo --repo demo_repository > /dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One side-by-side run: "p50_first p50_second rps_first rps_second plan_first plan_second
# slow_first slow_second" (slow: the share of hand-offs over 100 µs, %).
pair() {
  build/bin/tutti bench stateful --model "$MODEL" --modes "$1" --side-by-side --duration-s "$SECONDS_PER_RUN" \
    --link-us "$LINK_US" --think-us "$THINK_US" --planned-dispatch-us "$PLANNED_US" --turn-ms "$TURN_MS" \
    --accelerator-us "$ACCEL_US" 2> "$out/stderr" |
    awk 'NR == 2 {p = $3; r = $2; q = $NF; s = $(NF - 1)} NR == 3 {print p, $3, r, $2, q, $NF, s, $(NF - 1)}'
}
printf '%-6s %-6s %10s %10s %10s %10s %10s %10s\n' round mode 'p50 %' 'req/s %' 'plan us' 'slow pp' 'slow none' 'slow mode' >&2
for i in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    if [ "$mode" = null ]; then first=none,none; second=none,none; else first=none,$mode; second=$mode,none; fi
    read -r a_none a_mode a_rnone a_rmode a_qnone a_qmode a_snone a_smode < <(pair "$first")
    read -r b_mode b_none b_rmode b_rnone b_qmode b_qnone b_smode b_snone < <(pair "$second")
    # Under the null, "the mode" is the second of the first run and the
    # first of the second, as for the modes.
    awk -v i="$i" -v m="$mode" -v an="$a_none" -v am="$a_mode" -v bm="$b_mode" -v bn="$b_none" \
      -v arn="$a_rnone" -v arm="$a_rmode" -v brm="$b_rmode" -v brn="$b_rnone" \
      -v aqn="$a_qnone" -v aqm="$a_qmode" -v bqm="$b_qmode" -v bqn="$b_qnone" \
      -v asn="$a_snone" -v asm="$a_smode" -v bsm="$b_smode" -v bsn="$b_snone" 'BEGIN {
        p = 50 * ((am / an - 1) + (bm / bn - 1)); r = 50 * ((arm / arn - 1) + (brm / brn - 1))
        q = ((aqm - aqn) + (bqm - bqn)) / 2; sn = (asn + bsn) / 2; sm = (asm + bsm) / 2
        printf "%-6d %-6s %+10.2f %+10.2f %+10.1f %+10.3f %10.3f %10.3f\n", i, m, p, r, q, sm - sn, sn, sm }' |
      tee -a "$out/rounds" >&2
  done
done
# The median of a mode's rounds, and the order statistics around it that
# hold the true median with probability about 0.9 (k = ⌊(n − 1.645√n)/2⌋).
echo
plan=measured; [ "$PLANNED_US" != 0 ] && plan="fixed at ${PLANNED_US} us"
turns="turns of ${TURN_MS} ms"; [ "$TURN_MS" = 0 ] && turns="at the same time"
accel=""; [ "$ACCEL_US" != 0 ] && accel=", the stateful step paced at ${ACCEL_US} us a batch"
echo "p50, throughput, planned dispatch delay and share of hand-offs over 100 us of each mode against none beside it ($ROUNDS rounds, $MODEL, link ${LINK_US} us, think ${THINK_US} us, plan $plan, $turns$accel):"
for mode in $MODES; do
  for col in 3 4 5 6; do
    grep " $mode " "$out/rounds" | awk -v c="$col" '{print $c}' | sort -g | awk -v m="$mode" -v c="$col" '
      {v[NR] = $1}
      END {
        n = NR; med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        k = int((n - 1.645 * sqrt(n)) / 2); if (k < 1) k = 1
        u = (c == 5) ? " us" : (c == 6) ? " pp" : "%"
        f = (c == 6) ? "%+.3f" : "%+.2f"  # slow: a few tenths of a percent
        printf "%-6s %-7s median " f "%s   ~90%% interval [" f "%s, " f "%s]   rounds " f " … " f "\n",
          m, (c == 3 ? "p50" : c == 4 ? "req/s" : c == 5 ? "plan" : "slow"), med, u, v[k], u, v[n - k + 1], u, v[1], v[n]
      }'
  done
done
# The slow hand-offs over all rounds: the mode's share over none's.
echo
echo "hand-offs over 100 us, the mode's share over none's beside it (each the mean over the rounds):"
for mode in $MODES; do
  grep " $mode " "$out/rounds" | awk -v m="$mode" '{sn += $7; sm += $8}
    END {if (sn > 0) printf "%-6s %.3f%% / %.3f%% = %.2fx\n", m, sm / NR, sn / NR, sm / sn; else printf "%-6s none slow\n", m}'
done
# With measured plans, each round's p50 difference against its plan
# difference, fitted robustly (Theil–Sen: the median of the slopes between
# every two rounds; the intercept the median of p50 − slope·plan): the
# intercept is the p50 difference at equal plans.
if [ "$PLANNED_US" = 0 ]; then
  echo
  echo "p50 difference against plan difference over the rounds (Theil–Sen):"
  median() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
  for mode in $MODES; do
    grep " $mode " "$out/rounds" | awk '{print $5, $3}' > "$out/xy"
    slope=$(awk '{x[NR] = $1; y[NR] = $2} END {for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++)
      if (x[j] != x[i]) print (y[j] - y[i]) / (x[j] - x[i])}' "$out/xy" | median)
    if [ -z "$slope" ]; then printf '%-6s too few rounds, or no spread in the plans\n' "$mode"; continue; fi
    at_equal=$(awk -v b="$slope" '{print $2 - b * $1}' "$out/xy" | median)
    awk -v m="$mode" -v a="$at_equal" -v b="$slope" '
      {n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2; syy += $2 * $2}
      END {
        d = (n * sxx - sx * sx) * (n * syy - sy * sy)
        printf "%-6s p50 %+.2f%% at equal plans, %+.3f%% per us of plan difference (correlation r = %.2f)\n",
          m, a, b, (d > 0 ? (n * sxy - sx * sy) / sqrt(d) : 0)
      }' "$out/xy"
  done
fi

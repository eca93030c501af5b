#!/usr/bin/env bash
# Stateful serving (HAMS) on this CPU with the demo's real stateful model,
# gru_rows (a GRU reading an image 4 rows per request of a sequence): RUNS
# runs of `tutti bench stateful` (16 closed-loop clients in-process, 5 s
# per mode, the eager policy, requests straight to the serving engine):
#   1. none, remus, nspb, checkpoint without failures, clients sending each
#      step as soon as the last is answered: throughput at saturation, and
#      what the replication costs;
#   2. the same with each client pausing THINK_US on average (exponential)
#      between an answer and its next request: latency at one offered load
#      for every mode (in a closed loop at saturation each mode runs at its
#      own load, and its p50 is just clients / throughput);
#   3. the same as 1 with the model's sums in a random order (--nondeterminism)
#      and the primary killed 2.5 s in: failover time, batches run again,
#      answers reading a state not descended from their predecessor's, and
#      whether every request was answered exactly once.
# Runs 1 and 2 measure the modes in mirrored order (none, remus, nspb,
# checkpoint, then back), 2.5 s each, and average each mode's two: this
# shared machine drifts by 10–20% within seconds, and a drift that is
# linear over a run then falls equally on every mode.
# Then the medians (worst run beside) of each column per mode. MODEL is
# gru_rows, or gru_pipeline: the demo's graph with gru_rows between two
# stateless steps (an input clamp, a softmax). LINK_US: the modelled link
# to the backup (replication.link_rtt_us: a message is at the backup this
# long after it is sent; 0: shared memory).
#   bench/stateful_serving.sh [RUNS] [MODEL] [LINK_US] [THINK_US]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
MODEL=${2:-gru_rows}
LINK_US=${3:-25}
THINK_US=${4:-1000}
build/bin/tutti demo --repo demo_repository > /dev/null
out=$(mktemp -d)
MIRRORED=none,remus,nspb,checkpoint,checkpoint,nspb,remus,none
# Each mode's rows of one run averaged, column by column, into one row (in
# the order the modes first came).
average() {
  awk '!($1 in n) {order[++k] = $1} {n[$1]++; for (c = 2; c <= NF; c++) sum[$1, c] += $c; nf[$1] = NF}
    END {for (i = 1; i <= k; i++) {m = order[i]; printf "%s", m; for (c = 2; c <= nf[m]; c++) printf " %.6g", sum[m, c] / n[m]; print ""}}'
}
for i in $(seq 1 "$RUNS"); do
  echo "run $i of $RUNS…" >&2
  build/bin/tutti bench stateful --model "$MODEL" --modes "$MIRRORED" --duration-s 2.5 --link-us "$LINK_US" |
    tail -n +2 | average >> "$out/steady"
  build/bin/tutti bench stateful --model "$MODEL" --modes "$MIRRORED" --duration-s 2.5 --link-us "$LINK_US" \
    --think-us "$THINK_US" | tail -n +2 | average >> "$out/load"
  build/bin/tutti bench stateful --model "$MODEL" --modes none,remus,nspb,checkpoint --duration-s 5 --link-us "$LINK_US" --kill-at-s 2.5 \
    --nondeterminism | tail -n +2 >> "$out/failover"
done
# Median and worst of column $2 for each mode ($1: "high" when larger is better).
summary() {
  local file=$1
  shift
  for mode in none remus nspb checkpoint; do
    printf '%-10s' "$mode"
    for spec in "$@"; do
      col=${spec%%:*}; better=${spec##*:}
      grep "^$mode " "$file" | awk -v c="$col" '{print $c}' | sort -g | awk -v b="$better" '
        {v[NR]=$1} END {m=v[int((NR+1)/2)]; w=(b=="high")?v[1]:v[NR]; printf "  %s (%s)", m, w}'
    done
    echo
  done
}
echo "steady state at saturation, median (worst) of $RUNS: req/s, p50 ms, p99 ms, state KB/s, proxy us/batch"
summary "$out/steady" 2:high 3:low 4:low 7:low 8:low
echo "steady state with ${THINK_US} us pauses (one offered load), median (worst) of $RUNS: req/s, p50 ms, p99 ms, held %, hold us, release us"
summary "$out/load" 2:high 3:low 4:low 9:low 10:low 11:low
# Each run measures the modes one after another, so the ratio of two modes
# within a run is less exposed to the machine's drift than two medians.
ratios() {
  local file=$1 col=$2
  awk -v c="$col" '$1 == "none" {n = $c} $1 == "nspb" || $1 == "remus" {r[$1] = r[$1] " " sprintf("%.3f", $c / n)}
    END {for (m in r) print m r[m]}' "$file" | sort | while read -r mode values; do
    printf '%-10s %s   median %s\n' "$mode" "$values" "$(echo $values | tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
  done
}
echo "per run, against none in the same run: throughput at saturation"
ratios "$out/steady" 2
echo "per run, against none in the same run: p50 at one load"
ratios "$out/load" 3
echo "failover with nondeterminism, median (worst) of $RUNS: failover ms, batches rerun, errors"
summary "$out/failover" 12:low 13:low 5:low
echo "inconsistent/audited per run:"
for mode in none remus nspb checkpoint; do
  printf '%-10s %s\n' "$mode" "$(grep "^$mode " "$out/failover" | awk '{printf "%s ", $14}')"
done
echo "runs in which every request was answered exactly once: $(awk '$15 == "yes"' "$out/failover" | wc -l) of $((RUNS * 4))"
rm -rf "$out"

#!/usr/bin/env bash
# The scheduler on several cores (issue 19 item 3): requests/s of real time
# that the scheduler alone handles with 100 models and 1,000 GPUs (A100 zoo,
# 400,000 requests/s of virtual time, 2^20 requests), as
#   one thread   one scheduler over the cluster in as many sub-clusters as
#                there are shards (the same problem the shards solve), and
#                over one sub-cluster (the README's single-thread figure);
#   sharded      ShardedScheduler, one shard per core, each on its own thread.
# RUNS rounds (default 5), each running every variant once, interleaved, so
# that a noisy neighbour hits all of them alike; prints each variant's median
# and worst (lowest) round, and the sharded/one-thread ratio of the medians
# and round by round. Run it on an otherwise idle machine: the sharded
# figure needs every core.
#   bench/scheduler_cores.sh [POLICY]   (after scripts/build.sh; default deferred)
set -euo pipefail
cd "$(dirname "$0")/.."
POLICY=${1:-deferred}
RUNS=${RUNS:-5}
SHARDS=${SHARDS:-$(nproc)}
bin=build/bench/scheduler_benchmark
[ -x "$bin" ] || { echo "scheduler_cores: $bin is missing; run scripts/build.sh first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

one="BM_Scheduler/$POLICY/100/1000/400000/1/real_time"
same="BM_Scheduler/$POLICY/100/1000/400000/$SHARDS/real_time"
sharded="BM_Sharded/$POLICY/100/1000/400000/$SHARDS/real_time"
for r in $(seq 1 "$RUNS"); do
  for name in "$one" "$same" "$sharded"; do
    "$bin" --benchmark_filter="^${name%/real_time}/" --benchmark_min_time=2 --benchmark_format=csv 2>/dev/null |
      awk -F, -v n="$name" '$1 == "\"" n "\"" { print $7 }' >> "$work/$(echo "$name" | tr / _)"
  done
  echo "round $r/$RUNS done" >&2
done

# median and minimum of a file of numbers, divided by $2
stats() {
  sort -g "$1" | awk -v d="$2" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f", m / d, v[1] / d }'
}
f_one=$work/$(echo "$one" | tr / _); f_same=$work/$(echo "$same" | tr / _); f_sharded=$work/$(echo "$sharded" | tr / _)
for f in "$f_one" "$f_same" "$f_sharded"; do
  [ "$(wc -l < "$f")" = "$RUNS" ] || { echo "scheduler_cores: a benchmark run printed no figure ($f)" >&2; exit 1; }
done
read -r m1 w1 <<< "$(stats "$f_one" 1e6)"
read -r ms ws <<< "$(stats "$f_same" 1e6)"
read -r mh wh <<< "$(stats "$f_sharded" 1e6)"
printf '%-44s %10s %10s\n' "$POLICY, 100 models, 1,000 GPUs (M requests/s)" median worst
printf '%-44s %10s %10s\n' "one thread, 1 sub-cluster" "$m1" "$w1"
printf '%-44s %10s %10s\n' "one thread, $SHARDS sub-clusters" "$ms" "$ws"
printf '%-44s %10s %10s\n' "sharded, $SHARDS shards on $SHARDS threads" "$mh" "$wh"
paste "$f_sharded" "$f_same" | awk '{ print $1 / $2 }' > "$work/pairs"
read -r mp wp <<< "$(stats "$work/pairs" 1)"
awk -v a="$mh" -v b="$ms" -v c="$m1" -v mp="$mp" -v wp="$wp" 'BEGIN {
  printf "sharded / one thread (same sub-clusters): %.2fx of medians, round by round median %.2fx, worst %.2fx\n", a / b, mp, wp
  printf "sharded / one thread (1 sub-cluster):     %.2fx of medians\n", a / c }'

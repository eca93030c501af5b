#!/usr/bin/env bash
# The scheduler on several cores in `tutti serve` (`scheduler_shards`,
# serving/sharded_core.h): one shard against two, on configs with two
# executor groups (two sub-clusters), the sides alternated round by round
# (this machine drifts within minutes: a pair shares its drift).
#   1. Capacity of the serving path: two zero-cost models, 128 requests in
#      flight each (bench/serving_overhead.sh WITH=shards), and the added
#      latency at 1,000 r/s.
#   2. Two emulated ResNet50s on 4 emulated A100s each
#      (bench/serve_resnet50_a100_2x4gpu.yaml): server CPU per answered
#      request at RATE r/s (bench/server_cpu.sh) and goodput (`tutti load
#      --find-goodput`, p99 within 20 ms).
# Medians of ROUNDS pairs [the worst]. Server and load generator share the
# machine's cores (not pinned: shards need cores).
#   bench/scheduler_shards.sh [ROUNDS] [--write-docs]   (default 5; after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
RATE=${RATE:-6000}
PORT=${PORT:-8042}
CONFIG=bench/serve_resnet50_a100_2x4gpu.yaml
OUT=${OUT:-/tmp/tutti_scheduler_shards}
rm -rf "$OUT" && mkdir -p "$OUT"
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2> /dev/null || true' EXIT

echo "== capacity: $ROUNDS pairs (bench/serving_overhead.sh WITH=shards)" >&2
PAIRS=$ROUNDS WITH=shards SEARCH=0 bench/serving_overhead.sh > "$OUT/overhead.txt" 2>&1
# "shards capacity p99-at-1000" per run.
awk '/^  pair / {s = /with two/ ? 2 : 1; c = $0; sub(/.*capacity /, "", c); sub(/ .*/, "", c)
                 p = $0; sub(/.*, p99 /, "", p); sub(/ ms.*/, "", p); print s, c, p}' "$OUT/overhead.txt" > "$OUT/capacity"

for r in $(seq "$ROUNDS"); do
  order=(1 2)
  [ $((r % 2)) = 0 ] && order=(2 1)
  for s in "${order[@]}"; do
    echo "== round $r: resnet50 x2, $s shard(s)" >&2
    SHARDS=$s CONFIG=$CONFIG MODELS=resnet50,resnet50_b PORT=$PORT bench/server_cpu.sh embedded "$RATE" 10 \
      > "$OUT/cpu_${s}_$r.txt" 2>&1
    cpu=$(sed -n 's/.*CPU-s, *\([0-9.]*\) us of server CPU.*/\1/p' "$OUT/cpu_${s}_$r.txt")
    bad=$(awk '/client: total/ {sub("%", "", $6); print $6}' "$OUT/cpu_${s}_$r.txt")
    build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --scheduler-shards "$s" \
      --port "$PORT" --grpc-port -1 > "$OUT/serve_${s}_$r.log" 2>&1 &
    SERVER=$!
    await_server "$PORT" "$SERVER" "$OUT/serve_${s}_$r.log"
    build/bin/tutti load --port "$PORT" --models resnet50,resnet50_b --rate 8000 --slo-ms 20 --duration-s 3 \
      --warmup-s 1 --find-goodput --tolerance 0.03 > "$OUT/goodput_${s}_$r.txt" 2>&1
    kill -TERM "$SERVER"; wait "$SERVER" || true; SERVER=
    echo "$s $cpu $bad $(awk '/^goodput:/ {print $2}' "$OUT/goodput_${s}_$r.txt")" >> "$OUT/resnet"
  done
done

# stat FILE SHARDS COLUMN HIGH: "median [worst]" of one side (HIGH 1: the highest is the worst).
stat() {
  awk -v s="$2" '$1 == s' "$1" | awk -v c="$3" -v h="$4" "$COLUMN_STATS_AWK"'
    {for (i = 1; i <= NF; i++) col[NR, i] = $i}
    END {printf "%s [%s]", med(c), worst(c, h)}'
}
# ratio FILE COLUMN HIGH: two shards / one, pair by pair: "median [worst]" as a change in %.
ratio() {
  paste <(awk '$1 == 1' "$1") <(awk '$1 == 2' "$1") | awk -v c="$2" -v n="$(awk 'NR == 1 {print NF}' "$1")" \
    -v h="$3" "$COLUMN_STATS_AWK"'
    {col[NR, 1] = 100 * ($(n + c) / $c - 1)}
    END {printf "%+.1f%% [%+.1f%%]", med(1), worst(1, h)}'
}
{
  echo "| measure | 1 shard | 2 shards | 2 shards against 1, pair by pair |"
  echo "|---|---|---|---|"
  echo "| capacity, two zero-cost models, 128 in flight each (r/s) | $(stat "$OUT/capacity" 1 2 0) | $(stat "$OUT/capacity" 2 2 0) | $(ratio "$OUT/capacity" 2 0) |"
  echo "| p99 at 1,000 r/s, zero-cost models (ms) | $(stat "$OUT/capacity" 1 3 1) | $(stat "$OUT/capacity" 2 3 1) | $(ratio "$OUT/capacity" 3 1) |"
  echo "| server CPU per answered request, ResNet50 x2 at $RATE r/s (µs) | $(stat "$OUT/resnet" 1 2 1) | $(stat "$OUT/resnet" 2 2 1) | $(ratio "$OUT/resnet" 2 1) |"
  echo "| bad at $RATE r/s, ResNet50 x2 (%) | $(stat "$OUT/resnet" 1 3 1) | $(stat "$OUT/resnet" 2 3 1) | – |"
  echo "| goodput, ResNet50 x2 (r/s, p99 within 20 ms) | $(stat "$OUT/resnet" 1 4 0) | $(stat "$OUT/resnet" 2 4 0) | $(ratio "$OUT/resnet" 4 0) |"
} | tee "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page scheduler_shards "The scheduler on several cores in tutti serve" \
    "Does splitting the scheduler into shards of whole sub-clusters (\`scheduler_shards: 2\`) make \`tutti serve\` answer more, or cost more CPU per request?" \
    "bench/scheduler_shards.sh --write-docs" \
    "Both sides serve the same two-group configs; the second runs \`--scheduler-shards 2\`. Capacity: bench/serving_overhead.sh WITH=shards (two zero-cost emulated models on an emulated GPU each, bench/serve_zero_cost_2groups.yaml, 2 I/O threads; 128 requests in flight per model, 6 s; then 1,000 r/s Poisson for the added latency). ResNet50 x2: bench/serve_resnet50_a100_2x4gpu.yaml (two emulated ResNet50s, 4 emulated A100s each, 20 ms objective, 2 I/O threads): bench/server_cpu.sh at $RATE r/s for 10 s (user + system CPU of the server over the run, per answered request; the load generator not counted), then \`tutti load --find-goodput\` (3 s probes). The sides alternate round by round; server and load generator share this machine's 2 cores, nothing else running. Medians of $ROUNDS runs [the worst]; pair by pair: the median of the $ROUNDS ratios [the worst]." \
    "$OUT/table.md"
fi

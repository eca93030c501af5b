#!/usr/bin/env bash
# More models than memory, on the real clock: MODELS (default 1,000)
# versions of emulated ResNet50 (A100 profile; 25.6 M parameters, 102 MB of
# weights each) on 2 emulated executors whose memory holds 10% of them, the
# `loads` policy planning loads at 12 GB/s (PCIe 3), under a Zipf load
# (exponent 1) from `tutti load` at RATE requests/s due in 100 ms. The same
# run with every model resident (no memory budget, the same policy) beside
# it. Per run: the bad rate and p99 the client saw, and the loads per
# second the server made (tutti_weights_loads_total). Server on CPU 0,
# client on CPU 1; medians over ROUNDS rounds, the worst in brackets.
#   bench/many_models.sh [ROUNDS] [DURATION_S] [--write-docs]
# (defaults 5 and 20; after scripts/build.sh; MODELS, RATE override).
# --write-docs writes docs/benchmarks/many_models.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
DURATION=${2:-20}
MODELS=${MODELS:-1000}
RATE=${RATE:-200}
PORT=${PORT:-8079}
OUT=${OUT:-/tmp/tutti_many_models}
rm -rf "$OUT" && mkdir -p "$OUT/repo"
SERVER_CPUS=() CLIENT_CPUS=()
if [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); fi

# The versions: bench/emulated_repository/resnet50 with a parameter count
# (its weights' size) and a name each, one level of priority.
for i in $(seq 1 "$MODELS"); do
  mkdir -p "$OUT/repo/m$i/1"
  sed -e "s/^name: resnet50/name: m$i/" -e '/priority_levels\|^# Two priority\|^# level 2/d' \
    -e 's/^max_batch_size: 64/max_batch_size: 64\nparameters: 25557032/' \
    bench/emulated_repository/resnet50/1/config.yaml > "$OUT/repo/m$i/1/config.yaml"
done
models=$(seq -s, -f "m%g" 1 "$MODELS")
budget_gb=$(awk -v n="$MODELS" 'BEGIN {printf "%.3f", 0.10 * n * 25557032 * 4 / 1e9 / 2}')
echo "policy: loads
executors: [{kind: emulated, count: 2, profile: a100, models: [$models], memory_gb: $budget_gb, load_gb_per_s: 12}]" \
  > "$OUT/budget.yaml"
echo "policy: loads
executors: [{kind: emulated, count: 2, profile: a100, models: [$models]}]" > "$OUT/resident.yaml"

SERVER=
stop_server() { if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2> /dev/null; wait "$SERVER" 2> /dev/null || true; fi; SERVER=; }
trap stop_server EXIT
loads() { curl -sf "127.0.0.1:$PORT/metrics" | awk '/^tutti_weights_loads_total/ {n = $2} END {print n + 0}'; }

for setup in budget resident; do
  for r in $(seq "$ROUNDS"); do
    echo "$setup: round $r of $ROUNDS" >&2
    # A fresh server each round: every run starts with empty memories.
    "${SERVER_CPUS[@]}" build/bin/tutti serve --repo "$OUT/repo" --config "$OUT/$setup.yaml" --port "$PORT" \
      --grpc-port -1 > "$OUT/server_${setup}_$r.log" 2>&1 &
    SERVER=$!
    await_server "$PORT" "$SERVER" "$OUT/server_${setup}_$r.log"
    "${CLIENT_CPUS[@]}" build/bin/tutti load --models "$models" --zipf 1 --rate "$RATE" --slo-ms 100 \
      --duration-s "$DURATION" --warmup-s 5 --port "$PORT" --seed "$r" > "$OUT/${setup}_$r.txt" 2>&1 || true
    n=$(loads)
    # bad %, p99 ms, loads/s (the whole run, warm-up included)
    awk -v n="$n" -v d="$DURATION" '$1 == "total" {sub("%", "", $5); printf "%s %s %.1f\n", $5, $8, n / d}' \
      "$OUT/${setup}_$r.txt" > "$OUT/${setup}_$r.row"
    stop_server
  done
done

row() {  # setup label
  cat "$OUT/$1"_*.row | awk "$COLUMN_STATS_AWK"'{col[NR, 1] = $1; col[NR, 2] = $2; col[NR, 3] = $3}
    END {printf "| %s | %.3f%% [%.3f%%] | %.2f [%.2f] | %.1f [%.1f] |\n", label, med(1), worst(1, 1), med(2), worst(2, 1),
                med(3), worst(3, 1)}' label="$2"
}
{
  echo "| setup | bad (client) | p99 ms (client) | loads/s (server) |"
  echo "|---|---|---|---|"
  row budget "$MODELS models, memory for 10% ($budget_gb GB per executor)"
  row resident "$MODELS models, every one resident"
} | tee "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page many_models "More models than memory, on the real clock" \
    "With 1,000 models and memory for 10% of them, what do the client's bad rate and p99 cost against every model resident, and how many loads does the server make?" \
    "bench/many_models.sh --write-docs" \
    "$MODELS versions of emulated ResNet50 (A100 profile: 5.4 ms at batch 1; 102 MB of weights each) on 2 emulated executors, \`tutti serve\` with \`policy: loads\` and \`memory_gb\` holding 10% of them (loads at 12 GB/s: 8.5 ms each), against the same without a budget. \`tutti load\`: Poisson at $RATE r/s, Zipf popularity (exponent 1) over the models, objective 100 ms, ${DURATION} s of which the first 5 are not measured, a fresh server each run. Server on CPU 0, client on CPU 1; medians of $ROUNDS runs [the worst]. Emulated executors, not the CPU executor: they check the memory contract (a batch of a model they do not hold fails) but load no real weights." \
    "$OUT/table.md"
fi

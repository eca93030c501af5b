#!/usr/bin/env bash
# More models than memory, on the real clock: MODELS (default 1,000)
# models served with memory for 10% of them, the `loads` policy planning
# every load, under a Zipf load (exponent 1) from `tutti load` at RATE
# requests/s due in 100 ms; beside each, the same run with every model
# resident (no memory budget, the same policy). Two kinds of executor:
#   torch     MODELS fine-tuned heads of the demo lenet5 (`tutti train
#             --copies`: real weights on disk, 247 KB each) on one CPU
#             executor that reads them from disk as planned;
#   emulated  MODELS versions of emulated ResNet50 (A100 profile; 102 MB
#             each) on 2 emulated executors loading at 12 GB/s (PCIe 3).
# Per run: the bad rate and p99 the client saw, the loads per second the
# server made (tutti_weights_loads_total), the seconds it took to be
# ready, and how long listing the models and their statistics took. Server on CPU 0, client on CPU 1; medians over ROUNDS rounds, the
# worst in brackets.
#   bench/many_models.sh [ROUNDS] [DURATION_S] [--write-docs]
# (defaults 5 and 20; after scripts/build.sh; MODELS, RATE, KINDS="torch
# emulated" override). --write-docs writes docs/benchmarks/many_models.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
DURATION=${2:-20}
MODELS=${MODELS:-1000}
RATE=${RATE:-200}
KINDS=${KINDS:-torch emulated}
PORT=${PORT:-8079}
OUT=${OUT:-/tmp/tutti_many_models}
rm -rf "$OUT" && mkdir -p "$OUT"
SERVER_CPUS=() CLIENT_CPUS=()
if [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); fi
models=$(seq -s, -f "m_%04g" 1 "$MODELS")
budget() {  # PARAMETERS EXECUTORS: GB per executor that hold 10% of the models
  awk -v n="$MODELS" -v p="$1" -v e="$2" 'BEGIN {printf "%.4f", 0.10 * n * p * 4 / 1e9 / e}'
}

for kind in $KINDS; do
  mkdir -p "$OUT/$kind"
  if [ "$kind" = torch ]; then
    # The copies: the demo lenet5's last layer fine-tuned on 1,000 images
    # each (its own slice and seed),
    # each, named m_0001 …; kept in CACHE for the same lenet5 and count.
    build/bin/tutti demo --repo demo_repository > "$OUT/demo.log" 2>&1
    cache=${CACHE:-/tmp/tutti_many_models_heads}
    key="$MODELS $(sha256sum demo_repository/lenet5/1/model.pt | cut -d' ' -f1)"
    if [ "$(cat "$cache/key" 2> /dev/null)" != "$key" ]; then
      rm -rf "$cache" && mkdir -p "$cache/repo" && cp -r demo_repository/lenet5 "$cache/repo/"
      echo "training $MODELS fine-tuned heads of lenet5 into $cache" >&2
      "${SERVER_CPUS[@]}" build/bin/tutti train --arch lenet5 --repo "$cache/repo" --init-from lenet5 \
        --last-stage-only --copies "$MODELS" --name m --limit 1000 --epochs 1 --test-limit 1000 --threads 1 \
        > "$cache/train.log" 2>&1
      rm -rf "$cache/repo/lenet5"
      echo "$key" > "$cache/key"
    fi
    ln -s "$cache/repo" "$OUT/torch/repo"
    gb=$(budget 61706 1)
    group="{kind: torch, count: 1, models: [$models]"
  else
    # The versions: bench/emulated_repository/resnet50 with a parameter
    # count (its weights' size) and a name each, one level of priority.
    for i in $(seq -f "%04g" 1 "$MODELS"); do
      mkdir -p "$OUT/emulated/repo/m_$i/1"
      sed -e "s/^name: resnet50/name: m_$i/" -e '/priority_levels\|^# Two priority\|^# level 2/d' \
        -e 's/^max_batch_size: 64/max_batch_size: 64\nparameters: 25557032/' \
        bench/emulated_repository/resnet50/1/config.yaml > "$OUT/emulated/repo/m_$i/1/config.yaml"
    done
    gb=$(budget 25557032 2)
    group="{kind: emulated, count: 2, profile: a100, models: [$models]"
    gb="$gb, load_gb_per_s: 12"
  fi
  echo "${gb%%,*}" > "$OUT/$kind/gb"
  # Resident: each model its own, as under the budget (no prefix batching
  # of the fine-tuned heads).
  printf 'policy: loads\nprefix_batching: false\nexecutors: [%s, memory_gb: %s}]\n' \
    "$group" "$gb" > "$OUT/$kind/budget.yaml"
  printf 'policy: loads\nprefix_batching: false\nexecutors: [%s}]\n' "$group" > "$OUT/$kind/resident.yaml"
done

SERVER=
stop_server() { if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2> /dev/null; wait "$SERVER" 2> /dev/null || true; fi; SERVER=; }
trap stop_server EXIT
loads() { curl -sf "127.0.0.1:$PORT/metrics" | awk '/^tutti_weights_loads_total/ {n = $2} END {print n + 0}'; }

for kind in $KINDS; do
  for setup in budget resident; do
    for r in $(seq "$ROUNDS"); do
      echo "$kind, $setup: round $r of $ROUNDS" >&2
      run=$OUT/$kind/${setup}_$r
      # A fresh server each round: every run starts with empty memories.
      start=$(date +%s.%N)
      "${SERVER_CPUS[@]}" build/bin/tutti serve --repo "$OUT/$kind/repo" --config "$OUT/$kind/$setup.yaml" \
        --port "$PORT" --grpc-port -1 > "$run.server.log" 2>&1 &
      SERVER=$!
      await_server "$PORT" "$SERVER" "$run.server.log"
      ready=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
      "${CLIENT_CPUS[@]}" build/bin/tutti load --models "$models" --zipf 1 --rate "$RATE" --slo-ms 100 \
        --duration-s "$DURATION" --warmup-s 5 --port "$PORT" --seed "$r" > "$run.txt" 2>&1 || true
      n=$(loads)
      # The listing and every model's statistics, the server idle again.
      index=$(curl -sf -o /dev/null -w '%{time_total}' -X POST "127.0.0.1:$PORT/v2/repository/index")
      stats=$(curl -sf -o /dev/null -w '%{time_total}' "127.0.0.1:$PORT/v2/models/stats")
      # bad %, p99 ms, loads/s (the whole run, warm-up included), ready s, index ms, stats ms
      awk -v n="$n" -v d="$DURATION" -v ready="$ready" -v index_s="$index" -v stats_s="$stats" \
        '$1 == "total" {sub("%", "", $5); printf "%s %s %.1f %s %.1f %.1f\n", $5, $8, n / d, ready, index_s * 1e3,
                        stats_s * 1e3}' "$run.txt" > "$run.row"
      stop_server
    done
  done
done

row() {  # kind setup label
  cat "$OUT/$1/$2"_*.row | awk "$COLUMN_STATS_AWK"'{for (c = 1; c <= 6; c++) col[NR, c] = $c}
    END {printf "| %s | %.3f%% [%.3f%%] | %.2f [%.2f] | %.1f [%.1f] | %.1f [%.1f] | %.1f [%.1f] | %.1f [%.1f] |\n",
                label, med(1), worst(1, 1), med(2), worst(2, 1), med(3), worst(3, 1), med(4), worst(4, 1),
                med(5), worst(5, 1), med(6), worst(6, 1)}' label="$3"
}
{
  echo "| setup | bad (client) | p99 ms (client) | loads/s (server) | ready in s | index ms | stats ms |"
  echo "|---|---|---|---|---|---|---|"
  for kind in $KINDS; do
    if [ "$kind" = torch ]; then what="fine-tuned lenet5 heads on 1 CPU executor"; else what="emulated ResNet50s on 2 emulated A100s"; fi
    row "$kind" budget "$MODELS $what, memory for 10% ($(cat "$OUT/$kind/gb") GB per executor)"
    row "$kind" resident "$MODELS $what, every one resident"
  done
} | tee "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page many_models "More models than memory, on the real clock" \
    "With 1,000 models and memory for 10% of them, what do the client's bad rate and p99 cost against every model resident, and how many loads does the server make?" \
    "bench/many_models.sh --write-docs" \
    "\`tutti serve\` with \`policy: loads\` and \`memory_gb\` holding 10% of the models, against the same without a budget (every model loaded at start-up), a fresh server each run. **CPU executor:** $MODELS copies of the demo lenet5 (\`tutti train --copies $MODELS --init-from lenet5 --last-stage-only\`: each its last layer fine-tuned on its own 1,000 images; 61,706 parameters, 247 KB on disk), one torch executor with one thread; each load reads the weights from disk (planned with the copy's measured \`load_ms\`, about 3 ms). **Emulated executors:** $MODELS versions of emulated ResNet50 (A100 profile: 5.4 ms at batch 1; 102 MB of weights each) on 2 emulated executors, loads at 12 GB/s (8.5 ms each); they check the memory contract (a batch of a model they do not hold fails) but load no real weights. \`tutti load\`: Poisson at $RATE r/s, Zipf popularity (exponent 1) over the models, objective 100 ms, ${DURATION} s of which the first 5 are not measured. Loads/s: the server's count over the whole run. Ready in s: from the server's start until \`/v2/health/ready\` answered (the budgeted servers load nothing at start-up). Index ms and stats ms: \`POST /v2/repository/index\` and \`GET /v2/models/stats\` (every model) after the load, as curl timed them. Server on CPU 0, client on CPU 1; medians of $ROUNDS runs [the worst]." \
    "$OUT/table.md"
fi

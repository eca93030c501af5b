#!/usr/bin/env bash
# INFaaS's model-less serving in distributed mode: `tutti cluster` with
# bench/cluster_model_less.yaml (the fashion-mnist variants on three
# declared, emulated hardware kinds, objective 20 ms) under a load of
# model-less queries that rises and falls (SCHEDULE over DURATION seconds,
# HTTP: `tutti load --models task:fashion-mnist@0.9`). Runs, alternated
# round by round:
#   tutti                the leader picks and scales the variants; the
#                        cluster starts a backend process per instance
#                        asked for and stops those released
#   fixed most accurate  resnet_small@large only, scaled horizontally
#   fixed cheapest       lenet5@small only (accurate enough), likewise
#   tutti, embedded      the first run's config on `tutti serve`, for reference
# Per run: the cost paid during the load (tutti_model_less_cost_total,
# instance-seconds x cost, read before and after), whether every request
# was answered (`tutti load` fails otherwise), the bad rate, p99, the
# backend processes started and stopped, and who served.
#   bench/model_less_cluster.sh [ROUNDS] [--write-docs]   (default 5; after scripts/run.sh built the demo repository)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
SCHEDULE=${SCHEDULE:-0:100,6:400,12:1600,18:400,24:100}
DURATION=${DURATION:-30}
PORT=${PORT:-8050}
OUT=${OUT:-/tmp/tutti_model_less_cluster}
rm -rf "$OUT" && mkdir -p "$OUT"
PID=""
trap '[ -n "$PID" ] && kill -TERM "$PID" 2> /dev/null || true' EXIT

cost() { curl -s "127.0.0.1:$PORT/metrics" | awk '/^tutti_model_less_cost_total / {print $2}'; }

RUNS=("tutti:cluster:" "fixed most accurate:cluster:resnet_small@large" "fixed cheapest:cluster:lenet5@small"
      "tutti, embedded:serve:")
for r in $(seq "$ROUNDS"); do
  order=(0 1 2 3)
  [ $((r % 2)) = 0 ] && order=(3 2 1 0)
  for i in "${order[@]}"; do
    IFS=: read -r label mode variant <<< "${RUNS[$i]}"
    echo "== round $r: $label" >&2
    config=$OUT/config_$i.yaml
    cp bench/cluster_model_less.yaml "$config"
    [ -n "$variant" ] && echo "  variants: [$variant]" >> "$config"
    log=$OUT/run_${i}_$r.log
    if [ "$mode" = cluster ]; then
      build/bin/tutti cluster --repo demo_repository --config "$config" --port "$PORT" > "$log" 2>&1 &
    else
      build/bin/tutti serve --repo demo_repository --config "$config" --port "$PORT" --grpc-port -1 > "$log" 2>&1 &
    fi
    PID=$!
    await_server "$PORT" "$PID" "$log"
    # The cluster is up once the leader's first variant backends are; the
    # frontend shows the cost once the leader has sent it.
    until { [ "$mode" = serve ] || grep -q "is up" "$log"; } && [ -n "$(cost)" ]; do
      kill -0 "$PID" 2> /dev/null || { cat "$log" >&2; exit 1; }
      sleep 0.2
    done
    before=$(cost)
    if build/bin/tutti load --port "$PORT" --models task:fashion-mnist@0.9 --schedule "$SCHEDULE" \
      --duration-s "$DURATION" --warmup-s 0 --slo-ms 20 --seed "$r" > "$OUT/load_${i}_$r.txt" 2>&1; then
      answered=yes
    else
      answered=no
    fi
    after=$(cost)
    kill -TERM "$PID"; wait "$PID" || true; PID=
    started=$({ grep -o "wanted: starting [0-9]*" "$log" || true; } | awk '{n += $3} END {print n + 0}')
    stopped=$(grep -c "autoscale provider: .*stopping spare" "$log" || true)
    served=$({ grep -o 'served by [^;]*' "$OUT/load_${i}_$r.txt" || true; } | head -1 | sed 's/^served by //; s/ /~/g')
    # "run cost bad% p99 answered started stopped served-by"
    awk -v i="$i" -v c="$(awk -v a="$after" -v b="$before" 'BEGIN {print a - b}')" -v ans="$answered" \
      -v s="$started" -v t="$stopped" -v by="${served:-none}" \
      '/^total/ {b = $5; sub("%", "", b); p = $8; if (p == "inf") p = 1e9; printf "%s %.1f %s %s %s %s %s %s\n", i, c, b, p, ans, s, t, by}' \
      "$OUT/load_${i}_$r.txt" >> "$OUT/runs"
    tail -1 "$OUT/runs" >&2
  done
done

# stat RUN COLUMN HIGH: "median [worst]" of one run's column (HIGH 1: the highest is the worst).
stat() {
  awk -v i="$1" '$1 == i' "$OUT/runs" | awk -v c="$2" -v h="$3" "$COLUMN_STATS_AWK"'
    {for (k = 1; k <= NF; k++) col[NR, k] = $k}
    END {m = med(c); w = worst(c, h); if (m >= 1e9) m = "dropped"; if (w >= 1e9) w = "dropped"
         printf "%s [%s]", m, w}'
}
median_cost() {  # RUN: the median of its runs' cost
  awk -v i="$1" '$1 == i' "$OUT/runs" | awk "$COLUMN_STATS_AWK"'{col[NR, 1] = $2} END {print med(1)}'
}
{
  echo "| run | cost during the load, median [worst] | cost against Tutti's median | bad %, median [worst] | p99 ms, median [worst] (dropped: more than 1% dropped) | every request answered | backends started / stopped, median | served by (first run) |"
  echo "|---|---|---|---|---|---|---|---|"
  base=$(median_cost 0)
  for i in 0 1 2 3; do
    IFS=: read -r label mode variant <<< "${RUNS[$i]}"
    all=$(awk -v i="$i" '$1 == i && $5 != "yes" {n++} END {print n ? "**no** (" n " runs)" : "yes, every run"}' "$OUT/runs")
    ratio=$(awk -v m="$(median_cost "$i")" -v b="$base" 'BEGIN {printf "%.2fx", m / b}')
    moves=$(awk -v i="$i" '$1 == i' "$OUT/runs" | awk "$COLUMN_STATS_AWK"'{col[NR, 1] = $6; col[NR, 2] = $7}
      END {printf "%s / %s", med(1), med(2)}')
    [ "$mode" = serve ] && moves="– (executors, in one process)"
    by=$(awk -v i="$i" '$1 == i {print $8; exit}' "$OUT/runs" | tr '~' ' ')
    echo "| $label | $(stat "$i" 2 1) | $ratio | $(stat "$i" 3 1) | $(stat "$i" 4 1) | $all | $moves | $by |"
  done
} | tee "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page model_less_cluster "INFaaS: model-less serving in distributed mode" \
    "Does \`tutti cluster\` serve model-less requests with backend processes started and stopped as the leader scales the variants, answer every request, and cost less than fixed variants?" \
    "bench/model_less_cluster.sh --write-docs" \
    "\`tutti cluster\` (1 etcd, 1 scheduler, 1 frontend, the demo repository's registered models on their own backends, and a backend process per variant instance) with bench/cluster_model_less.yaml: the fashion-mnist variants generated on three declared, emulated hardware kinds (small: about 250 queries/s per instance within the 20 ms objective, cost 1; medium: about 3,000, cost 3; large: cost 16). \`tutti load --models task:fashion-mnist@0.9 --schedule $SCHEDULE --duration-s $DURATION\` (Poisson, HTTP, objective 20 ms). Fixed baselines: the same config with \`variants:\` one variant (INFaaS's SM+), scaled horizontally. Cost: tutti_model_less_cost_total read from the frontend's /metrics before and after the load. Backends started and stopped: the cluster's provider log. Runs alternate round by round; everything shares this machine's 2 cores, nothing else running. Medians of $ROUNDS runs [the worst]." \
    "$OUT/table.md"
fi

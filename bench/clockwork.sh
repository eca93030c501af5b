#!/usr/bin/env bash
# Clockwork §6.2's shape, simulated: 3,600 ResNet50-sized models (100 MB)
# on one 32 GB GPU, a 100 ms objective, Zipf popularity
# (bench/clockwork_6_2.yaml), at several total rates, under four ways of
# serving more models than memory holds: Tutti's planned loads with
# cost-aware eviction, planned loads with LRU, LRU loading on demand, and
# Triton-style load on first request. Per cell: the share of requests
# answered within the objective and loads per second, the median of 5
# seeds and the worst (lowest share) of them. Then §6.5's shape: an hour
# of 4,000 models on 6 GPUs (bench/clockwork_6_5.yaml) under the same
# policies but planned LRU, with the planned run's HTML report. Virtual
# time: the same on any machine.
#   bench/clockwork.sh [--write-docs]   (after scripts/build.sh; about two minutes;
#   RATES='60 100' sweeps those total rates only)
# --write-docs writes docs/benchmarks/clockwork.md and clockwork_6_5.html.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=bench/clockwork_6_2.yaml
build/bin/tutti sim compare "$base" --check > /dev/null || exit 1
policies=(loads loads+lru loads+on_demand+lru loads+first_request+lru)
rates=(${RATES:-60 80 100 120 140})
# One run: "within loads/s breaches" of policy $1 at rate $2, seed $3.
run() {
  sed "s/^seed: .*/seed: $3/; s/rate: [0-9.]*,/rate: $2,/" "$base" > "$tmp/e.yaml"
  build/bin/tutti sim run "$tmp/e.yaml" --policy "$1" 2> /dev/null |
    sed -n 's/^memory: [0-9]* load(s) (\([0-9.]*\)\/s).*, \([0-9]*\) breach.*; \([0-9.]*\)% of requests.*/\3 \1 \2/p'
}
# Median and worst of a cell over 5 seeds: "median% [worst%] loads/s".
cell() {
  for seed in 1 2 3 4 5; do run "$1" "$2" "$seed"; done > "$tmp/cell"
  awk '$3 != 0 {bad = 1} END {if (bad) print "BREACH"}' "$tmp/cell" | grep -q BREACH &&
    { echo "memory contract breached: $1 at $2 r/s" >&2; exit 1; }
  sort -n "$tmp/cell" | awk '{w[NR] = $1; l[NR] = $2} END {
    printf "%.4f%% [%.4f%%] · %.1f/s", w[3], w[1], l[3]}'
}
header="| rate | $(printf '%s | ' "${policies[@]}")"
echo "$header" | tee "$tmp/table.md"
printf '|---|%s\n' "$(printf -- '---|%.0s' "${policies[@]}")" >> "$tmp/table.md"
for rate in "${rates[@]}"; do
  row="| $rate r/s |"
  for p in "${policies[@]}"; do row="$row $(cell "$p" "$rate") |"; done
  echo "$row" | tee -a "$tmp/table.md"
done
# §6.5's shape: an hour, 4,000 models, 6 GPUs (bench/clockwork_6_5.yaml);
# the loads policy's run drawn over time as an HTML report.
long=bench/clockwork_6_5.yaml
build/bin/tutti sim run "$long" --check > /dev/null || exit 1
echo
echo "| policy | offered r/s | goodput r/s | within 100 ms | loads/s | most GB on a GPU | breaches |" | tee "$tmp/long.md"
echo "|---|---|---|---|---|---|---|" >> "$tmp/long.md"
for p in loads loads+on_demand+lru loads+first_request+lru; do
  html=()
  [ "$p" = loads ] && html=(--html "$tmp/clockwork_6_5.html")
  build/bin/tutti sim run "$long" --policy "$p" "${html[@]}" 2> /dev/null > "$tmp/long.out"
  total=$(awk '/^total/ {print $3, $4}' "$tmp/long.out")
  memory=$(sed -n 's/^memory: [0-9]* load(s) (\([0-9.]*\)\/s), at most \([0-9.]*\) GB.*, \([0-9]*\) breach.*; \([0-9.]*\)% of requests.*/\4% \1 \2 \3/p' "$tmp/long.out")
  # shellcheck disable=SC2086
  printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$p" $total $memory | tee -a "$tmp/long.md"
done
if [ "$WRITE_DOCS" = 1 ]; then
  cp "$tmp/clockwork_6_5.html" docs/benchmarks/clockwork_6_5.html
  {
    echo "Each cell: requests answered within 100 ms, median of seeds 1–5 [the worst], then loads per second (median)."
    echo "Every run checks the memory contract (a batch runs only where its model is loaded, no eviction of a model with a batch in flight, no GPU over its 32 GB): no breach."
    echo
    cat "$tmp/table.md"
    echo
    echo "\`loads\` plans each load like a batch: only where the load and a batch of one still meet the request's deadline (else the request is dropped at once), the loads that serve the most waiting requests first, evicting the loaded model whose arrivals cost least to reload. \`+lru\` evicts the least recently used instead; \`+on_demand\` loads every model asked for, in deadline order, whether or not its requests can still make it; \`+first_request\` also stops the GPU's compute while it loads, as Triton's load on first request does. Tutti's data has no V100 profile: the GTX 1080Ti's ResNet50 (7.4 ms at batch 1) stands in, so a batch of one costs more than a load (8.3 ms at 12 GB/s) would suggest on a V100, and the GPU's compute, not its copy engine, is what runs out first."
    echo
    echo "### An hour of 4,000 models on 6 GPUs (Clockwork §6.5's shape)"
    echo
    echo "bench/clockwork_6_5.yaml: 4,000 models of 100 MB on six 32 GB GPUs, an hour of virtual time (the first minute not measured), Zipf popularity (exponent 1) with Gamma arrivals of shape 0.25 per model (bursts: coefficient of variation 2) — a synthetic stand-in for the Azure Functions trace Clockwork replays, whose published shape is heavy-tailed popularity and bursty arrivals — at 500, 700, 850 and 600 r/s by quarter hour. One seed."
    echo
    cat "$tmp/long.md"
    echo
    echo "Goodput, bad rate, loads per second and the GPUs' memory over the hour, for \`loads\`: [clockwork_6_5.html](clockwork_6_5.html) (open it in a browser; it fetches nothing)."
  } > "$tmp/page.md"
  write_results_page clockwork "Thousands of models on one GPU (Clockwork §6.2's shape)" \
    "With 3,600 models and room for about 320, what share of requests meets a 100 ms objective when loads are planned by the scheduler, against LRU loading on demand and Triton-style loading on first request?" \
    "bench/clockwork.sh --write-docs" \
    "The simulator, virtual time: bench/clockwork_6_2.yaml (3,600 models of 100 MB, one GPU of 32 GB, loads at 12 GB/s, Zipf popularity with exponent 1, Poisson arrivals, 60 s with the first 10 not measured), at each total rate, 5 seeds." \
    "$tmp/page.md"
fi

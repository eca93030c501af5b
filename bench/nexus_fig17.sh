#!/usr/bin/env bash
# Nexus Figure 17, simulated (bench/nexus_fig17_base.yaml): the goodput of a
# two-stage query (SSD, then InceptionV3 on gamma detections per query) on
# 8 GPUs, with the objective split by Nexus's query analyzer (the DP of
# planner/latency_split.h) against split evenly, for objectives of 100–500
# ms and gamma 0.1, 1, 10. Goodput: the highest query rate whose p99 meets
# the objective (tutti sim goodput). Virtual time: the output is the same
# on any machine. Paper: the analyzer gives 13–55% more throughput.
#   bench/nexus_fig17.sh [--write-docs]   (after scripts/build.sh; about a minute)
# --write-docs writes docs/benchmarks/nexus_fig17.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
goodput() {  # objective gamma split
  sed "s/objective_ms: 400, gamma: \[1\], split: dp/objective_ms: $1, gamma: [$2], split: $3/" \
    bench/nexus_fig17_base.yaml > "$tmp/e.yaml"
  grep -q "split: $3" "$tmp/e.yaml" || { echo "bench/nexus_fig17_base.yaml changed" >&2; exit 1; }
  build/bin/tutti sim goodput "$tmp/e.yaml" 2>/dev/null | awk '/^goodput:/ {print $2}'
}
printf "%-12s %6s %12s %12s %8s   %s\n" objective gamma "DP q/s" "even q/s" gain "DP split (SSD / Inception)"
echo "| objective | γ | DP q/s | even q/s | gain | the DP's split |" > "$tmp/table.md"
echo "|---|---|---|---|---|---|" >> "$tmp/table.md"
for slo in 100 200 300 400 500; do
  for gamma in 0.1 1 10; do
    dp=$(goodput "$slo" "$gamma" dp)
    even=$(goodput "$slo" "$gamma" even)
    sed "s/objective_ms: 400, gamma: \[1\], split: dp/objective_ms: $slo, gamma: [$gamma], split: dp/" \
      bench/nexus_fig17_base.yaml > "$tmp/e.yaml"
    split=$(build/bin/tutti sim run "$tmp/e.yaml" --duration-s 3 2>/dev/null | sed -n 's/^graph: the objective split as //p')
    awk -v s="$slo" -v g="$gamma" -v d="$dp" -v e="$even" -v sp="$split" \
      'BEGIN {printf "%-12s %6s %12.1f %12.1f %+7.1f%%   %s\n", s " ms", g, d, e, 100 * (d / e - 1), sp}'
    awk -v s="$slo" -v g="$gamma" -v d="$dp" -v e="$even" -v sp="$split" \
      'BEGIN {printf "| %s ms | %s | %.1f | %.1f | %+.1f%% | %s |\n", s, g, d, e, 100 * (d / e - 1), sp}' >> "$tmp/table.md"
  done
done
if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page nexus_fig17 "Nexus Figure 17: the query latency split" \
    "How much more query throughput does Nexus's latency split (the query analyzer's DP) give a two-stage query than splitting its objective evenly?" \
    "bench/nexus_fig17.sh --write-docs" \
    "The simulator, virtual time (the same on any machine): SSD, then InceptionV3 on γ items per query, on 8 GPUs with Symphony's GTX 1080Ti profiles (bench/nexus_fig17_base.yaml); goodput is the highest query rate whose p99 meets the objective. The paper reports 13–55% more throughput at 300–500 ms. Symphony's SSDMobilenet batches weakly (α = 23.8 ms, β = 9.7 ms), so its throughput hardly grows with its budget, and by 300 ms both models reach their largest batch within an even share; Nexus's SSD ran 47 ms at batch 1 and batched strongly." \
    "$tmp/table.md"
fi

#!/usr/bin/env bash
# What tracing costs the serving path: bench/serving_overhead.sh's pairs
# (the zero-cost model, server on core 0, load on core 1), each pair a run
# without tracing and one tracing TRACE_RATIO (default 0.01) of requests to
# a file, the order alternating.
#   bench/tracing_overhead.sh [PAIRS] [--write-docs]   (default 5 pairs)
# --write-docs writes docs/benchmarks/tracing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]}"
PAIRS=${1:-5}
OUT=${OUT:-/tmp/tutti_tracing_overhead}
rm -rf "$OUT" && mkdir -p "$OUT"
RATIO=${TRACE_RATIO:-0.01}
WITH=trace TRACE_RATIO=$RATIO TRACE_FILE="$OUT/spans.jsonl" PAIRS=$PAIRS SEARCH=0 bench/serving_overhead.sh \
  | tee "$OUT/run.txt"
spans=$(wc -l < "$OUT/spans.jsonl" 2> /dev/null || echo 0)

{
  echo "| measure | without tracing | tracing $RATIO of requests |"
  echo "|---|---|---|"
  awk '/^without / {w = $0} /^with / {t = $0}
       function field(line, re,   m) { return match(line, re) ? substr(line, RSTART, RLENGTH) : "?" }
       END {
         printf "| capacity: 128 requests in flight | %s | %s |\n",
           field(w, "capacity median [0-9.]+ r/s \\(worst [0-9.]+"), field(t, "capacity median [0-9.]+ r/s \\(worst [0-9.]+")
         printf "| p50 at 1,000 r/s | %s | %s |\n",
           field(w, "p50 at 1,000 r/s median [0-9.]+ ms \\(worst [0-9.]+"), field(t, "p50 at 1,000 r/s median [0-9.]+ ms \\(worst [0-9.]+")
       }' "$OUT/run.txt" | sed 's/capacity median //g; s/p50 at 1,000 r\/s median //g; s/(worst \([0-9.]*\)/[\1]/g'
  echo
  grep '^capacity with / without' "$OUT/run.txt" | sed 's/^/Capacity, /; s/capacity with/with/'
  echo
  echo "Medians of $PAIRS pairs, the worst run in brackets (the lowest capacity, the highest p50). The last traced run exported $spans OTLP/JSON lines (one a second)."
} > "$OUT/table.md"
cat "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page tracing "What tracing costs" \
    "Does tracing 1% of requests (W3C traceparent, OTLP/JSON spans to a file) cost the serving path at most 2% of its capacity?" \
    "bench/tracing_overhead.sh --write-docs" \
    "\`bench/serving_overhead.sh\`'s zero-cost emulated model (ℓ(b) = 1 µs, eager, one emulated GPU) behind \`tutti serve\` pinned to CPU 0, \`tutti load\` on CPU 1: capacity with 128 requests in flight for 6 s, and latency at 1,000 r/s. Pairs of runs, one without tracing and one with \`--trace-ratio $RATIO --trace-file F\`, the order alternating from pair to pair (this machine drifts within minutes: a pair shares its drift)." \
    "$OUT/table.md"
fi

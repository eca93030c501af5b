#!/usr/bin/env bash
# Closed loop: N clients, each sending its next request when answered (the
# way most services call a model, and perf_analyzer's concurrency mode),
# against `tutti serve --repo demo_repository`. The question: does a server
# that can defer batches ever hold these clients for batch-mates that are
# not coming? Five servers run side by side, taking turns point by point:
#   default            the default config (policy adaptive, deferral latency: a fixed pool)
#   eager              the same with --policy eager, the reference: never waits
#   autoscaling        the demo's models on a pool of 2 executors with `autoscale:`
#                      on (deferral consolidate; bench/serve_demo_autoscale.yaml)
#   autoscaling-eager  the same with --policy eager
#   eager-twin         a second eager server: eager ÷ its twin is what this
#                      machine's noise alone makes of a ratio
# For lenet5 and the graph fashion_router at N = 1, 4, 16, 64, `tutti load
# --concurrency N` reports throughput, the client's p50 and the server's own
# p50 (receipt to answer, from tutti_server_us). With Triton's perf_analyzer
# built (bench/tools/build_perf_analyzer.sh), it measures lenet5 too, as a
# Triton user would. The servers run on CPU 0; tutti load on CPU 1,
# perf_analyzer on either (pinned to one core it starves its own measuring thread).
#   bench/closed_loop.sh [ROUNDS] [DURATION_S] [--write-docs]
# (defaults 5 and 5; after scripts/build.sh and `tutti demo`). Figures are
# medians over the rounds, the worst round in brackets. --write-docs
# writes docs/benchmarks/closed_loop.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]}"
ROUNDS=${1:-5}
DURATION=${2:-5}
PORT=${PORT:-8070}
PA=${PA:-${PA_HOME:-$HOME/.cache/tutti/perf_analyzer}/perf_analyzer}
OUT=${OUT:-/tmp/tutti_closed_loop}
CONCURRENCY=(1 4 16 64)
MODELS=(lenet5:100 fashion_router:20)  # model:objective_ms
rm -rf "$OUT" && mkdir -p "$OUT"
SERVER_CPUS=() CLIENT_CPUS=()
if [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); fi
[ -d demo_repository/lenet5 ] || build/bin/tutti demo --repo demo_repository > /dev/null

MODES=(default eager autoscaling autoscaling-eager eager-twin)
declare -A PORTS SERVERS
for i in "${!MODES[@]}"; do PORTS[${MODES[$i]}]=$((PORT + i)); done

serve() {  # $1: mode; all four run at once, idle but for the one a client loads
  local args=()
  case $1 in
    default) ;;
    eager | eager-twin) args=(--policy eager) ;;
    autoscaling) args=(--config bench/serve_demo_autoscale.yaml) ;;
    autoscaling-eager) args=(--config bench/serve_demo_autoscale.yaml --policy eager) ;;
  esac
  "${SERVER_CPUS[@]}" build/bin/tutti serve --repo demo_repository "${args[@]}" --port "${PORTS[$1]}" \
    --grpc-port -1 > "$OUT/server_$1.log" 2>&1 &
  SERVERS[$1]=$!
}
await_ready() { await_server "${PORTS[$1]}" "${SERVERS[$1]}" "$OUT/server_$1.log"; }  # $1: mode
stop() {
  local pid
  for pid in "${SERVERS[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
  for pid in "${SERVERS[@]}"; do wait "$pid" 2> /dev/null || true; done
  SERVERS=()
}
trap 'stop' EXIT

for round in $(seq 1 "$ROUNDS"); do
  for mode in "${MODES[@]}"; do serve "$mode"; done
  for mode in "${MODES[@]}"; do await_ready "$mode"; done
  modes=("${MODES[@]}")
  ((round % 2)) || modes=(eager-twin autoscaling-eager autoscaling eager default)  # drift falls on both sides
  for entry in "${MODELS[@]}"; do
    model=${entry%%:*} slo=${entry##*:}
    for n in "${CONCURRENCY[@]}"; do
      for mode in "${modes[@]}"; do
        "${CLIENT_CPUS[@]}" build/bin/tutti load --models "$model" --concurrency "$n" --slo-ms "$slo" \
          --duration-s "$DURATION" --warmup-s 1 --port "${PORTS[$mode]}" > "$OUT/load.txt" 2>&1 || true
        awk -v r="$round" -v m="$mode" -v model="$model" -v n="$n" \
          '$1 == "total" {print r, m, "tutti-load", model, n, $3, $6, $11}' "$OUT/load.txt" >> "$OUT/rows.txt"
      done
    done
  done
  if [ -x "$PA" ]; then
    for n in "${CONCURRENCY[@]}"; do
      for mode in "${modes[@]}"; do
        timeout 120 "$PA" -m lenet5 -u "127.0.0.1:${PORTS[$mode]}" -i http \
          --concurrency-range "$n:$n" --measurement-interval 1500 -s 50 -r 10 --percentile 50 \
          > "$OUT/pa.txt" 2>&1 || true
        awk -v r="$round" -v m="$mode" -v n="$n" '
          /^Concurrency:/ {t = $4; p = $7; print r, m, "perf_analyzer", "lenet5", n, t, p / 1000, "-"}' \
          "$OUT/pa.txt" >> "$OUT/rows.txt"
      done
    done
  fi
  stop
  echo "round $round of $ROUNDS done" >&2
done

l1=$(grep -m1 -E '(^ *|[[,])lenet5([],]| v1)' "$OUT/server_default.log" | sed -n 's/.*l(1) \([0-9.]*\) ms.*/\1/p')

table=$OUT/table.md
{
  echo "| client | model | N | default req/s | ÷ eager | p50 ms (server's) | eager req/s | autoscaling req/s | ÷ its eager | p50 ms (server's) | its eager req/s | eager ÷ its twin |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  awk '
    function median(s,   n, i, j, t, v) {
      n = split(s, v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return n ? v[int((n + 1) / 2)] : "-"
    }
    function worst(s, low,   n, i, v, w) {
      n = split(s, v, " "); w = v[1]
      for (i = 2; i <= n; i++) if ((low && v[i] + 0 < w + 0) || (!low && v[i] + 0 > w + 0)) w = v[i]
      return n ? w : "-"
    }
    # Throughput over its reference, run by run (the servers took turns).
    function ratios(k, mode, ref,   r, round) {
      r = ""
      for (round = 1; round <= runs; round++)
        if ((k SUBSEP mode SUBSEP round) in t && t[k SUBSEP ref SUBSEP round] > 0)
          r = r " " sprintf("%.3f", t[k SUBSEP mode SUBSEP round] / t[k SUBSEP ref SUBSEP round])
      return r
    }
    function column(k, mode, ref, server) {
      return sprintf(" | %.0f [%.0f] | %s [%s] | %s [%s]%s", median(tp[k SUBSEP mode]), worst(tp[k SUBSEP mode], 1),
                     median(ratios(k, mode, ref)), worst(ratios(k, mode, ref), 1), median(p50[k SUBSEP mode]),
                     worst(p50[k SUBSEP mode], 0),
                     server ? sprintf(" (%s [%s])", median(s50[k SUBSEP mode]), worst(s50[k SUBSEP mode], 0)) : "")
    }
    {
      k = $3 SUBSEP $4 SUBSEP $5
      if (!(k in seen)) { seen[k] = 1; order[++rows] = k }
      if ($1 > runs) runs = $1
      t[k SUBSEP $2 SUBSEP $1] = $6
      tp[k SUBSEP $2] = tp[k SUBSEP $2] " " $6
      p50[k SUBSEP $2] = p50[k SUBSEP $2] " " $7
      if ($8 != "-") s50[k SUBSEP $2] = s50[k SUBSEP $2] " " $8
    }
    END {
      for (i = 1; i <= rows; i++) {
        k = order[i]; split(k, f, SUBSEP); server = f[1] != "perf_analyzer"
        printf "| %s | %s | %s%s | %.0f%s | %.0f | %s [%s] |\n", f[1], f[2], f[3], column(k, "default", "eager", server),
               median(tp[k SUBSEP "eager"]), column(k, "autoscaling", "autoscaling-eager", server),
               median(tp[k SUBSEP "autoscaling-eager"]), median(ratios(k, "eager", "eager-twin")),
               worst(ratios(k, "eager", "eager-twin"), 1)
      }
    }' "$OUT/rows.txt"
  echo
  echo "lenet5's ℓ(1) on this CPU: ${l1:-?} ms (from the server's start-up listing)."
} > "$table"
cat "$table"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page closed_loop "Closed-loop clients are never held for batch-mates" \
    "Does the default scheduler hold closed-loop clients (perf_analyzer's concurrency mode, a service calling a model) for batch-mates that cannot come, where an idle server should answer at once?" \
    "bench/closed_loop.sh $ROUNDS $DURATION --write-docs" \
    "Five servers over demo_repository run side by side on CPU 0, started afresh in each run, and take turns point by point (the others idle): the default config (a fixed pool: one torch executor) and the same with --policy eager; the demo's models on a pool of 2 torch executors with autoscaling on (bench/serve_demo_autoscale.yaml, which makes the default consolidate) and the same with --policy eager; and a second eager server, whose ratio to the first (the last column) is what noise alone makes of a ratio on this machine. Within each point the order reverses from one run to the next, so that drift in the machine's load falls on each ratio's both sides. Each serves tutti load --concurrency N (and Triton's perf_analyzer, when built: bench/tools/build_perf_analyzer.sh) for $DURATION s per point, 1 s of warm-up. The servers run on CPU 0, tutti load on CPU 1, perf_analyzer (stable within 50%, 1.5 s windows) on either. Medians of $ROUNDS runs, the worst run in brackets; each ÷ is taken run by run against the eager server of the same config. p50 ms is the client's; the server's own p50 (receipt to answer, tutti_server_us) in parentheses after it." \
    "$table"
fi

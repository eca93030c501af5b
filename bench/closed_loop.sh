#!/usr/bin/env bash
# Closed loop: N clients, each sending its next request when answered (the
# way most services call a model, and perf_analyzer's concurrency mode),
# against `tutti serve --repo demo_repository`. The question: does a server
# that can defer batches ever hold these clients for batch-mates that are
# not coming? Three servers take turns in each run:
#   default      the default config (policy adaptive, deferral latency: a fixed pool)
#   autoscaling  the same models with `autoscale:` on (deferral consolidate;
#                bench/serve_demo_autoscale.yaml)
#   eager        --policy eager, the reference: never waits
# For lenet5 and the graph fashion_router at N = 1, 4, 16, 64, `tutti load
# --concurrency N` reports throughput, the client's p50 and the server's own
# p50 (receipt to answer, from tutti_server_us). With Triton's perf_analyzer
# built (bench/tools/build_perf_analyzer.sh), it measures lenet5 too, as a
# Triton user would. The server runs on CPU 0; tutti load on CPU 1,
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

serve() {  # $1: mode
  local args=()
  case $1 in
    default) ;;
    eager) args=(--policy eager) ;;
    autoscaling) args=(--config bench/serve_demo_autoscale.yaml) ;;
  esac
  "${SERVER_CPUS[@]}" build/bin/tutti serve --repo demo_repository "${args[@]}" --port "$PORT" --grpc-port -1 \
    > "$OUT/server_$1.log" 2>&1 &
  SERVER=$!
  until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do
    kill -0 $SERVER 2> /dev/null || { cat "$OUT/server_$1.log" >&2; exit 1; }
    sleep 0.2
  done
}
stop() { kill -TERM "$SERVER" 2> /dev/null; wait "$SERVER" 2> /dev/null || true; }
trap 'stop' EXIT

# rows: round mode client model N throughput p50_ms server_p50_ms
for round in $(seq 1 "$ROUNDS"); do
  for mode in default autoscaling eager; do
    serve "$mode"
    for entry in "${MODELS[@]}"; do
      model=${entry%%:*} slo=${entry##*:}
      for n in "${CONCURRENCY[@]}"; do
        "${CLIENT_CPUS[@]}" build/bin/tutti load --models "$model" --concurrency "$n" --slo-ms "$slo" \
          --duration-s "$DURATION" --warmup-s 1 --port "$PORT" > "$OUT/load.txt" 2>&1 || true
        awk -v r="$round" -v m="$mode" -v model="$model" -v n="$n" \
          '$1 == "total" {print r, m, "tutti-load", model, n, $3, $6, $11}' "$OUT/load.txt" >> "$OUT/rows.txt"
      done
    done
    if [ -x "$PA" ]; then
      for n in "${CONCURRENCY[@]}"; do
        # Unpinned: on one core its measuring thread starves behind its
        # workers and it never finishes. Stable within 25%, at most 5 windows.
        timeout 120 "$PA" -m lenet5 -u "127.0.0.1:$PORT" -i http --concurrency-range "$n:$n" \
          --measurement-interval 2000 -s 25 -r 5 --percentile 50 > "$OUT/pa.txt" 2>&1 || true
        awk -v r="$round" -v m="$mode" -v n="$n" '
          /^Concurrency:/ {t = $4; p = $7; print r, m, "perf_analyzer", "lenet5", n, t, p / 1000, "-"}' \
          "$OUT/pa.txt" >> "$OUT/rows.txt"
      done
    fi
    stop
  done
  echo "round $round of $ROUNDS done" >&2
done

# ℓ(1) of lenet5 on this CPU, as the server prints it.
l1=$(sed -n 's/.*lenet5 v1 (.*l(1) \([0-9.]*\) ms.*/\1/p' "$OUT/server_default.log" | head -1)

table=$OUT/table.md
{
  echo "| client | model | N | default: req/s | ÷ eager | p50 ms (server) | autoscaling: req/s | ÷ eager | p50 ms (server) | eager: req/s | p50 ms |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  awk '
    function median(key,   n, i, j, t, v) {
      n = split(vals[key], v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return v[int((n + 1) / 2)]
    }
    function worst(key, low,   n, i, v, w) {
      n = split(vals[key], v, " "); w = v[1]
      for (i = 2; i <= n; i++) if ((low && v[i] + 0 < w + 0) || (!low && v[i] + 0 > w + 0)) w = v[i]
      return w
    }
    {
      k = $3 SUBSEP $4 SUBSEP $5
      if (!(k in seen)) { seen[k] = 1; order[++rows] = k }
      vals[k SUBSEP $2 SUBSEP "t"] = vals[k SUBSEP $2 SUBSEP "t"] " " $6
      vals[k SUBSEP $2 SUBSEP "p"] = vals[k SUBSEP $2 SUBSEP "p"] " " $7
      vals[k SUBSEP $2 SUBSEP "s"] = vals[k SUBSEP $2 SUBSEP "s"] " " $8
      ratio[k SUBSEP $2 SUBSEP $1] = $6
    }
    END {
      for (i = 1; i <= rows; i++) {
        k = order[i]; split(k, f, SUBSEP)
        # Throughput against eager, round by round (the servers took turns).
        for (m = 1; m <= 2; m++) {
          mode = m == 1 ? "default" : "autoscaling"; r = ""
          for (round = 1; (k SUBSEP "eager" SUBSEP round) in ratio; round++)
            if ((k SUBSEP mode SUBSEP round) in ratio && ratio[k SUBSEP "eager" SUBSEP round] > 0)
              r = r " " ratio[k SUBSEP mode SUBSEP round] / ratio[k SUBSEP "eager" SUBSEP round]
          vals[k SUBSEP mode SUBSEP "r"] = r
        }
        line = sprintf("| %s | %s | %s", f[1], f[2], f[3])
        for (m = 1; m <= 2; m++) {
          mode = m == 1 ? "default" : "autoscaling"
          server = f[1] == "perf_analyzer" ? "" : sprintf(" (%s [%s])", median(k SUBSEP mode SUBSEP "s"), worst(k SUBSEP mode SUBSEP "s", 0))
          line = line sprintf(" | %.0f [%.0f] | %.2f [%.2f] | %s [%s]%s", median(k SUBSEP mode SUBSEP "t"),
                              worst(k SUBSEP mode SUBSEP "t", 1), median(k SUBSEP mode SUBSEP "r"),
                              worst(k SUBSEP mode SUBSEP "r", 1), median(k SUBSEP mode SUBSEP "p"),
                              worst(k SUBSEP mode SUBSEP "p", 0), server)
        }
        line = line sprintf(" | %.0f | %s |", median(k SUBSEP "eager" SUBSEP "t"), median(k SUBSEP "eager" SUBSEP "p"))
        print line
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
    "Three servers over demo_repository take turns in each run: the default config (a fixed pool), the same with autoscaling on (bench/serve_demo_autoscale.yaml), and --policy eager. Each serves tutti load --concurrency N (and perf_analyzer, when built) for $DURATION s per point, 1 s of warm-up. The server runs on CPU 0, tutti load on CPU 1, perf_analyzer (stable within 25%, 2 s windows) unpinned. Medians of $ROUNDS runs, the worst run in brackets; ÷ eager is taken run by run (the three servers take turns within a run). p50 ms is the client's; (server) is the server's own p50, receipt to answer." \
    "$table"
fi

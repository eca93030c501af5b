#!/usr/bin/env bash
# Clients that time out, under overload: emulated ResNet50 on 8 emulated
# GTX 1080Tis (ℓ(b) = 2.050 ms·b + 5.378 ms), requests due in 100 ms,
# Poisson at 1.5 times the simulated goodput for that objective
# (bench/serve_resnet50_1080ti_8gpu.yaml with --policy P). Two clients take
# turns:
#   silent   sends no timeout: a request waits in the queue as long as the
#            server keeps it
#   timeout  sends Triton's `timeout` at half the objective (`tutti load
#            --timeout-share 0.5`): a request not in a batch 50 ms after it
#            came is withdrawn and never runs
# under two policies: `timeout` (Triton's dynamic batcher: oldest first,
# dropping only what cannot make its deadline at all) and `deferred` with
# early drop (the serve config's). Per run: goodput (answers within 100 ms),
# the GPU-seconds the server's batches took (its statistics before and
# after: α·items run + β·batches, exact for this linear profile), the share
# of them spent on answers that came late, and the requests withdrawn.
# Server on CPU 0, `tutti load` on CPU 1; medians over ROUNDS rounds, the
# worst round in brackets.
#   bench/client_timeouts.sh [ROUNDS] [DURATION_S] [--write-docs]
# (defaults 5 and 10; after scripts/build.sh). --write-docs writes
# docs/benchmarks/client_timeouts.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
DURATION=${2:-10}
PORT=${PORT:-8078}
SLO=100
ALPHA_MS=2.050 BETA_MS=5.378  # the 1080ti profile of bench/emulated_repository/resnet50
POLICIES=(timeout deferred)
OUT=${OUT:-/tmp/tutti_client_timeouts}
rm -rf "$OUT" && mkdir -p "$OUT"
SERVER_CPUS=() CLIENT_CPUS=()
if [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); fi

sed "s/slo_ms: 27/slo_ms: $SLO/" bench/resnet50_1080ti_8gpu_slo27.yaml > "$OUT/sim.yaml"
peak=$(build/bin/tutti sim goodput "$OUT/sim.yaml" 2> /dev/null | awk '/^goodput:/ {printf "%.0f", $2}')
rate=$(awk -v p="$peak" 'BEGIN {printf "%.0f", 1.5 * p}')

SERVER=
stop_server() { if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2> /dev/null; wait "$SERVER" 2> /dev/null || true; fi; SERVER=; }
trap stop_server EXIT

# The server's counts so far: items run (answered good or late), of them
# late, batches, items withdrawn.
counts() {
  curl -sf "127.0.0.1:$PORT/v2/models/resnet50/stats" | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["model_stats"][0]["tutti"]
print(t["success"] + t["late"], t["late"], t["batches"], t["cancelled"])'
}

for policy in "${POLICIES[@]}"; do
  "${SERVER_CPUS[@]}" build/bin/tutti serve --repo bench/emulated_repository --config bench/serve_resnet50_1080ti_8gpu.yaml \
    --policy "$policy" --port "$PORT" --grpc-port -1 > "$OUT/server_$policy.log" 2>&1 &
  SERVER=$!
  await_server "$PORT" "$SERVER" "$OUT/server_$policy.log"
  for r in $(seq "$ROUNDS"); do
    echo "$policy: round $r of $ROUNDS" >&2
    for client in silent timeout; do
      share=0
      [ "$client" = timeout ] && share=0.5
      before=$(counts)
      "${CLIENT_CPUS[@]}" build/bin/tutti load --models resnet50 --rate "$rate" --slo-ms "$SLO" --timeout-share "$share" \
        --duration-s "$DURATION" --warmup-s 0 --port "$PORT" --seed "$RANDOM" > "$OUT/${policy}_${client}_$r.txt" 2>&1 || true
      after=$(counts)
      # goodput/s, GPU-s, share of it on late answers, withdrawn/s
      awk -v b="$before" -v a="$after" -v al="$ALPHA_MS" -v be="$BETA_MS" -v d="$DURATION" '
        $1 == "total" {good = $4}
        END {split(b, x, " "); split(a, y, " ")
             items = y[1] - x[1]; late = y[2] - x[2]; batches = y[3] - x[3]; withdrawn = y[4] - x[4]
             gpu = (al * items + be * batches) / 1000
             printf "%.1f %.2f %.4f %.1f\n", good, gpu, (items > 0 ? late / items : 0), withdrawn / d}
      ' "$OUT/${policy}_${client}_$r.txt" > "$OUT/${policy}_${client}_$r.row"
    done
  done
  stop_server
done

# Median and worst of each column: worst is the lowest goodput, the highest
# of the others.
{
  echo "| policy | client | goodput r/s | GPU-s per run | GPU time on late answers | withdrawn r/s |"
  echo "|---|---|---|---|---|---|"
  for policy in "${POLICIES[@]}"; do
    for client in silent timeout; do
      cat "$OUT/${policy}_${client}"_*.row | awk -v p="$policy" -v k="$client" "$COLUMN_STATS_AWK"'
        {for (c = 1; c <= 4; c++) col[NR, c] = $c}
        END {
          name = k == "silent" ? "no timeout" : "timeout at 50 ms"
          printf "| %s | %s | %.0f [%.0f] | %.2f [%.2f] | %.1f%% [%.1f%%] | %.0f [%.0f] |\n", p, name, med(1), worst(1, 0),
                 med(2), worst(2, 1), 100 * med(3), 100 * worst(3, 1), med(4), worst(4, 0)
        }'
    done
  done
  echo
  echo "Offered $rate r/s: 1.5 times the simulated goodput ($peak r/s) for a 100 ms objective. $ROUNDS runs of $DURATION s per policy and client, the two clients taking turns; medians, the worst run in brackets."
} > "$OUT/table.md"
cat "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page client_timeouts "Clients that time out" \
    "Under overload, do clients that send Triton's timeout at half their objective save the GPU time a server would spend on answers that come too late?" \
    "bench/client_timeouts.sh --write-docs" \
    "Emulated ResNet50 on 8 emulated GTX 1080Tis (Symphony appendix C), requests due in 100 ms, Poisson at 1.5 times capacity. \`tutti serve --policy P\` runs on CPU 0, \`tutti load\` on CPU 1, with \`--timeout-share 0.5\` or without. GPU time comes from the server's statistics: α·items run + β·batches, exact for the linear emulated profile; the late share is the share of the items run that were answered late." \
    "$OUT/table.md"
fi

#!/usr/bin/env bash
# Below capacity and at it: latency and GPU time against load, open loop.
# Emulated ResNet50 on 8 A100s (Symphony appendix C: ℓ(b) = 0.268·b + 5.172
# ms, objective 20 ms), Poisson arrivals at 1%, 10%, 50% and 90% of the
# simulated goodput, and at each policy's knee (its goodput: the highest
# rate with p99 within the objective).
#   1. Simulator, a fixed pool of 8 (deterministic): eager, deferred
#      (Symphony, early drop) and the default adaptive — p50, p99, bad, and
#      the GPU-seconds batches ran.
#   2. Simulator, autoscaling over a pool of 8 (`autoscale:`; the default
#      then consolidates): the GPU-seconds the autoscaler kept up.
#   3. The real clock: `tutti serve --repo bench/emulated_repository
#      --config bench/serve_resnet50_a100_8gpu.yaml --policy P` under
#      `tutti load` (server on CPU 0, client on CPU 1), ROUNDS rounds, the
#      policies taking turns; the client's and the server's p50.
#   bench/load_sweep.sh [ROUNDS] [DURATION_S] [--write-docs]
# (defaults 5 and 10; ROUNDS=0 skips the real clock). --write-docs writes
# docs/benchmarks/load_sweep.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]}"
ROUNDS=${1:-5}
DURATION=${2:-10}
PORT=${PORT:-8071}
OUT=${OUT:-/tmp/tutti_load_sweep}
rm -rf "$OUT" && mkdir -p "$OUT"
POLICIES=(eager deferred+early adaptive+early)

experiment() {  # $1: extra YAML lines
  cat <<EOF
seed: 1
duration_s: 30
warmup_s: 5
gpus: 8
policies: [$(IFS=,; echo "${POLICIES[*]}")]
models:
  - {name: resnet50, alpha_ms: 0.268, beta_ms: 5.172, slo_ms: 20}
workload: {arrival: poisson, rate: 5000}
$1
EOF
}
experiment "" > "$OUT/fixed.yaml"
experiment "autoscale: {interval_s: 2, headroom: 0.2, min_gpus: 1, initial_gpus: 8, provision_delay_s: 2}" \
  > "$OUT/autoscale.yaml"

# The simulated goodput of deferred with early drop: the loads' 100%.
build/bin/tutti sim compare "$OUT/fixed.yaml" --goodput > "$OUT/knee_busy.txt" 2> /dev/null
base=$(awk '$1 == "deferred+early" {print $2; exit}' "$OUT/knee_busy.txt")
SHARES=(0.01 0.1 0.5 0.9)

sim_table() {  # $1: yaml, $2: "busy" or "up"
  echo "| load | policy | goodput r/s | bad | p50 ms | p99 ms | GPU-s $2 |"
  echo "|---|---|---|---|---|---|---|"
  local s out label
  for s in "${SHARES[@]}" knee; do
    if [ "$s" = knee ]; then
      out=$OUT/knee_$2.txt label="knee (each policy's goodput)"
      [ -f "$out" ] || build/bin/tutti sim compare "$1" --goodput > "$out" 2> /dev/null
    else
      rate=$(awk -v s="$s" -v b="$base" 'BEGIN {printf "%.0f", s * b}')
      out=$OUT/sim.txt label="$(awk -v s="$s" 'BEGIN {print 100 * s}')% ($rate r/s)"
      build/bin/tutti sim compare "$1" --rate "$rate" > "$out" 2> /dev/null
    fi
    awk -v label="$label" -v col="$([ "$2" = up ] && echo 10 || echo 9)" '
      $1 ~ /^(eager|deferred|adaptive)/ && NF >= 9 && !seen[$1]++ {
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", label, $1, $2, $3, $4, $5, $col}' "$out"
  done
}
sim_table "$OUT/fixed.yaml" busy > "$OUT/sim_fixed.md"
sim_table "$OUT/autoscale.yaml" up > "$OUT/sim_autoscale.md"

real_table() {
  [ "$ROUNDS" -gt 0 ] || return 0
  local SERVER_CPUS=() CLIENT_CPUS=()
  if [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); fi
  for round in $(seq 1 "$ROUNDS"); do
    for p in eager deferred adaptive; do
      "${SERVER_CPUS[@]}" build/bin/tutti serve --repo bench/emulated_repository \
        --config bench/serve_resnet50_a100_8gpu.yaml --policy "$p" --port "$PORT" --grpc-port -1 > "$OUT/server.log" 2>&1 &
      local server=$!
      until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
      for s in "${SHARES[@]}"; do
        rate=$(awk -v s="$s" -v b="$base" 'BEGIN {printf "%.0f", s * b}')
        "${CLIENT_CPUS[@]}" build/bin/tutti load --models resnet50 --rate "$rate" --slo-ms 20 --duration-s "$DURATION" \
          --warmup-s 2 --port "$PORT" --seed "$round" > "$OUT/load.txt" 2>&1 || true
        awk -v r="$round" -v p="$p" -v s="$s" '$1 == "total" {print r, p, s, $4, $5, $6, $8, $11}' "$OUT/load.txt" \
          >> "$OUT/real_rows.txt"
      done
      kill -TERM $server; wait $server 2> /dev/null || true
    done
    echo "round $round of $ROUNDS done" >&2
  done
  echo "| load | policy | goodput r/s | bad | p50 ms | p99 ms | server p50 ms | p50 ÷ eager's |"
  echo "|---|---|---|---|---|---|---|---|"
  awk -v base="$base" '
    function median(s,   n, i, j, t, v) {
      n = split(s, v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return v[int((n + 1) / 2)]
    }
    function worst(s, low,   n, i, v, w) {
      n = split(s, v, " "); w = v[1]
      for (i = 2; i <= n; i++) if ((low && v[i] + 0 < w + 0) || (!low && v[i] + 0 > w + 0)) w = v[i]
      return w
    }
    {
      k = $3 SUBSEP $2
      if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      g[k] = g[k] " " $4; b[k] = b[k] " " $5; p50[k] = p50[k] " " $6; p99[k] = p99[k] " " $7; s50[k] = s50[k] " " $8
      p50_of[$3 SUBSEP $2 SUBSEP $1] = $6
    }
    END {
      for (i = 1; i <= n; i++) {
        split(order[i], f, SUBSEP); r = ""
        for (round = 1; (f[1] SUBSEP "eager" SUBSEP round) in p50_of; round++)
          r = r " " p50_of[f[1] SUBSEP f[2] SUBSEP round] / p50_of[f[1] SUBSEP "eager" SUBSEP round]
        printf "| %s%% (%.0f r/s) | %s | %s [%s] | %s [%s] | %s [%s] | %s [%s] | %s [%s] | %.2f [%.2f] |\n",
          100 * f[1], f[1] * base, f[2], median(g[order[i]]), worst(g[order[i]], 1), median(b[order[i]]),
          worst(b[order[i]], 0), median(p50[order[i]]), worst(p50[order[i]], 0), median(p99[order[i]]),
          worst(p99[order[i]], 0), median(s50[order[i]]), worst(s50[order[i]], 0), median(r), worst(r, 0)
      }
    }' "$OUT/real_rows.txt"
}
real_table > "$OUT/real.md"

{
  echo "Simulated goodput of deferred (early drop), the loads' 100%: **$base r/s**."
  echo
  echo "**Simulator, a fixed pool of 8 GPUs** (GPU-s busy: GPU-seconds running batches, of 25 s measured):"
  echo
  cat "$OUT/sim_fixed.md"
  echo
  echo "**Simulator, autoscaling over a pool of 8** (GPU-s up: GPU-seconds the autoscaler kept up, of 25 s measured; the default consolidates):"
  echo
  cat "$OUT/sim_autoscale.md"
  if [ -s "$OUT/real.md" ]; then
    echo
    echo "**The real clock, a fixed pool of 8 emulated A100s** (medians of $ROUNDS runs of $DURATION s per point, worst in brackets; p50 ÷ eager's run by run):"
    echo
    cat "$OUT/real.md"
  fi
} > "$OUT/table.md"
cat "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page load_sweep "Latency and GPU time against load" \
    "Does the default scheduler answer about as fast as eager when the pool has room, keep deferral's goodput at the knee, and, when autoscaling, keep deferral's GPU-seconds?" \
    "bench/load_sweep.sh $ROUNDS $DURATION --write-docs" \
    "Emulated ResNet50 on 8 A100s, objective 20 ms, Poisson arrivals at shares of deferred's simulated goodput and at each policy's own knee (goodput search). The simulator's runs are deterministic (30 s, 5 s warm-up). On the real clock the three policies take turns within each run, each on a fresh \`tutti serve\` pinned to CPU 0 with \`tutti load\` on CPU 1; the 2-core machine's CPU, not the emulated GPUs, limits the real clock near the knee." \
    "$OUT/table.md"
fi

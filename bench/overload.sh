#!/usr/bin/env bash
# Overload: emulated ResNet50 on 8 emulated GPUs, Poisson arrivals offered
# at shares of BASE r/s (default: the simulator's goodput for the workload)
# up to twice it, one `tutti serve` taking the rates in turn. PROFILE=a100
# (SLO 20 ms, ~20,000 r/s: at twice it the server's one I/O loop, not the
# GPUs, is the limit on this machine) or 1080ti (the default; SLO 27 ms,
# ~2,700 r/s, bounded by the GPUs). Per rate: what the client saw (goodput, bad = late +
# errors + refused), the bad rate that pure excess would cause,
# (o − p)/o with p the highest goodput of the run, and the server's
# resident memory (largest sample, every 0.5 s, during the rate), and the
# CPU cores the server and the client used during it.
# A flat top: goodput at 2× within 10% of the peak, bad within 5 points of
# (o − p)/o, memory flat.
#   bench/overload.sh [SHARES] [DURATION_S]   (defaults: 0.75,1,1.5,2 and 10)
# CONFIG=… serves another config of the profile's workload.
# PIN=1 (the default, on 2 or more CPUs): the server runs on CPU 0 and the
# load generator on CPU 1, as if the clients were on another machine — they
# do not take turns on a core; PIN=0: both share every core.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARES=${1:-0.75,1,1.5,2}
DURATION=${2:-10}
PORT=${PORT:-8060}
PROFILE=${PROFILE:-1080ti}
case "$PROFILE" in
  a100) CONFIG=${CONFIG:-bench/serve_resnet50_a100_8gpu.yaml} SIM=bench/resnet50_a100_8gpu_slo20.yaml SLO=20 ;;
  1080ti) CONFIG=${CONFIG:-bench/serve_resnet50_1080ti_8gpu.yaml} SIM=bench/resnet50_1080ti_8gpu_slo27.yaml SLO=27 ;;
  *) echo "PROFILE is a100 or 1080ti" >&2; exit 2 ;;
esac
BASE=${BASE:-$(build/bin/tutti sim goodput "$SIM" 2>/dev/null | awk '/^goodput:/ {print $2}')}
OUT=${OUT:-/tmp/tutti_overload}
PIN=${PIN:-1}
SERVER_CPUS=() CLIENT_CPUS=()
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); else PIN=0; fi
mkdir -p "$OUT"

"${SERVER_CPUS[@]}" build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" --grpc-port -1 \
  > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done

IFS=, read -r -a shares <<< "$SHARES"
for s in "${shares[@]}"; do
  rate=$(awk -v s="$s" -v g="$BASE" 'BEGIN {printf "%.0f", s * g}')
  (while kill -0 $SERVER 2> /dev/null; do ps -o rss= -p $SERVER; sleep 0.5; done) > "$OUT/rss_$s.txt" &
  SAMPLER=$!
  before=$(awk '{print $14 + $15}' /proc/$SERVER/stat)
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$OUT/client_cpu_$s.txt" "${CLIENT_CPUS[@]}" build/bin/tutti load --models resnet50 --rate "$rate" \
    --slo-ms "$SLO" --duration-s "$DURATION" --warmup-s 2 --port "$PORT" --seed "$RANDOM" > "$OUT/load_$s.txt" 2>&1 || true
  awk -v b="$before" -v t0="$start" -v t1="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" \
    '{printf "%.2f\n", ($14 + $15 - b) / hz / (t1 - t0)}' /proc/$SERVER/stat > "$OUT/server_cores_$s.txt"
  kill $SAMPLER 2> /dev/null || true
  wait $SAMPLER 2> /dev/null || true
done

printf "%-6s %8s %10s %10s %8s %14s %12s %7s %7s  %s\n" share offered sent/s goodput/s bad "excess (o-p)/o" \
  max-RSS-MiB server client "sender lag"
peak=0
for s in "${shares[@]}"; do
  g=$(awk '/^total/ {print $4}' "$OUT/load_$s.txt")
  peak=$(awk -v a="$peak" -v b="${g:-0}" 'BEGIN {print (b > a ? b : a)}')
done
for s in "${shares[@]}"; do
  rate=$(awk -v s="$s" -v g="$BASE" 'BEGIN {printf "%.0f", s * g}')
  rss=$(sort -n "$OUT/rss_$s.txt" | tail -1)
  server=$(cat "$OUT/server_cores_$s.txt")
  client=$(awk -v d="$DURATION" 'END {printf "%.2f", ($1 + $2) / d}' "$OUT/client_cpu_$s.txt")
  awk -v s="$s" -v r="$rate" -v p="$peak" -v rss="${rss:-0}" -v sc="$server" -v cc="$client" '
    /^total/ {sent = $2; good = $4; bad = $5}
    /sender lag/ {split($0, a, "sender lag "); split(a[2], b, ";"); lag = b[1]}
    END {excess = r > p ? 100 * (r - p) / r : 0
         printf "%-6s %8d %10.0f %10.0f %8s %13.1f%% %12.0f %7s %7s  %s\n", s, r, sent, good, bad, excess, rss / 1024,
                sc, cc, lag}
  ' "$OUT/load_$s.txt"
done
echo "$PROFILE: peak goodput $peak r/s; BASE $BASE r/s (simulated goodput unless set); PIN=$PIN; logs in $OUT"

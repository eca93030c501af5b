#!/usr/bin/env bash
# Failover without a hangover: `tutti cluster` with 2 schedulers (a leader
# and a hot spare), 1 frontend and 8 emulated ResNet50 backends
# (bench/serve_resnet50_a100_8gpu.yaml). Under 800 r/s of Poisson load the
# leading scheduler is killed with SIGKILL; the spare's lease campaign wins
# once the leader's etcd lease (1 s) expires. A second load of 800 r/s
# starts 2 s after the new leader leads and is measured: its bad rate
# should be back at the pre-failover level. Each run is a fresh cluster.
# Printed per run: how long the cluster had no leader (kill → the spare
# leads), the requests answered UNAVAILABLE in that gap (retryable), and
# the measured load's bad rate and p99.9.
#   bench/failover.sh [RUNS] [DURATION_S]   (after scripts/build.sh; defaults 5 and 10)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
DURATION=${2:-10}
RATE=${RATE:-800}
PORT=${PORT:-8090}
OUT=${OUT:-/tmp/tutti_failover}
mkdir -p "$OUT"

now() { date +%s.%N; }
printf "%-4s %10s %12s %11s %10s %10s\n" run no-leader-s unavailable across-bad after-bad after-p99.9
for run in $(seq 1 "$RUNS"); do
  log="$OUT/cluster_$run.log"
  build/bin/tutti cluster --repo bench/emulated_repository --config bench/serve_resnet50_a100_8gpu.yaml \
    --schedulers 2 --port "$PORT" > "$log" 2>&1 &
  CLUSTER=$!
  trap 'kill -TERM $CLUSTER 2>/dev/null; wait $CLUSTER 2>/dev/null || true' EXIT
  until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done
  leader=$(pgrep -f "tutti scheduler .*scheduler-0.sock" | head -1)
  # The load across the kill: 4 s, the kill 2 s in.
  build/bin/tutti load --models resnet50 --rate "$RATE" --slo-ms 20 --duration-s 4 --warmup-s 1 \
    --port "$PORT" --seed "$run" > "$OUT/across_$run.txt" 2>&1 &
  ACROSS=$!
  sleep 2
  killed=$(now)
  kill -KILL "$leader"
  until grep -q "^\[scheduler 1\].*leading at unix time" "$log"; do sleep 0.05; done
  led=$(grep "^\[scheduler 1\].*leading at unix time" "$log" | sed 's/.*leading at unix time \([0-9.]*\).*/\1/')
  wait $ACROSS || true
  # The measured load starts 2 s after the new leader leads.
  wait_s=$(awk -v l="$led" -v n="$(now)" 'BEGIN {w = l + 2 - n; print (w > 0 ? w : 0)}')
  sleep "$wait_s"
  build/bin/tutti load --models resnet50 --rate "$RATE" --slo-ms 20 --duration-s "$DURATION" --warmup-s 0 \
    --port "$PORT" --seed "$((run + 100))" > "$OUT/after_$run.txt" 2>&1
  awk -v k="$killed" -v l="$led" -v run="$run" '
    FILENAME ~ /across/ && /^total/ {before = $5}
    FILENAME ~ /across/ && /× HTTP 503/ {unavail += $1}
    FILENAME ~ /after/ && /^total/ {after = $5; p999 = $9}
    END {printf "%-4s %10.2f %12d %11s %10s %10s\n", run, l - k, unavail, before, after, p999}
  ' "$OUT/across_$run.txt" "$OUT/after_$run.txt"
  kill -TERM $CLUSTER; wait $CLUSTER 2>/dev/null || true
  trap - EXIT
done
echo "(across-bad: the load across the kill, whose requests in the gap were refused as retryable; after: the measured load)"

#!/usr/bin/env bash
# Closed-loop autoscaling in distributed mode (issue 19 item 5): `tutti
# cluster` with bench/cluster_resnet50_1080ti_autoscale.yaml (up to 8
# emulated GTX 1080Ti backends, 1 at first) under a load that steps up and
# down — STEPS requests/s for STEP_S seconds each (defaults 100 400 1000 400
# 100 and 60: five minutes), one `tutti load` per step, back to back. The
# leading scheduler's autoscaler wants backends as the load rises and
# releases them as it falls; the cluster starts backend processes and stops
# the spares. Printed per step: the requests, whether every one was answered
# (`tutti load` fails otherwise), the bad rate and p99, and the backend
# processes running (sampled every second: least–most); then the processes
# the cluster started and stopped. Logs stay in OUT.
#   bench/distributed_autoscale.sh   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-100 400 1000 400 100}
STEP_S=${STEP_S:-60}
PORT=${PORT:-8094}
OUT=${OUT:-/tmp/tutti_distributed_autoscale}
mkdir -p "$OUT"
rm -f "$OUT"/*

build/bin/tutti cluster --repo bench/emulated_repository --config bench/cluster_resnet50_1080ti_autoscale.yaml \
  --port "$PORT" > "$OUT/cluster.log" 2>&1 &
CLUSTER=$!
SAMPLER=
stop() {
  [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null || true
  kill -TERM "$CLUSTER" 2>/dev/null || true
  wait "$CLUSTER" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 1 300); do
  curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null && break
  kill -0 "$CLUSTER" 2>/dev/null || { cat "$OUT/cluster.log"; exit 1; }
  sleep 0.2
done
# Backend processes of this cluster, once a second: "<unix time> <count>".
( while :; do echo "$(date +%s) $(pgrep -fc "tutti backend .*cluster_resnet50_1080ti_autoscale" || true)"; sleep 1; done ) \
  > "$OUT/backends.txt" 2>/dev/null &
SAMPLER=$!

printf "%-5s %8s %9s %9s %8s %9s %9s\n" step rate sent/s answered bad p99_ms backends
step=0
all_answered=yes
for rate in $STEPS; do
  step=$((step + 1))
  from=$(date +%s)
  if build/bin/tutti load --models resnet50 --rate "$rate" --slo-ms 25 --duration-s "$STEP_S" --warmup-s 0 \
    --port "$PORT" --seed "$step" > "$OUT/load_$step.txt" 2>&1; then answered=all; else answered=NO; all_answered=no; fi
  to=$(date +%s)
  awk -v from="$from" -v to="$to" -v step="$step" -v rate="$rate" -v answered="$answered" '
    FILENAME ~ /load_/ && /^total/ { sent = $2; bad = $5; p99 = $8 }
    FILENAME ~ /backends/ && $1 >= from && $1 <= to { if (lo == "" || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
    END { printf "%-5s %8s %9s %9s %8s %9s %9s\n", step, rate, sent, answered, bad, p99, lo "-" hi }
  ' "$OUT/load_$step.txt" "$OUT/backends.txt"
done
echo "backend processes started by the autoscale provider: $(grep -o "wanted: starting [0-9]*" "$OUT/cluster.log" | awk '{n += $3} END {print n + 0}')," \
  "stopped: $(grep -c "autoscale provider: .*stopping spare" "$OUT/cluster.log" || true)"
echo "every request answered in every step: $all_answered (logs in $OUT)"
[ "$all_answered" = yes ]

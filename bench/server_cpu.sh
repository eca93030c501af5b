#!/usr/bin/env bash
# Server-side CPU per answered request: emulated ResNet50 (A100 profile) on 8
# emulated GPUs (bench/serve_resnet50_a100_8gpu.yaml) at a fixed Poisson rate,
#   embedded     one `tutti serve` process
#   distributed  `tutti cluster`: etcd, 1 scheduler, 1 frontend, 8 backends
# The CPU time (user + system, from /proc) of every server process —
# etcd included — over the load run, divided by the requests the server
# answered in it (from /metrics). The load generator is not counted; it
# shares the machine's cores, so what it saw is printed separately.
#   bench/server_cpu.sh [embedded|distributed|both] [RATE] [DURATION_S]
# (after scripts/build.sh; defaults: both, 2000 r/s, 10 s; CLUSTER_FLAGS: more
# `tutti cluster` flags, e.g. --batch-cpu-policy=false; CONFIG: another serve config,
# MODELS: the models the load spreads over, default resnet50; SHARDS: `tutti serve
# --scheduler-shards`, e.g. SHARDS=2 CONFIG=bench/serve_resnet50_a100_2x4gpu.yaml
# MODELS=resnet50,resnet50_b)
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-both}
RATE=${2:-2000}
DURATION=${3:-10}
PORT=${PORT:-8040}
CONFIG=${CONFIG:-bench/serve_resnet50_a100_8gpu.yaml}
MODELS=${MODELS:-resnet50}
SHARDS=${SHARDS:-1}
TCK=$(getconf CLK_TCK)

# CPU ticks (user + system) of a process and all its descendants.
tree_ticks() {
  ps -eo pid=,ppid= | awk -v root="$1" '
    {parent[$1] = $2}
    END {
      print root
      for (p in parent) { q = parent[p]; while (q in parent && q != root) q = parent[q]; if (q == root) print p }
    }' | while read -r p; do
    [ -r "/proc/$p/stat" ] && awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || true
  done | awk '{s += $1} END {print s + 0}'
}
answered() {  # success + late over every model
  curl -s "127.0.0.1:$PORT/metrics" | awk '/^tutti_requests_total/ && /outcome="(success|late)"/ {s += $2} END {print s + 0}'
}
wait_ready() { until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done; }

measure() {  # $1: label; the server runs as $PID
  wait_ready
  sleep 1
  local t0 a0 t1 a1
  t0=$(tree_ticks "$PID"); a0=$(answered)
  build/bin/tutti load --models "$MODELS" --rate "$RATE" --slo-ms 20 --duration-s "$DURATION" --warmup-s 1 \
    --port "$PORT" > "/tmp/tutti_server_cpu_$1.txt" 2>&1
  t1=$(tree_ticks "$PID"); a1=$(answered)
  awk -v t="$((t1 - t0))" -v a="$((a1 - a0))" -v tck="$TCK" -v l="$1" -v r="$RATE" \
    'BEGIN {printf "%-11s %6d r/s: %7d answered, %6.2f CPU-s, %6.1f us of server CPU per answered request\n",
            l, r, a, t / tck, a ? 1e6 * t / tck / a : 0}'
  grep -E "^total|^SLO" "/tmp/tutti_server_cpu_$1.txt" | sed 's/^/    client: /'
}

if [ "$MODE" = embedded ] || [ "$MODE" = both ]; then
  build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" --grpc-port -1 \
    --scheduler-shards "$SHARDS" \
    > /tmp/tutti_server_cpu_serve.log 2>&1 &
  PID=$!
  trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
  measure embedded
  kill -TERM $PID; wait $PID || true
fi
if [ "$MODE" = distributed ] || [ "$MODE" = both ]; then
  build/bin/tutti cluster --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" ${CLUSTER_FLAGS:-} \
    > /tmp/tutti_server_cpu_cluster.log 2>&1 &
  PID=$!
  trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
  measure distributed
  kill -TERM $PID; wait $PID || true
fi
trap - EXIT

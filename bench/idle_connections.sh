#!/usr/bin/env bash
# Idle connections: do 10,000 open, idle keep-alive connections slow the
# answers of other clients? Emulated ResNet50 on 8 emulated A100s, SLO
# 20 ms, deferred scheduling (answers come near the objective), or with
# MODEL=zero_cost the zero-cost model under eager scheduling (answers come
# at once: any delay shows), `tutti load` at RATE r/s (Poisson) for
# DURATION_S, first without,
# then beside IDLE idle connections (a Python holder opens them and keeps
# them silent; the server's read timeout is raised to 10 minutes so that
# it keeps them), then without again. Printed per run: the client's p50 /
# p99 / p99.9 and bad rate, and the server's resident memory after it.
# Client, holder and server share this machine's cores.
#   bench/idle_connections.sh [IDLE] [RATE] [DURATION_S]   (defaults: 10000, 5000, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
IDLE=${1:-10000}
RATE=${2:-5000}
DURATION=${3:-10}
PORT=${PORT:-8070}
OUT=${OUT:-/tmp/tutti_idle}
mkdir -p "$OUT"
MODEL=${MODEL:-resnet50}
case "$MODEL" in
  resnet50) CONFIG=bench/serve_resnet50_a100_8gpu.yaml ;;
  zero_cost) CONFIG=bench/serve_zero_cost.yaml ;;
  *) echo "MODEL is resnet50 or zero_cost" >&2; exit 2 ;;
esac
# The bench config, keeping idle connections for 10 minutes.
sed 's/^http: {port: 8000, threads: 1}$/http: {port: 8000, threads: 1, read_timeout_s: 600}/' "$CONFIG" \
  > "$OUT/serve.yaml"
grep -q read_timeout_s "$OUT/serve.yaml" || { echo "bench config changed: cannot set read_timeout_s" >&2; exit 1; }

build/bin/tutti serve --repo bench/emulated_repository --config "$OUT/serve.yaml" --port "$PORT" --grpc-port -1 \
  > "$OUT/server.log" 2>&1 &
SERVER=$!
HOLDER=
trap 'kill -TERM $SERVER $HOLDER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done

run() {  # run NAME: one load run; prints its line
  build/bin/tutti load --models "$MODEL" --rate "$RATE" --slo-ms 20 --duration-s "$DURATION" --warmup-s 2 \
    --port "$PORT" --seed 7 > "$OUT/load_$1.txt" 2>&1
  local rss
  rss=$(ps -o rss= -p $SERVER)
  awk -v n="$1" -v rss="$rss" '
    /^total/ {p50 = $6; p99 = $8; p999 = $9; bad = $5}
    END {printf "%-10s %8s %8s %9s %8s %10.0f\n", n, p50, p99, p999, bad, rss / 1024}' "$OUT/load_$1.txt"
}

printf "%-10s %8s %8s %9s %8s %10s\n" run p50-ms p99-ms p99.9-ms bad RSS-MiB
run before
python3 - "$PORT" "$IDLE" > "$OUT/holder.txt" 2>&1 <<'PY' &
import resource, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(n):
    held.append(socket.create_connection(("127.0.0.1", port)))
print(f"holding {len(held)} idle connections", flush=True)
time.sleep(3600)
PY
HOLDER=$!
until grep -q holding "$OUT/holder.txt" 2> /dev/null; do
  kill -0 $HOLDER 2> /dev/null || { cat "$OUT/holder.txt"; exit 1; }
  sleep 0.2
done
run "idle-$IDLE"
kill $HOLDER; wait $HOLDER 2> /dev/null || true; HOLDER=
sleep 1
run after

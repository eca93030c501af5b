#!/usr/bin/env bash
# SLO attainment on the real clock: emulated ResNet50 (A100 profile) on 8
# emulated GPUs, SLO 20 ms, Poisson arrivals, at fixed shares of the
# simulator's goodput (`tutti sim goodput bench/resnet50_a100_8gpu_slo20.yaml`),
# or of BASE r/s (e.g. the embedded goodput, for distributed mode).
# One `tutti serve` takes the rates in turn, as a running service would;
# each run is `tutti load` for DURATION_S seconds (the first not measured).
# Printed per rate: what the client saw (bad = late + errors, p99.9) and
# who was late — the server (its own receipt-to-answer time past the SLO)
# or what lies outside it (network and client) — plus the requests the
# server dropped (HTTP 503) and the delays it planned with at the end.
#   bench/slo_attainment.sh [SHARES] [DURATION_S]   (defaults: 0.05,0.25,0.5,0.75 and 20)
# CONFIG=… picks another serve config; MODE=distributed runs `tutti cluster`.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARES=${1:-0.05,0.25,0.5,0.75}
DURATION=${2:-20}
PORT=${PORT:-8050}
CONFIG=${CONFIG:-bench/serve_resnet50_a100_8gpu.yaml}
MODE=${MODE:-embedded}
BASE=${BASE:-$(build/bin/tutti sim goodput bench/resnet50_a100_8gpu_slo20.yaml 2>/dev/null | awk '/^goodput:/ {print $2}')}
OUT=${OUT:-/tmp/tutti_slo_attainment}
mkdir -p "$OUT"

if [ "$MODE" = distributed ]; then
  build/bin/tutti cluster --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" > "$OUT/server.log" 2>&1 &
else
  build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" --grpc-port -1 \
    > "$OUT/server.log" 2>&1 &
fi
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$PORT/v2/health/ready" > /dev/null; do sleep 0.2; done

printf "%-6s %8s %9s %9s %9s %9s %9s %10s  %s\n" share rate client-bad p99.9-ms server-late outside-late dropped sent \
  "planned dispatch/response/slack/guard us"
IFS=, read -r -a shares <<< "$SHARES"
for s in "${shares[@]}"; do
  rate=$(awk -v s="$s" -v g="$BASE" 'BEGIN {printf "%.0f", s * g}')
  build/bin/tutti load --models resnet50 --rate "$rate" --slo-ms 20 --duration-s "$DURATION" --warmup-s 1 \
    --port "$PORT" --seed "$RANDOM" > "$OUT/load_$s.txt" 2>&1
  planned=$(curl -s "127.0.0.1:$PORT/metrics" | awk '/^tutti_planned_delay_seconds/ && !/data_per_request/ {
    printf "%s%.0f", sep, $2 * 1e6; sep = "/"}')
  awk -v s="$s" -v r="$rate" -v p="$planned" '
    /^total/ {sent = $2; bad = $5; p999 = $9}
    /late by the server/ {sl = $6; ol = $10; gsub(/[(),;]/, "", sl); gsub(/[(),;]/, "", ol)}
    /× HTTP 503/ {drop += $1}
    /^SLO/ {split($0, a, "measured "); split(a[2], b, " "); window = b[1]}
    END {printf "%-6s %8d %9s %9s %9s %9s %9d %10d  %s\n", s, r, bad, p999, sl, ol, drop, sent * window, p}
  ' "$OUT/load_$s.txt"
done

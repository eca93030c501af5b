#!/usr/bin/env bash
# Triton's own tools against Tutti, unmodified, each built from its public
# source outside this repository:
# - perf_analyzer (bench/tools/build_perf_analyzer.sh) over HTTP and gRPC in
#   concurrency mode, on a stateless model (lenet5), on one of typed tensors
#   (calibrated_lenet5: UINT8 in, two FP32 outputs) and on a sequence model
#   (gru_rows: --sequence-length, over gRPC also on one stream,
#   --streaming). It reads each model's configuration (gRPC: ModelConfig)
#   and the server's statistics (the statistics extension) itself. Prints,
#   per run, the throughput and p50 it saw and the server-side figures it
#   read from the statistics. Then, on a second server of the TorchScript
#   fixture `strings` (testdata/torchscript_repo: BYTES, UINT16-64 and an
#   optional input), perf_analyzer's random strings over HTTP and gRPC.
# - tritonclient, Triton's Python client (bench/tools/build_tritonclient.sh):
#   bench/tools/tritonclient_check.py's checks of get_model_config, infer,
#   get_inference_statistics and stream_infer; and its --strings checks.
# Every run and check must end without error (the exit code says).
#   bench/tools/triton_tools.sh            (after scripts/build.sh and `tutti demo`)
#   PORT=8090  the HTTP port (gRPC: PORT + 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
PA=${PA:-${PA_HOME:-$HOME/.cache/tutti/perf_analyzer}/perf_analyzer}
HTTP=${PORT:-8090}
GRPC=$((HTTP + 1))
OUT=${OUT:-/tmp/tutti_triton_tools}
rm -rf "$OUT" && mkdir -p "$OUT"
[ -x "$PA" ] || bench/tools/build_perf_analyzer.sh
bench/tools/build_tritonclient.sh > /dev/null
[ -d demo_repository/lenet5 ] || build/bin/tutti demo --repo demo_repository > /dev/null

build/bin/tutti serve --repo demo_repository --port "$HTTP" --grpc-port "$GRPC" > "$OUT/server.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2> /dev/null || true; wait $server 2> /dev/null || true' EXIT
until curl -sf "127.0.0.1:$HTTP/v2/health/ready" > /dev/null; do
  kill -0 $server 2> /dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.2
done

failed=0
# $1: a name for the run; the rest: perf_analyzer's arguments.
run() {
  local name=$1 log
  shift
  log=$OUT/$(echo "$name" | tr ' ' '_').txt
  if timeout 300 "$PA" "$@" --measurement-interval 1500 --stability-percentage 50 --max-trials 6 > "$log" 2>&1; then
    awk -v name="$name" '
      /^Concurrency:/ {printf "%-34s concurrency %-3s %10s infer/s  p50 %7.2f ms", name, $2 + 0, $4, $7 / 1000}
      /Inference count:/ && !seen_count++ {count = $3}
      /Avg request latency:/ && !seen_latency++ {server = $4}
      /^Concurrency:/ {printf "  (server: %s inferences counted, avg %s us)\n", count, server}' "$log"
  else
    echo "$name: FAILED (log: $log)"
    tail -5 "$log"
    failed=1
  fi
}

run "lenet5 over HTTP" -m lenet5 -i http -u "127.0.0.1:$HTTP" --concurrency-range 1:4:3
run "lenet5 over gRPC" -m lenet5 -i grpc -u "127.0.0.1:$GRPC" --concurrency-range 1:4:3
run "calibrated_lenet5 (UINT8) HTTP" -m calibrated_lenet5 -i http -u "127.0.0.1:$HTTP" --concurrency-range 1:4:3
run "calibrated_lenet5 (UINT8) gRPC" -m calibrated_lenet5 -i grpc -u "127.0.0.1:$GRPC" --concurrency-range 1:4:3
run "gru_rows sequences over HTTP" -m gru_rows -i http -u "127.0.0.1:$HTTP" --sequence-length 5 --concurrency-range 2
run "gru_rows sequences over gRPC" -m gru_rows -i grpc -u "127.0.0.1:$GRPC" --sequence-length 5 --concurrency-range 2
run "gru_rows over a gRPC stream" -m gru_rows -i grpc -u "127.0.0.1:$GRPC" --streaming --sequence-length 5 \
  --concurrency-range 2
echo "tritonclient:"
PYTHONPATH=${TC_HOME:-$HOME/.cache/tutti/tritonclient} /usr/bin/python3 bench/tools/tritonclient_check.py \
  "127.0.0.1:$HTTP" "127.0.0.1:$GRPC" || failed=1

# The fixture `strings`, profiled in a copy, on a server of its own.
kill -TERM $server && wait $server || true
mkdir -p "$OUT/strings_repo" && cp -r testdata/torchscript_repo/strings "$OUT/strings_repo/"
build/bin/tutti profile --repo "$OUT/strings_repo" --model strings > "$OUT/strings_profile.log" 2>&1
build/bin/tutti serve --repo "$OUT/strings_repo" --port "$HTTP" --grpc-port "$GRPC" > "$OUT/strings_server.log" 2>&1 &
server=$!
until curl -sf "127.0.0.1:$HTTP/v2/health/ready" > /dev/null; do
  kill -0 $server 2> /dev/null || { cat "$OUT/strings_server.log" >&2; exit 1; }
  sleep 0.2
done
run "strings (BYTES, UINT16-64) HTTP" -m strings -i http -u "127.0.0.1:$HTTP" --string-length 12 \
  --concurrency-range 1:4:3
run "strings (BYTES, UINT16-64) gRPC" -m strings -i grpc -u "127.0.0.1:$GRPC" --string-length 12 \
  --concurrency-range 1:4:3
echo "tritonclient, strings:"
PYTHONPATH=${TC_HOME:-$HOME/.cache/tutti/tritonclient} /usr/bin/python3 bench/tools/tritonclient_check.py \
  --strings "127.0.0.1:$HTTP" "127.0.0.1:$GRPC" || failed=1
exit $failed

#!/usr/bin/env bash
# `tutti offline` against a running `tutti serve`: an emulated model of
# Fashion-MNIST's shape on one emulated A100 (l(b) = 1-2 ms: peak 4,000 r/s
# within its 20 ms objective). 1) Alone, the job answers all 200 images of
# an IDX file, one CSV row each, in order. 2) Beside online load at 75% of
# the peak for 5 s, it pauses, then resumes and still answers every image.
#   src/tutti/cli/offline_cli_test.sh build/bin/tutti
set -euo pipefail
source "$(dirname "$0")/../testing/start_serve.sh"
tutti=$(realpath "$1")
work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && { kill -TERM "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/repo/images/1"
cat > "$work/repo/images/1/config.yaml" << 'YAML'
name: images
platform: emulated
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
latency_objective_ms: 20
profiles:
  a100: {batch: [1, 8], latency_us: [1000, 2000]}
YAML
cat > "$work/serve.yaml" << 'YAML'
policy: eager
executors:
  - {kind: emulated, count: 1, profile: a100, models: [images]}
YAML
# An IDX file of 200 28x28 images: magic 0x00000803, dims 200, 28, 28.
{ printf '\x00\x00\x08\x03\x00\x00\x00\xc8\x00\x00\x00\x1c\x00\x00\x00\x1c'; head -c $((200 * 784)) /dev/urandom; } > "$work/images.idx"

start_serve "$tutti" "$work/serve.log" --repo "$work/repo" --config "$work/serve.yaml" --grpc-port -1
server=$served_pid
port=$served_port
curl -s "127.0.0.1:$port/v2/models/images/stats" | grep -q '"peak_rps":4000.0' || { echo "FAIL: peak_rps"; exit 1; }

echo "== 1. alone"
"$tutti" offline --model images --input "$work/images.idx" --output "$work/alone.csv" --port "$port" --poll-ms 100
[ "$(head -1 "$work/alone.csv")" = "index,status,class,output_0,output_1,output_2,output_3,output_4,output_5,output_6,output_7,output_8,output_9" ] ||
  { echo "FAIL: header"; head -1 "$work/alone.csv"; exit 1; }
[ "$(grep -c ',ok,' "$work/alone.csv")" = 200 ] || { echo "FAIL: not 200 answers"; exit 1; }
[ "$(tail -n +2 "$work/alone.csv" | cut -d, -f1 | tr '\n' ' ')" = "$(seq -s ' ' 0 199) " ] || { echo "FAIL: order"; exit 1; }

echo "== 2. beside online load at 75% of the peak"
"$tutti" load --models images --rate 3000 --slo-ms 20 --duration-s 5 --warmup-s 0 --port "$port" > "$work/load.log" 2>&1 &
load=$!
sleep 1
"$tutti" offline --model images --input "$work/images.idx" --output "$work/busy.csv" --port "$port" --poll-ms 200 \
  --in-flight 1 2> "$work/busy.err"
cat "$work/busy.err"
wait "$load"
grep -q 'paused' "$work/busy.err" || { echo "FAIL: never paused"; exit 1; }
[ "$(grep -c ',ok,' "$work/busy.csv")" = 200 ] || { echo "FAIL: not 200 answers: it did not resume"; exit 1; }
! "$tutti" offline --model nope --input "$work/images.idx" --output "$work/x.csv" --port "$port" 2> "$work/err" &&
  grep -q "nope" "$work/err" || { echo "FAIL: unknown model"; cat "$work/err"; exit 1; }
echo PASS

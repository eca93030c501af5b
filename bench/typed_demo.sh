#!/usr/bin/env bash
# The demo's model of typed tensors, calibrated_lenet5 (raw UINT8 pixels in;
# FP32 logits and a calibrated confidence out), served by `tutti serve`:
# its accuracy on the 10,000 test images over HTTP (JSON data, binary data)
# and gRPC (raw_input_contents, uint_contents) against the accuracy
# `tutti train` measured offline through the executor, and how well the
# served confidence is calibrated (its mean, its expected calibration error).
#   bench/typed_demo.sh [--write-docs]
# (after scripts/build.sh and `tutti demo`; about 2 minutes). --write-docs
# writes docs/benchmarks/typed_demo.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
PY=/usr/bin/python3  # Debian's, with python3-grpcio and numpy
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
model=calibrated_lenet5
config=demo_repository/$model/1/config.yaml
[ -f "$config" ] || { echo "run build/bin/tutti demo first" >&2; exit 1; }

cat > "$work/serve.yaml" <<YAML
http: {port: 18410}
grpc: {port: 18411}
executors: [{kind: torch, models: [$model]}]
YAML
build/bin/tutti serve --repo demo_repository --config "$work/serve.yaml" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 300); do curl -sf localhost:18410/v2/health/ready > /dev/null && break; sleep 0.2; done
offline=$(sed -n 's/^accuracy: //p' "$config")
{
echo "Offline (\`tutti train\`, through the torch executor): accuracy **$offline**."
echo
echo "| encoding | accuracy served | equal to offline | mean confidence | ECE, served confidence | ECE at temperature 1 |"
echo "|---|---|---|---|---|---|"
$PY bench/tools/typed_accuracy.py 127.0.0.1 18410 18411 "$model" |
  awk -v off="$offline" '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, ($2 + 0 == off + 0) ? "yes" : "no", $3, $4, $5}'
} | tee "$work/out.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page typed_demo "A model of typed tensors, served" \
    "Does the demo's model of typed tensors (UINT8 pixels in; FP32 logits and a calibrated confidence out) answer over both protocols and every encoding with the accuracy it has offline, and is its confidence calibrated?" \
    "bench/typed_demo.sh --write-docs" \
    "One \`tutti serve\` of calibrated_lenet5 on a torch executor; bench/tools/typed_accuracy.py sends the 10,000 Fashion-MNIST test images as raw bytes in batches of 32 over each encoding and compares the argmax of the logits with the labels; the offline accuracy is the one \`tutti train\` recorded in the config (the same images through the executor in batches of 500). ECE: expected calibration error over 15 equal-width bins (Guo et al. 2017), of the served confidence (temperature fitted by \`tutti train\` on 5,000 held-out training images) and of max softmax(logits) at temperature 1, on the test images." \
    "$work/out.md"
fi

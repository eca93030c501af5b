#!/usr/bin/env bash
# ONNX models on the import (platform onnx):
#   1. conformance with ONNX's own node tests (libonnx-testdata);
#   2. torchvision's ResNet18 and MobileNetV2 (random weights) against
#      PyTorch's outputs for a batch of 2, and their l(b) by `tutti profile`
#      (b = 1, 2, 4, 8, 16);
#   3. the demo's ONNX twins (mlp, lenet5, resnet_small exported from the
#      weights `tutti demo` trained) served beside the built-in models: the
#      largest difference between their answers to the same images over
#      HTTP (JSON) and gRPC, and each one's accuracy on 2,000 test images
#      over both protocols (`tutti load`).
#   bench/onnx_models.sh [--write-docs]
# (after scripts/build.sh and `tutti demo`; about 5 minutes). --write-docs
# writes docs/benchmarks/onnx.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
PY=/usr/bin/python3  # Debian's, with python3-torch and python3-onnx
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -f demo_repository/lenet5/1/model.pt ] || { echo "run build/bin/tutti demo first" >&2; exit 1; }

{
echo "### ONNX's node tests"
echo
build/bin/tutti onnx conformance > "$work/conformance.txt" || true
sed -n '/^ONNX node tests/,$p' "$work/conformance.txt" | sed 's/^/    /'
echo

echo "### torchvision models against PyTorch"
echo
$PY tools/export_onnx.py torchvision "$work/tv" > /dev/null 2>&1
build/bin/tutti onnx conformance --data "$work/tv/tests" --verbose 2>&1 > /dev/null | sed 's/^/    /'
echo
echo "| model | parameters | l(1) ms | l(2) ms | l(4) ms | l(8) ms | l(16) ms |"
echo "|---|---|---|---|---|---|---|"
for m in resnet18 mobilenet_v2; do
  build/bin/tutti profile --repo "$work/tv/repository" --model "$m" --max-batch 16 --repeats 5 > /dev/null 2>&1
  params=$(build/bin/tutti onnx inspect "$work/tv/repository/$m/1/model.onnx" | sed -n 's/.*opset [0-9]*, \([0-9]*\) parameters/\1/p')
  awk -v m="$m" -v p="$params" '
    /batch:/ {gsub(/[][,]/, " "); for (i = 2; i <= NF; i++) b[i - 1] = $i; n = NF - 1}
    /latency_us:/ {gsub(/[][,]/, " "); for (i = 2; i <= NF; i++) l[b[i - 1]] = $i / 1000}
    END {printf "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", m, p, l[1], l[2], l[4], l[8], l[16]}' \
    "$work/tv/repository/$m/1/config.yaml"
done
echo

echo "### The demo's ONNX twins, served"
echo
cp -r demo_repository "$work/demo"
rm -rf "$work"/demo/*_onnx
$PY tools/export_onnx.py demo "$work/demo" > /dev/null 2>&1
build/bin/tutti profile --repo "$work/demo" --model mlp_onnx > /dev/null 2>&1
build/bin/tutti profile --repo "$work/demo" --model lenet5_onnx > /dev/null 2>&1
build/bin/tutti profile --repo "$work/demo" --model resnet_small_onnx > /dev/null 2>&1
build/bin/tutti serve --repo "$work/demo" --port 18400 --grpc-port 18401 > "$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2> /dev/null; wait "$server" 2> /dev/null' EXIT  # this block is a subshell (| tee)
for _ in $(seq 300); do curl -sf localhost:18400/v2/health/ready > /dev/null && break; sleep 0.2; done
echo "| model | twin | largest difference, HTTP (16 images; median of 5 [worst]) | the same, gRPC | accuracy HTTP | accuracy gRPC | twin's HTTP | twin's gRPC |"
echo "|---|---|---|---|---|---|---|---|"
for m in mlp lenet5 resnet_small; do
  # Five rounds: the median difference per protocol, the largest in brackets.
  for _ in 1 2 3 4 5; do $PY bench/tools/compare_twins.py 127.0.0.1 18400 18401 "$m" "${m}_onnx"; done > "$work/d"
  diffs=$(for col in 1 3; do cut -d' ' -f$col "$work/d" | sort -g | awk '{v[NR] = $1} END {printf "%s [%s]\n", v[3], v[5]}'; done |
          paste -sd'|' | sed 's/|/ | /')
  acc() {  # $1 model, $2 protocol, $3 port
    build/bin/tutti load --models "$1" --protocol "$2" --port "$3" --rate 400 --duration-s 6 --warmup-s 1 \
      --max-per-model 2000 --slo-ms 1000 2> /dev/null | awk -v m="$1" '$1 == m {print $10}'
  }
  echo "| $m | ${m}_onnx | $diffs | $(acc "$m" http 18400) | $(acc "$m" grpc 18401) | $(acc "${m}_onnx" http 18400) | $(acc "${m}_onnx" grpc 18401) |"
done
} | tee "$work/out.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page onnx "ONNX models" \
    "Does the ONNX import compute what ONNX and PyTorch say a model computes, and do the demo's ONNX twins answer as the built-in models do over both protocols?" \
    "bench/onnx_models.sh --write-docs" \
    "ONNX's backend node tests compared within ONNX's tolerance (rtol 1e-3, atol 1e-7); torchvision's models (random weights, seed fixed) against PyTorch's outputs for a batch of 2, then profiled (median of 5 runs per batch, this CPU, 2 threads); the demo twins exported from the trained weights with tools/export_onnx.py, served with the built-in models by one \`tutti serve\`, the same 16 test images sent to both in five rounds (largest absolute difference of the logits: median of the rounds, the worst in brackets), and 2,000 test images each over HTTP and gRPC by \`tutti load\` (accuracy against the labels)." \
    "$work/out.md"
fi

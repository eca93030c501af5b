#!/usr/bin/env bash
# ParM's accuracy table (ParM section 5): parity models for the demo MLP and
# LeNet-5 at k = 2, 3, 4 (sum encoder; concat too for the MLP at k = 2, 4),
# trained in C++ into demo_repository, then `tutti eval-parity` on the 10,000
# test images: A_a, A_d, A_o(f) for f = 0, 0.05, 0.1, 0.2 and the default
# bound. Parity models already in the repository are kept (--retrain: train
# again). About 5 minutes on 2 cores.
#   bench/parm_accuracy.sh [--retrain]      (builds, and makes the demo repository if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/bin/tutti demo > /dev/null
train() {  # deployed k encoder
  local name="$1-parity-k$2-$3"
  if [[ "${RETRAIN:-0}" == 1 || ! -f "demo_repository/$name/1/config.yaml" ]]; then
    build/bin/tutti train-parity --deployed "$1" --k "$2" --encoder "$3" > /dev/null
  else
    echo "$name: trained already" >&2
  fi
}
[[ "${1:-}" == "--retrain" ]] && RETRAIN=1
for k in 2 3 4; do
  train mlp "$k" sum
  train lenet5 "$k" sum
done
train mlp 2 concat
train mlp 4 concat
mkdir -p results
build/bin/tutti eval-parity --csv results/parm_accuracy.csv

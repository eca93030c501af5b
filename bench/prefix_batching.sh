#!/usr/bin/env bash
# Prefix batching (Nexus §6.3, Figure 15) on this CPU with real models: 16
# specialists fine-tuned in their last layer from the demo's small ResNet
# (so they share its first four layer stages; LeNet-5 computes too little
# on this CPU for its executor to be what limits the rate), trained once
# into build/prefix_repository, then `tutti bench prefix`: N = 2, 4, 8, 16 of
# them on one torch executor with and without prefix batching, the highest
# rate at which at most 1% of requests are late, dropped or failed
# (requests submitted in-process: what the serving core does, without HTTP
# or a client), and the parameters the executor holds.
#   bench/prefix_batching.sh [SLO_MS] [PROBE_S] [SIZES]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SLO=${1:-10}
PROBE=${2:-2}
SIZES=${3:-2,4,8,16}
REPO=build/prefix_repository_resnet
build/bin/tutti demo --repo demo_repository > /dev/null
if [[ ! -f $REPO/s15/1/config.yaml ]]; then
  rm -rf "$REPO" && mkdir -p "$REPO" && cp -r demo_repository/resnet_small "$REPO/"
  for i in $(seq 0 15); do  # each from its own seed
    echo "fine-tuning specialist s$i of 16…" >&2
    build/bin/tutti train --arch resnet_small --repo "$REPO" --name "s$i" --init-from resnet_small --last-stage-only \
      --epochs 1 --limit 3000 --seed "$((i + 1))" --max-batch-size 128 > /dev/null 2>&1
    build/bin/tutti profile --repo "$REPO" --model "s$i" --repeats 5 > /dev/null 2>&1
  done
fi
for policy in deferred eager; do
  echo "policy $policy:"
  build/bin/tutti bench prefix --repo "$REPO" --slo-ms "$SLO" --probe-s "$PROBE" --sizes "$SIZES" \
    --policy "$policy" --tolerance 0.1
done

#!/usr/bin/env bash
# ParM's tail-latency experiment (ParM section 6.2): no redundancy vs
# Equal-Resources vs ParM at k = 2, 3, 4 under injected slowdowns.
# 1) emulated: 12 instances of a 10 ms model, 270 r/s Poisson, 100,000
#    requests per setup, 4 slowdown episodes under way (virtual time, seconds);
# 2) torch: the demo MLP and its k = 2 parity model on this CPU, 4 instances,
#    1,000 r/s, 20,000 requests per setup (about a minute), with accuracy.
#   bench/parm_tail.sh       (after bench/parm_accuracy.sh, which trains the parity models)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results
echo "== emulated instances (virtual time)"
build/bin/tutti bench parm --k 2,3,4 --csv results/parm_tail_emulated.csv
echo
echo "== real CPU instances: demo MLP + mlp-parity-k2-sum"
build/bin/tutti bench parm --executor torch --k 2 --csv results/parm_tail_torch.csv

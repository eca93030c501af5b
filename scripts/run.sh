#!/usr/bin/env bash
# The README's main command: set up, build, and run Tutti's main job —
# serving the demo models. It builds the demo model repository
# (demo_repository/: trains the demo models on Fashion-MNIST if absent,
# profiles them on this CPU), then serves it over KServe v2 HTTP on
# 127.0.0.1:8000 and prints curl commands to try. Ctrl-C stops gracefully.
# Extra arguments go to `tutti serve` (see `build/bin/tutti serve --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/bin/tutti demo --repo demo_repository
exec build/bin/tutti serve --repo demo_repository "$@"

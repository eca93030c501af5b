#!/usr/bin/env bash
# The README's main command: set up, build, and run Tutti's main job.
# Today that builds the demo model repository (demo_repository/): it trains
# the demo models on Fashion-MNIST if absent, profiles them on this CPU and
# prints their table. Extra arguments go to `tutti demo` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/bin/tutti demo --repo demo_repository "$@"

#!/usr/bin/env bash
# The README's test command: set up, build, and run every test with CTest,
# then fuzz every parser that takes outside bytes for FUZZ_SECONDS each
# (default 5; 0 skips; scripts/fuzz.sh: a clang build of its own, build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${FUZZ_SECONDS:-5}" != 0 ]; then
  scripts/fuzz.sh all "${FUZZ_SECONDS:-5}"
fi

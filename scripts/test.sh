#!/usr/bin/env bash
# The README's test command: set up, build, and run every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"

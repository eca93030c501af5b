#!/usr/bin/env bash
# Installs Tutti's Debian packages (if missing) and builds everything into
# build/. The `tutti` binary lands in build/bin/tutti.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > build.log 2>&1 || { cat build.log; exit 1; }
echo "build: compiling (first build takes a few minutes; libtorch units are slow)"
cmake --build build -j "$(nproc)"
rm -f build.log

#!/usr/bin/env bash
# Builds Tutti with a sanitizer into its own folder (build-<kind>/) and runs
# tests under it:
#   scripts/sanitize.sh asan   [REGEX]   AddressSanitizer + LeakSanitizer: every test
#   scripts/sanitize.sh ubsan  [REGEX]   UndefinedBehaviorSanitizer (aborts on the first report): every test
#   scripts/sanitize.sh tsan   [REGEX]   ThreadSanitizer: the multi-threaded parts — the serving core,
#                                        the frontends (HTTP, gRPC), the wire, the distributed nodes
#                                        and processes, the delay model, the load generator
# REGEX (a CTest -R pattern) picks the tests instead. The first build takes a while
# (every translation unit, libtorch ones included); later ones are incremental.
# Debian's libraries (gRPC, Abseil, protobuf, libtorch) are not instrumented;
# see the tsan case below for how ThreadSanitizer treats them.
set -euo pipefail
cd "$(dirname "$0")/.."
KIND=${1:-}
case "$KIND" in
  asan)
    FLAGS="-fsanitize=address -fno-omit-frame-pointer"
    SELECT='.'
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
    ;;
  ubsan)
    FLAGS="-fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    SELECT='.'
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ;;
  tsan)
    FLAGS="-fsanitize=thread"
    SELECT='InferenceCore|ReplicatedExecutor|StatefulGraph|SequenceEngine|StatefulServer|StatefulCluster|RequestTable|GraphEngine|GraphRouting|ParmStage|MeasuredDelays|Kserve|Server|Security|Admission|Wire|DistributedNodes|Distributed|ClusterTls|Etcd|LoadGenerator|DelayModel|SerializedClock|Clock'
    # Debian's gRPC, Abseil, protobuf and libtorch are not instrumented:
    # ThreadSanitizer cannot see how their own threads synchronize, so the
    # calls they make (memmove, epoll, close, …) are not checked
    # (ignore_noninstrumented_modules); without it, it reported races between
    # gRPC's own threads and inside Abseil's deadlock detector, and nothing
    # else. gRPC's inline half still reports its own hand-offs:
    # scripts/tsan.supp suppresses those (see there).
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0:ignore_noninstrumented_modules=1:suppressions=$PWD/scripts/tsan.supp}
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|ubsan|tsan [TEST_REGEX]" >&2
    exit 2
    ;;
esac
scripts/setup.sh
BUILD=build-$KIND
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$FLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" -DCMAKE_SHARED_LINKER_FLAGS="$FLAGS" > "$BUILD.log" 2>&1 || { cat "$BUILD.log"; exit 1; }
echo "sanitize: building $BUILD ($KIND)"
cmake --build "$BUILD" -j "$(nproc)"
SELECT=${2:-$SELECT}
echo "sanitize: running the tests matching '$SELECT' under $KIND"
start=$(date +%s)
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" -R "$SELECT"
echo "sanitize: $KIND tests took $(( $(date +%s) - start )) s"

#!/usr/bin/env bash
# Fuzzes the parsers that take outside bytes with libFuzzer (clang, with
# AddressSanitizer and UndefinedBehaviorSanitizer), each for SECONDS:
#   kserve_json   KServe v2 JSON requests (and the binary extension) and responses
#   http_kserve   the HTTP request path: routes, headers, bodies into the codec
#   grpc_infer    gRPC ModelInfer request bytes and their checks
#   config        serve configs, model configs, simulator experiments (YAML)
#   wire          the internal protocol's frames and messages
#   scripts/fuzz.sh [TARGET|all] [SECONDS]   (defaults: all, 60)
# Builds into build-fuzz/. Each target starts from its seed corpus
# (fuzz/corpus/TARGET/, committed) and grows a working copy in
# build-fuzz/corpus/TARGET/; a crash, leak or hang (-timeout, 10 s) stops
# the run and leaves its input in build-fuzz/ (replay it with the target
# binary and the input's path). Prints the executions each target ran.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:-all}
SECONDS_EACH=${2:-60}
ALL="kserve_json http_kserve grpc_infer config wire"
[ "$TARGET" = all ] && TARGETS=$ALL || TARGETS=$TARGET
for t in $TARGETS; do
  case " $ALL " in *" $t "*) ;; *) echo "unknown fuzz target '$t' (one of: $ALL)" >&2; exit 2 ;; esac
done
scripts/setup.sh
command -v clang++ > /dev/null || { echo "fuzzing needs clang (apt-get install clang)" >&2; exit 1; }
BUILD=build-fuzz
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTUTTI_FUZZ=ON \
  > "$BUILD.log" 2>&1 || { cat "$BUILD.log"; exit 1; }
echo "fuzz: building $(for t in $TARGETS; do printf '%s_fuzz ' "$t"; done)"
cmake --build "$BUILD" -j "$(nproc)" --target $(for t in $TARGETS; do printf '%s_fuzz ' "$t"; done)
total=0
for t in $TARGETS; do
  mkdir -p "$BUILD/corpus/$t"
  log="$BUILD/fuzz_$t.log"
  echo "fuzz: $t for $SECONDS_EACH s"
  (cd "$BUILD" && "./fuzz/${t}_fuzz" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=4096 \
     -print_final_stats=1 "corpus/$t" "../fuzz/corpus/$t") > "$log" 2>&1 || {
    tail -40 "$log"
    echo "fuzz: $t FAILED (log: $log)" >&2
    exit 1
  }
  runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  echo "fuzz: $t ran ${runs:-?} inputs, no crash, leak or hang"
  total=$((total + ${runs:-0}))
done
echo "fuzz: $total inputs in all"

#!/usr/bin/env bash
# Builds Triton's own load tool, perf_analyzer, from its public source,
# outside this repository, so that Tutti can be measured with it unmodified:
#   bench/tools/build_perf_analyzer.sh            # then: $PA_HOME/perf_analyzer --help
#
# Sources: the GitHub repositories triton-inference-server/{perf_analyzer,
# client, common, core}, cloned into $PA_HOME/src (or taken from
# TRITON_SRC_DIR, a folder holding those four checkouts). The build is a
# plain compile of their C++ sources against Debian's gRPC, protobuf, curl,
# RapidJSON and libb64 (no CUDA, no CMake super-build, which would clone
# more); nothing of theirs is copied into Tutti.
#   PA_HOME          where it is built (default ~/.cache/tutti/perf_analyzer)
#   TRITON_SRC_DIR   existing checkouts to use instead of cloning
set -euo pipefail
PA_HOME=${PA_HOME:-$HOME/.cache/tutti/perf_analyzer}
SRC=${TRITON_SRC_DIR:-$PA_HOME/src}
mkdir -p "$PA_HOME" "$SRC"
if [[ -x $PA_HOME/perf_analyzer && -z ${REBUILD:-} ]]; then
  echo "perf_analyzer: already built: $PA_HOME/perf_analyzer (REBUILD=1 to build again)"
  exit 0
fi

need=()
for pkg in libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libcurl4-openssl-dev \
  rapidjson-dev libb64-dev zlib1g-dev git g++; do
  dpkg -s "$pkg" > /dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "perf_analyzer: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" > /dev/null
fi

for repo in perf_analyzer client common core; do
  if [[ ! -d $SRC/$repo ]]; then
    echo "perf_analyzer: cloning triton-inference-server/$repo"
    git clone -q --depth 1 "https://github.com/triton-inference-server/$repo.git" "$SRC/$repo"
  fi
done

PA=$SRC/perf_analyzer/src
LIB=$SRC/client/src/c++/library
GEN=$PA_HOME/gen
OBJ=$PA_HOME/obj
mkdir -p "$GEN" "$OBJ"

echo "perf_analyzer: generating the protocol's code"
protoc -I "$SRC/common/protobuf" --cpp_out="$GEN" --grpc_out="$GEN" \
  --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
  "$SRC/common/protobuf/grpc_service.proto" "$SRC/common/protobuf/model_config.proto" "$SRC/common/protobuf/health.proto"

sources=(
  "$GEN/grpc_service.pb.cc" "$GEN/grpc_service.grpc.pb.cc" "$GEN/model_config.pb.cc" "$GEN/health.pb.cc"
  "$GEN/health.grpc.pb.cc"
  "$LIB/common.cc" "$LIB/grpc_client.cc" "$LIB/http_client.cc" "$LIB/cencode.cc" "$LIB/json_utils.cc"
  "$LIB/shm_utils.cc"
  "$PA/client_backend/client_backend.cc" "$PA/client_backend/triton/triton_client_backend.cc"
)
while read -r f; do sources+=("$PA/$f"); done < <(
  cd "$PA" && sed -n '/^set($/,/^)$/p' CMakeLists.txt | awk '/PERF_ANALYZER_SRCS/ {on = 1; next} on && /^)/ {exit} on {print $1}')
sources+=("$PA/main.cc")

flags=(-std=c++20 -O2 -DNDEBUG -DTRITON_ENABLE_ZLIB=1 -DDOCTEST_CONFIG_DISABLE -DPERF_ANALYZER_VERSION=source -DGIT_SHA=unknown
  -I "$GEN" -I "$LIB" -I "$PA" -I "$PA/client_backend" -I "$SRC/common/include" -I "$SRC/core/include"
  -I "$SRC/client/src/c++/library" -w)
echo "perf_analyzer: compiling ${#sources[@]} files (a few minutes)"
objects=()
jobs=0
for f in "${sources[@]}"; do
  o=$OBJ/$(echo "${f#"$SRC"/}" | tr '/' '_').o
  objects+=("$o")
  if [[ ! -f $o || $f -nt $o ]]; then
    g++ "${flags[@]}" -c "$f" -o "$o" &
    jobs=$((jobs + 1))
    if ((jobs >= $(nproc))); then wait -n; jobs=$((jobs - 1)); fi
  fi
done
wait
g++ -o "$PA_HOME/perf_analyzer" "${objects[@]}" $(pkg-config --libs grpc++ protobuf libcurl zlib) -lb64 -lpthread -ldl
echo "perf_analyzer: built $PA_HOME/perf_analyzer"

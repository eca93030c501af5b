#!/usr/bin/env bash
# Assembles Triton's Python client, tritonclient (HTTP and gRPC), from its
# public source, outside this repository, so that Tutti can be checked with
# it unmodified (no PyPI: Debian's grpcio, protobuf, numpy, rapidjson and
# geventhttpclient, and its protocol compiled by Debian's protoc):
#   bench/tools/build_tritonclient.sh     # then: PYTHONPATH=$TC_HOME /usr/bin/python3 -c 'import tritonclient.grpc'
#
# Sources: the GitHub repositories triton-inference-server/{client,common},
# cloned into $PA_HOME/src (or taken from TRITON_SRC_DIR, as
# build_perf_analyzer.sh does). Nothing of theirs is copied into Tutti.
#   TC_HOME          where it is assembled (default ~/.cache/tutti/tritonclient)
#   PYTHON           Debian's Python, which sees those packages (default /usr/bin/python3)
set -euo pipefail
PA_HOME=${PA_HOME:-$HOME/.cache/tutti/perf_analyzer}
SRC=${TRITON_SRC_DIR:-$PA_HOME/src}
TC_HOME=${TC_HOME:-$HOME/.cache/tutti/tritonclient}
PYTHON=${PYTHON:-/usr/bin/python3}
if [[ -f $TC_HOME/tritonclient/grpc/service_pb2.py && -z ${REBUILD:-} ]]; then
  echo "tritonclient: already assembled in $TC_HOME (REBUILD=1 to do it again)"
  exit 0
fi

need=()
for pkg in python3-numpy python3-grpcio python3-protobuf python3-rapidjson python3-geventhttpclient \
  python3-packaging protobuf-compiler protobuf-compiler-grpc git; do
  dpkg -s "$pkg" > /dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "tritonclient: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" > /dev/null
fi
mkdir -p "$SRC"
for repo in client common; do
  if [[ ! -d $SRC/$repo ]]; then
    echo "tritonclient: cloning triton-inference-server/$repo"
    git clone -q --depth 1 "https://github.com/triton-inference-server/$repo.git" "$SRC/$repo"
  fi
done

rm -rf "$TC_HOME" && mkdir -p "$TC_HOME"
cp -r "$SRC/client/src/python/library/tritonclient" "$TC_HOME/"
# The package's generated modules, named as its own build names them:
# model_config_pb2, service_pb2 and service_pb2_grpc.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$SRC/common/protobuf/model_config.proto" "$work/"
cp "$SRC/common/protobuf/grpc_service.proto" "$work/service.proto"
protoc -I "$work" --python_out="$TC_HOME/tritonclient/grpc" --grpc_out="$TC_HOME/tritonclient/grpc" \
  --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" "$work/model_config.proto" "$work/service.proto"
sed -i 's/^import model_config_pb2/from tritonclient.grpc import model_config_pb2/; s/^import service_pb2/from tritonclient.grpc import service_pb2/' \
  "$TC_HOME"/tritonclient/grpc/*_pb2*.py
PYTHONPATH=$TC_HOME "$PYTHON" -c 'import tritonclient.grpc, tritonclient.http' 2> /dev/null ||
  { echo "tritonclient: the assembled package does not import" >&2; exit 1; }
echo "tritonclient: assembled in $TC_HOME (PYTHONPATH=$TC_HOME)"

#!/usr/bin/env bash
# Installs every Debian package Tutti needs to build, test and run. Idempotent:
# when everything is present it only checks and returns (no network access).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libabsl-dev libyaml-cpp-dev zlib1g-dev
  libboost-dev rapidjson-dev   # HTTP (Boost.Beast) and JSON for the KServe v2 frontend
  libssl-dev openssl           # TLS on the listeners (openssl: making certificates by hand)
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev            # models, training, profiling (CPU libtorch 1.13)
  libopenblas0-pthread    # fast BLAS for libtorch (Debian defaults to the reference BLAS)
  libgoogle-perftools-dev # tcmalloc: the `tutti` binary's allocator (less CPU per request than glibc's)
  dataset-fashion-mnist   # /usr/share/datasets/fashion-mnist
  gnuplot-nox curl             # plots from `tutti sim`
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # KServe v2 gRPC, internal RPCs
  etcd-server etcd-client      # the coordination store of distributed Tutti (tests start their own)
  stress-ng                    # a background CPU hog for the serving benchmarks (HOG=1)
  time                         # /usr/bin/time: the client's CPU in bench/overload.sh
  clang libclang-rt-dev        # libFuzzer and the sanitizers (scripts/fuzz.sh, scripts/sanitize.sh)
  coinor-libcbc-dev            # COIN-OR CBC: INFaaS's variant-scaling ILP (planner/variant_scaling.h)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"

#!/usr/bin/env bash
# Installs every Debian package Tutti needs to build, test and run, the
# console's npm packages (src/tutti/console/web: uPlot, embedded in the
# binary; puppeteer-core, which drives Debian's chromium in the console's
# browser tests), and those of the Kubernetes manifests' schema check
# (deploy/kubernetes/check: kubernetes-models, yaml). Idempotent: when everything is present it only checks and
# returns (no network access).
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
  libonnx-dev libonnx-testdata # ONNX models (the ModelProto schema) and ONNX's own conformance tests
  python3-torch python3-torchvision python3-onnx  # tools/export_onnx.py: ONNX exports, offline
  python3-grpcio               # bench/tools: gRPC clients of the ONNX and drain benchmarks
  chromium                     # headless browser tests of the console and its reports
  iproute2 iptables libnetfilter-queue-dev  # the network-namespace harness: links, loss, delay (scripts/netns_cluster.sh)
)
# Node.js and npm (the console's npm packages): Debian's, unless the machine
# already has them (e.g. from NodeSource).
command -v npm > /dev/null || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages, as each package-lock.json pins them: the console's (uPlot,
# puppeteer-core) and the Kubernetes manifests' schema check
# (kubernetes-models, yaml).
for dir in src/tutti/console/web deploy/kubernetes/check; do
  pkg="$(dirname "$0")/../$dir"
  stamp="$pkg/node_modules/.installed-by-setup"
  if [ ! -f "$stamp" ] || [ "$pkg/package-lock.json" -nt "$stamp" ]; then
    echo "setup: installing the npm packages of $dir"
    npm ci --prefix "$pkg" --no-audit --no-fund --loglevel=error
    touch "$stamp"
  fi
done
echo "setup: done"

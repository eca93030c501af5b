#!/usr/bin/env bash
# The console and the HTML reports in a real browser: Debian's headless
# chromium, driven over the DevTools protocol by web/browser_check.mjs.
#   1. `tutti serve` (8 emulated A100s) under load from `tutti load`: /console
#      lists the model, shows non-zero live rates and drawn charts.
#   1b. 40 models: the 25 busiest shown, every one behind a fold.
#   2. The same over TLS with admin tokens (load from curl): refused without
#      credentials, shown with them (HTTP Basic, the token as password).
#   3. Reports: `tutti sim run --html` of Symphony Figure 15's changing
#      workload (an hour of virtual time; the rates scaled to 1/40 to keep the
#      test short) and `tutti load --find-goodput --html`, opened from disk
#      with the network off.
# Usage: browser_test.sh TUTTI_BINARY [OUT_DIR]   (OUT_DIR keeps the
# screenshots and reports; default: a temporary directory, removed)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../testing/start_serve.sh"
root="$(cd "$here/../../.." && pwd)"
tutti="$1"
out="${2:-}"
work="$(mktemp -d)"
[ -n "$out" ] || out="$work/out"
mkdir -p "$out"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
check() { node "$here/web/browser_check.mjs" "$@"; }
cd "$root"

echo "== 1. the console of a server under load"
start_serve "$tutti" "$work/serve1.log" --repo bench/emulated_repository \
  --config bench/serve_resnet50_a100_8gpu.yaml --grpc-port -1
pids+=("$served_pid")
port=$served_port
"$tutti" load --models resnet50 --rate 400 --slo-ms 20 --duration-s 40 --warmup-s 0 --port "$port" \
  > "$work/load1.log" 2>&1 &
pids+=($!)
sleep 2
check console "http://127.0.0.1:$port/console" --models resnet50 --screenshot "$out/console.png"

echo "== 1b. a console of 40 models"
mkdir -p "$work/many"
for i in $(seq 1 40); do
  mkdir -p "$work/many/m$i/1"
  sed -e "s/^name: resnet50/name: m$i/" -e '/priority_levels\|^# Two priority\|^# level 2/d' \
    bench/emulated_repository/resnet50/1/config.yaml > "$work/many/m$i/1/config.yaml"
done
start_serve "$tutti" "$work/serve1b.log" --repo "$work/many" --grpc-port -1
pids+=("$served_pid")
"$tutti" load --models m1,m2,m3 --rate 100 --slo-ms 100 --duration-s 20 --warmup-s 0 --port "$served_port" \
  > "$work/load1b.log" 2>&1 &
pids+=($!)
check console "http://127.0.0.1:$served_port/console" --models m1,m40 --screenshot "$out/console_many.png"

echo "== 2. over TLS, with admin tokens"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2> /dev/null
admin="console-admin-token-$(date +%s%N)"
inference="console-inference-token-$(date +%s%N)"
echo "$admin" > "$work/admin.tokens"
echo "$inference" > "$work/inference.tokens"
start_serve "$tutti" "$work/serve2.log" --repo bench/emulated_repository --config bench/serve_zero_cost.yaml \
  --grpc-port -1 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --admin-tokens-file "$work/admin.tokens" \
  --inference-tokens-file "$work/inference.tokens"
pids+=("$served_pid")
tport=$served_port
body='{"inputs":[{"name":"input","shape":[1,16],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}]}'
( while true; do
    curl -sfk -o /dev/null -H "Authorization: Bearer $inference" -d "$body" \
      "https://127.0.0.1:$tport/v2/models/zero_cost/infer" || true
  done ) &
pids+=($!)
check console "https://localhost:$tport/console" --models zero_cost --token "$admin" --screenshot "$out/console_tls.png"

echo "== 3. HTML reports"
"$tutti" sim run bench/fig15_changing_512gpu.yaml --rate 1000 --html "$out/fig15.html" > "$work/sim.log"
grep -q "wrote $out/fig15.html" "$work/sim.log"
check report "$out/fig15.html" --kind simulation --screenshot "$out/fig15.png"
"$tutti" load --models resnet50 --rate 2000 --slo-ms 20 --duration-s 1 --warmup-s 0.2 --find-goodput \
  --tolerance 0.5 --port "$port" --html "$out/goodput.html" > "$work/load2.log" 2>&1
check report "$out/goodput.html" --kind load --screenshot "$out/goodput.png"
echo "browser tests passed; screenshots and reports in $out"

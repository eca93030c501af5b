#!/usr/bin/env bash
# More models than memory on the CPU executor, end to end: `tutti train
# --copies` makes 6 fine-tuned heads of a small mlp (real weights on disk,
# each with the base's profile and its own measured load_ms); `tutti serve`
# holds 2 of them at a time (`memory_gb`, `policy: loads`). Every model is
# listed READY before any load; a request to each of the 6, twice round,
# is answered with the same logits as a server holding every model (so the
# right weights were read from disk); the server made at least 6 loads and
# never holds more than 2 models.
#   src/tutti/cli/memory_budget_cli_test.sh build/bin/tutti
set -euo pipefail
source "$(dirname "$0")/../testing/start_serve.sh"
tutti=$(realpath "$1")
work=$(mktemp -d)
server=""
stop() { [ -n "$server" ] && { kill -TERM "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true; }; server=""; }
trap 'stop; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tutti" train --arch mlp --repo "$work/repo" --name base --limit 500 --epochs 1 --test-limit 200 --threads 1 \
  --max-batch-size 8 > "$work/train.log" 2>&1 || { cat "$work/train.log"; fail "train"; }
"$tutti" profile --repo "$work/repo" --model base --repeats 3 --warmup 1 --threads 1 > "$work/profile.log" 2>&1 ||
  { cat "$work/profile.log"; fail "profile"; }
"$tutti" train --arch mlp --repo "$work/repo" --init-from base --last-stage-only --copies 6 --name m --limit 200 \
  --epochs 1 --test-limit 100 --threads 1 --max-batch-size 8 > "$work/copies.log" 2>&1 ||
  { cat "$work/copies.log"; fail "copies"; }
rm -rf "$work/repo/base"
for i in 1 2 3 4 5 6; do
  grep -q '^load_ms: ' "$work/repo/m_$i/1/config.yaml" || fail "m_$i has no load_ms"
  grep -q '^  cpu:' "$work/repo/m_$i/1/config.yaml" || fail "m_$i has no cpu profile"
done
params=$(sed -n 's/^parameters: //p' "$work/repo/m_1/1/config.yaml")
gb=$(awk -v p="$params" 'BEGIN {printf "%.9f", 2.5 * p * 4 / 1e9}')  # room for 2 models, not 3
models="m_1, m_2, m_3, m_4, m_5, m_6"
printf 'policy: loads\nexecutors: [{kind: torch, models: [%s], memory_gb: %s}]\n' "$models" "$gb" > "$work/budget.yaml"
printf 'policy: loads\nprefix_batching: false\nexecutors: [{kind: torch, models: [%s]}]\n' "$models" > "$work/all.yaml"

# A Fashion-MNIST-shaped input: 784 pixels of a fixed pattern.
pixels=$(awk 'BEGIN {for (i = 0; i < 784; i++) printf "%s%.3f", i ? "," : "", (i * 37 % 101) / 100}')
body="{\"inputs\":[{\"name\":\"image\",\"datatype\":\"FP32\",\"shape\":[1,1,28,28],\"data\":[$pixels]}]}"
answers() {  # CONFIG OUT: start a server, ask each model twice round, record the logits
  start_serve "$tutti" "$work/$2.log" --repo "$work/repo" --config "$work/$1" --grpc-port -1
  server=$served_pid
  port=$served_port
  if [ "$1" = budget.yaml ]; then
    index=$(curl -sf -X POST "127.0.0.1:$port/v2/repository/index")
    [ "$(echo "$index" | grep -o '"state":"READY"' | wc -l)" = 6 ] || fail "not 6 models READY: $index"
    ! curl -sf "127.0.0.1:$port/metrics" | grep -q '^tutti_weights_loads_total [1-9]' || fail "loads before any request"
  fi
  : > "$work/$2"
  for round in 1 2; do
    for i in 1 2 3 4 5 6; do
      out=$(curl -s -X POST "127.0.0.1:$port/v2/models/m_$i/infer" -d "$body")
      echo "$out" | grep -q "\"outputs\"" || { cat "$work/$2.log"; fail "$2: m_$i not answered: $out"; }
      echo "m_$i $(echo "$out" | grep -o '"data":\[[^]]*\]')" >> "$work/$2"
    done
  done
  if [ "$1" = budget.yaml ]; then
    loads=$(curl -sf "127.0.0.1:$port/metrics" | awk '/^tutti_weights_loads_total/ {print $2}')
    [ "${loads%.*}" -ge 6 ] || fail "only $loads loads"
    held=$(curl -sf "127.0.0.1:$port/v2/models/stats" | grep -o '"loaded_on":\[0\]' | wc -l)
    [ "$held" -le 2 ] && [ "$held" -ge 1 ] || fail "$held models held by the executor"
  fi
  stop
}
answers budget.yaml budget
answers all.yaml all
cmp "$work/budget" "$work/all" || { diff "$work/budget" "$work/all"; fail "logits differ from a server holding every model"; }
[ "$(cut -d' ' -f2 "$work/all" | head -6 | sort -u | wc -l)" = 6 ] || fail "the heads answer alike: not 6 models"
echo PASS

#!/usr/bin/env bash
# Distributed mode across network namespaces (scripts/netns_cluster.sh): 3
# etcd members, 2 schedulers, 2 frontends and 2 emulated backends, each in
# its own namespace, mutual TLS between them, every packet a node sends
# held 250 ± 100 µs and 0.1% of those it receives lost. The delay model
# measures at least the links' least delay, and follows it when two links
# slow down. Under load from the host through both frontends, every
# request gets an answer (`tutti load` fails on one left unanswered)
# while, in turn: one etcd member is cut off, the leading scheduler is
# killed (kill -9), a backend is stopped (SIGSTOP) then resumed, the
# leading scheduler is stopped past its lease then resumed (it steps
# down); after each fault heals, the cluster serves again (a 3 s run at
# most 5% bad within three: timing on the real clock belongs to
# benchmarks), and no two schedulers ever led at once (`check-leaders`,
# from their logs).
# Skipped (exit 77) where namespaces cannot be made (not root, no kernel
# support).
#   src/tutti/cli/netns_cluster_test.sh build/bin/tutti
set -euo pipefail
cd "$(dirname "$0")/../../.."
export TUTTI
TUTTI=$(realpath "$1")
export WORK
WORK=$(mktemp -d)/netns
cluster=scripts/netns_cluster.sh
trap '"$cluster" down > /dev/null 2>&1 || true; rm -rf "$(dirname "$WORK")"' EXIT
fail() { echo "FAIL: $*" >&2; "$cluster" nodes >&2 || true; exit 1; }

config=$(dirname "$WORK")/serve.yaml
cat > "$config" << 'YAML'
policy: deferred
executors:
  - {kind: emulated, count: 2, profile: a100, models: [resnet50]}
YAML
rc=0
"$cluster" up --repo bench/emulated_repository --config "$config" --etcd 3 --schedulers 2 --frontends 2 \
  --delay-us 250 --jitter-us 100 --loss-pct 0.1 || rc=$?
[ "$rc" = 3 ] && { echo "SKIP: no network namespaces here"; exit 77; }
[ "$rc" = 0 ] || fail "the cluster did not come up"
mapfile -t frontends < <("$cluster" frontends)
[ "${#frontends[@]}" = 2 ] || fail "not 2 frontends"

# run NAME SECONDS [FAULT…]: load both frontends for SECONDS, the fault
# (a netns_cluster.sh action) injected after 1 s; every request answered.
run() {
  local name=$1 seconds=$2 pids=() f rc=0
  shift 2
  for f in "${frontends[@]}"; do
    "$TUTTI" load --host "${f%:*}" --port "${f#*:}" --models resnet50 --rate 100 --slo-ms 100 \
      --duration-s "$seconds" --warmup-s 0 > "$WORK/load_${name}_${f%:*}.txt" 2>&1 &
    pids+=($!)
  done
  if [ $# -gt 0 ]; then
    sleep 1
    "$cluster" "$@"
  fi
  for f in "${pids[@]}"; do wait "$f" || rc=1; done
  [ "$rc" = 0 ] || { cat "$WORK"/load_"${name}"_*.txt >&2; fail "$name: a request was left unanswered"; }
  echo "  $name${1:+ ($*)}: every request answered; bad $(bad "$name")% at worst on a frontend"
}
bad() {  # NAME: the worst bad rate of its runs, in %
  awk '$1 == "total" {sub("%", "", $5); if ($5 > w) w = $5} END {print w + 0}' "$WORK"/load_"$1"_*.txt
}
healthy() {  # NAME: the cluster serves again (at most 5% bad: the real clock on shared cores) within 3 runs of 3 s
  local i
  for i in 1 2 3; do
    run "$1.$i" 3
    awk -v b="$(bad "$1.$i")" 'BEGIN {exit !(b <= 5)}' && return
  done
  cat "$WORK"/load_"$1".*_*.txt >&2
  fail "$1: the cluster does not serve"
}

healthy before
# The delay model sees the links: a frontend's measured response delay (a
# backend's answer crossing a link) is at least the least it was held.
measured_response() {  # the response delay the first frontend plans with, µs
  curl -sf "http://${frontends[0]}/v2/models/resnet50/stats" |
    sed -n 's/.*"measured_us": *{[^}]*"response": *\([0-9.]*\).*/\1/p'
}
response=$(measured_response)
awk -v r="$response" 'BEGIN {exit !(r >= 150)}' || fail "measured response delay ${response:-none} µs < the links' 150 µs"
echo "  the frontend measures a response delay of $response µs over links of 250 ± 100 µs"
# It follows a link's delay: with both backends' links at 2 ms ± 0.5 ms for a
# few seconds, the delay the frontend plans with (a high quantile of recent
# answers, lost packets' resends included) rises, to at least the new least.
"$cluster" delay b1 2000 500
"$cluster" delay b2 2000 500
run slow_links 3
raised=$(measured_response)
"$cluster" delay b1 250 100
"$cluster" delay b2 250 100
awk -v r="$raised" -v b="$response" 'BEGIN {exit !(r >= 1500 && r > b)}' ||
  fail "measured response delay ${raised:-none} µs over 2 ± 0.5 ms links, ${response} µs before"
echo "  with backends' links at 2 ± 0.5 ms it measures $raised µs"

echo "== an etcd member cut off"
run etcd_cut 4 partition e1
"$cluster" heal e1
healthy etcd_healed

echo "== the leading scheduler killed"
leader=$("$cluster" leader)
[ -n "$leader" ] || fail "no scheduler leads"
run leader_killed 4 kill "$leader"
healthy leader_replaced
"$cluster" restart "$leader"  # a spare again

echo "== a backend stopped, then resumed"
run backend_stopped 3 stop b1
"$cluster" cont b1
healthy backend_resumed

echo "== the leading scheduler stopped past its lease, then resumed"
leader=$("$cluster" leader)
[ -n "$leader" ] || fail "no scheduler leads"
run leader_stopped 6 stop "$leader"
"$cluster" cont "$leader"
# Resumed, it finds its lease lapsed and exits before it plans again.
for i in $(seq 100); do grep -q "lost its etcd lease" "$WORK/logs/$leader.log" && break; sleep 0.1; done
grep -q "lost its etcd lease" "$WORK/logs/$leader.log" || fail "the resumed leader $leader did not step down"
healthy after_leader_stopped
"$cluster" check-leaders || fail "two schedulers led at once"

"$cluster" nodes
echo PASS

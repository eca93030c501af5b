#!/usr/bin/env bash
# Distributed mode as on many hosts (scripts/netns_cluster.sh, root): 3
# etcd members, 2 schedulers, 2 frontends and 8 emulated A100 backends,
# each in its own network namespace, mutual TLS, every packet a node sends
# held 250 ± 100 µs (a link's round trip 0.5 ± 0.2 ms), 0.1% of the
# packets each receives lost, TCP's least retransmission timeout 5 ms;
# emulated ResNet50, 20 ms objective (bench/netns_resnet50_a100_8gpu.yaml: the default policy).
#   1. Goodput (`tutti load --find-goodput`, through one frontend) against
#      the same config embedded (`tutti serve`), and the bad rate at 30% of
#      the embedded goodput (half through each frontend), with the share
#      the servers made late, the CPU each kind of process used, and the
#      same load with no packet lost.
#   2. Faults under 30% of the cluster's own goodput (a load it serves
#      cleanly): each injected 2 s into a run and healed 3 s later (a
#      raised link delay: 30 s later; a killed process restarted then); the
#      run goes on 5 s past the heal. Per fault: the bad rate of a 3 s run
#      before, of the requests sent between the fault and its heal, the
#      time from the heal until the bad rate is back to the one before
#      within 0.5 points (recovery: read from the clients' per-100 ms
#      timelines), the bad rate of a 3 s run after, and
#      whether every request was answered (`tutti load` fails on one left
#      without an answer: that fails the benchmark). At the end, two
#      schedulers must never have led at once (`netns_cluster.sh
#      check-leaders`), or the benchmark fails.
#   3. Stateful sequences through two failovers of a GRU's primary
#      (NetnsStatefulTest): every answer its reference's, NSPB's audit.
# Medians over ROUNDS rounds [the worst]. Everything shares this
# machine's cores.
#   bench/netns_cluster.sh [ROUNDS] [--write-docs]   (default 5; root; after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
PROBE_S=${PROBE_S:-3}
TAIL_S=4  # a fault's run goes on this long (and 1 s more) after its heal
CONFIG=bench/netns_resnet50_a100_8gpu.yaml
OUT=${OUT:-/tmp/tutti_netns_bench}
export WORK=$OUT/cluster
cluster=scripts/netns_cluster.sh
rm -rf "$OUT" && mkdir -p "$OUT"
# The cluster's logs stay in OUT/logs.
trap 'cp -r "$WORK/logs" "$OUT/" 2> /dev/null; "$cluster" down > /dev/null 2>&1 || true
      [ -n "${SERVER:-}" ] && kill "$SERVER" 2> /dev/null || true' EXIT

goodput() {  # HOST PORT OUT: the goodput tutti load finds
  build/bin/tutti load --host "$1" --port "$2" --models resnet50 --rate 2000 --slo-ms 20 --duration-s "$PROBE_S" \
    --warmup-s 1 --find-goodput --tolerance 0.03 > "$3" 2>&1
  awk '/^goodput:/ {print $2}' "$3"
}

echo "== embedded goodput" >&2
for r in $(seq "$ROUNDS"); do
  build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --port 8031 --grpc-port -1 \
    > "$OUT/serve_$r.log" 2>&1 &
  SERVER=$!
  await_server 8031 "$SERVER" "$OUT/serve_$r.log"
  goodput 127.0.0.1 8031 "$OUT/embedded_$r.txt" >> "$OUT/embedded"
  kill -TERM "$SERVER"; wait "$SERVER" || true; SERVER=
done
embedded=$(sort -n "$OUT/embedded" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
rate=$(awk -v e="$embedded" 'BEGIN {printf "%.0f", 0.3 * e}')
echo "embedded goodput (median): $embedded r/s; the load: $rate r/s" >&2

"$cluster" up --repo bench/emulated_repository --config "$CONFIG" --etcd 3 --schedulers 2 --frontends 2 \
  --delay-us 250 --jitter-us 100 --loss-pct 0.1 2> "$OUT/up.log"
mapfile -t frontends < <("$cluster" frontends)

# run NAME SECONDS [AT_S ACTION… -- HEAL_AT_S HEAL_ACTION…]: $rate r/s, half
# through each frontend; prints "bad% answered(yes|no) server%": server%,
# the share the servers answered late or with an error (by their own
# timings), the rest being late on the way to and from the clients.
run() {
  local name=$1 seconds=$2 pids=() f ok=yes
  shift 2
  for f in "${frontends[@]}"; do
    build/bin/tutti load --host "${f%:*}" --port "${f#*:}" --models resnet50 --rate "$((rate / 2))" --slo-ms 20 \
      --duration-s "$seconds" --warmup-s 0 --seed "$RANDOM" --timeline-csv "$OUT/$name.${f%:*}.csv" \
      > "$OUT/$name.${f%:*}.txt" 2>&1 &
    pids+=($!)
  done
  if [ $# -gt 0 ]; then
    local fault=() heal=() at heal_at
    at=$1; shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do fault+=("$1"); shift; done
    shift; heal_at=$1; shift
    heal=("$@")
    sleep "$at"; "$cluster" "${fault[@]}" >&2
    date +%s.%N > "$OUT/$name.injected"
    sleep "$((heal_at - at))"; [ ${#heal[@]} -eq 0 ] || "$cluster" "${heal[@]}" >&2
    date +%s.%N > "$OUT/$name.healed"
  fi
  for f in "${pids[@]}"; do wait "$f" || ok=no; done
  cat "$OUT/$name".*.txt | awk -v ok="$ok" '$1 == "total" {sub("%", "", $5); sent += $2; bad += $2 * $5; r = $2}
    $2 == "×" {srv += $1} $1 == "late" && $3 == "the" {srv += $5} $1 == "SLO" {n += r * $5}
    END {printf "%.2f %s %.2f\n", sent ? bad / sent : 100, ok, n ? 100 * srv / n : 100}'
}
# after_heal NAME BEFORE: from the run's timelines (both clients', per
# 100 ms of sending), "DURING RECOVERY": the bad rate of the requests sent
# between the fault and its heal, and the least time after the heal (0.1 s
# steps) from which both the next second and everything up to TAIL_S are
# back to BEFORE% bad within 0.5 points (TAIL_S: not back within the run).
after_heal() {
  cat "$OUT/$1".*.csv | awk -F, -v inj="$(cat "$OUT/$1.injected")" -v heal="$(cat "$OUT/$1.healed")" \
    -v before="$2" -v tail="$TAIL_S" '
    $1 == "unix_s" {next}
    $1 >= inj && $1 < heal {ds += $2; db += $3}
    $1 >= heal {b = int(($1 - heal) * 10); s[b] += $2; x[b] += $3}
    function ok(from, to,   i, n, k) {
      for (i = from; i < to; i++) {n += s[i]; k += x[i]}
      return n > 0 && 100 * k / n <= before + 0.5
    }
    END {
      r = tail
      for (t = 0; t + 10 <= tail * 10; t++) if (ok(t, t + 10) && ok(t, tail * 10)) {r = t / 10; break}
      printf "%.2f %.1f\n", ds ? 100 * db / ds : 0, r
    }'
}

# cpu_use AFTER_S SECONDS: the CPU each kind of process used over SECONDS
# (from AFTER_S on), in % of one core: "schedulers frontends backends etcd
# tutti-netdelay rest idle" (rest: the clients and the kernel's own work).
cpu_use() {
  snap() {
    local f
    for f in "$WORK"/pids/*; do
      echo "$(basename "$f" | cut -c1) $(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat" 2> /dev/null || echo 0)"
    done
    awk '/^cpu / {print "T", $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; print "I", $5}' /proc/stat
  }
  sleep "$1"; snap > "$OUT/cpu.a"; sleep "$2"; snap > "$OUT/cpu.b"
  paste "$OUT/cpu.a" "$OUT/cpu.b" | awk -v s="$2" -v hz="$(getconf CLK_TCK)" '{d[$1] += $4 - $2}
    END {for (k in d) d[k] *= 100 / (s * hz)
      printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", d["s"], d["f"], d["b"], d["e"], d["n"],
        d["T"] - d["I"] - d["s"] - d["f"] - d["b"] - d["e"] - d["n"], d["I"]}'
}

echo "== distributed goodput and bad rate at $rate r/s" >&2
for r in $(seq "$ROUNDS"); do
  goodput "${frontends[0]%:*}" "${frontends[0]#*:}" "$OUT/distributed_$r.txt" >> "$OUT/distributed"
  cpu_use 2 6 >> "$OUT/cpu" &
  run "steady_$r" 10 >> "$OUT/steady"
  wait
done
# The same load without loss: what the lost packets cost.
mapfile -t nodes < <("$cluster" nodes | awk 'NR > 1 {print $1}')
for n in "${nodes[@]}"; do "$cluster" loss "$n" 0; done
for r in $(seq "$ROUNDS"); do run "lossless_$r" 10 >> "$OUT/lossless"; done
for n in "${nodes[@]}"; do "$cluster" loss "$n" 0.1; done
# The faults run at 30% of the cluster's own goodput, a load it serves
# cleanly, so that what a fault costs stands out.
embedded_rate=$rate
rate=$(awk -v d="$(sort -n "$OUT/distributed" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')" \
  'BEGIN {printf "%.0f", 0.3 * d}')
echo "== faults at $rate r/s" >&2

faults=(
  "a backend cut off|2 partition b3 -- 5 heal b3"
  "the leader cut off from etcd|2 cut LEADER e1 e2 e3 -- 5 heal LEADER"
  "a frontend cut off from the leader|2 cut f2 LEADER -- 5 heal f2"
  "one etcd member cut off|2 partition e1 -- 5 heal e1"
  "kill -9 the leading scheduler|2 kill LEADER -- 5 restart LEADER"
  "kill -9 a backend|2 kill b5 -- 5 restart b5"
  "kill -9 a frontend|2 kill f2 -- 5 restart f2"
  "SIGSTOP the leading scheduler|2 stop LEADER -- 5 cont LEADER"
  "SIGSTOP a backend|2 stop b6 -- 5 cont b6"
  "a backend's link at 2 ± 1 ms for 30 s|2 delay b7 2000 1000 -- 32 delay b7 250 100"
  "restart an etcd member|2 kill e2 -- 5 restart e2"
)
for r in $(seq "$ROUNDS"); do
  for k in "${!faults[@]}"; do
    label=${faults[$k]%%|*}
    read -r -a steps <<< "${faults[$k]#*|}"
    echo "  round $r: $label" >&2
    leader=$("$cluster" leader)
    steps=("${steps[@]/LEADER/$leader}")
    # A process killed by the fault that did not come back (a lost lease
    # ends it) is started again before the next fault.
    read -r before _ < <(run "f${k}_${r}_before" 3)
    heal_at=${faults[$k]#* -- }
    read -r _ answered _ < <(run "f${k}_$r" "$((${heal_at%% *} + TAIL_S + 1))" "${steps[@]}")
    read -r bad rec < <(after_heal "f${k}_$r" "$before")
    read -r after answered_after _ < <(run "f${k}_${r}_after" 3)
    [ "$answered" = yes ] && [ "$answered_after" = yes ] || {
      echo "FAIL: $label: a client failed: $(grep -h '^error' "$OUT/f${k}_$r"*.txt | head -3)" >&2; exit 1; }
    echo "$bad $rec $after $before" >> "$OUT/fault_$k"
    "$cluster" nodes | awk 'NR > 1 && /dead/ {print $1}' | while read -r n; do "$cluster" restart "$n"; done
    sleep 2  # the restarted join
  done
done
leaders=$("$cluster" check-leaders) || { echo "FAIL: $leaders" >&2; exit 1; }
cp -r "$WORK/logs" "$OUT/"
"$cluster" down > /dev/null 2>&1

# Stateful sequences (HAMS's NSPB) across namespaces: the stateful test's
# cluster and checker (NetnsStatefulTest in src/tutti/cli/stateful_cluster_test.cc);
# a failed check fails the benchmark.
echo "== stateful sequences through failovers" >&2
for r in $(seq "$ROUNDS"); do
  build/src/tutti/cli/stateful_cluster_test --gtest_filter='Nspb/NetnsStatefulTest.*' > "$OUT/stateful_$r.txt" 2>&1 ||
    { echo "FAIL: stateful sequences: $(grep -A2 -m3 Failure "$OUT/stateful_$r.txt")" >&2; exit 1; }
done

med() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
worst() { sort -n | tail -1; }
# spread FILE COLUMN [UNIT]: "median UNIT [worst UNIT]" of a results file's column.
spread() { echo "$(cut -d' ' -f"$2" "$1" | med)${3:-} [$(cut -d' ' -f"$2" "$1" | worst)${3:-}]"; }
{
  distributed=$(med < "$OUT/distributed")
  steady() { echo "$(spread "$1" 1 %) | $(spread "$1" 3 %)"; }
  echo "| setup | goodput r/s | bad at $embedded_rate r/s (30% of embedded) | of which the servers' |"
  echo "|---|---|---|---|"
  echo "| embedded (\`tutti serve\`) | $embedded [$(sort -n "$OUT/embedded" | head -1)] | – | – |"
  echo "| netns cluster | $distributed [$(sort -n "$OUT/distributed" | head -1)] ($(awk -v d="$distributed" -v e="$embedded" 'BEGIN {printf "%.0f", 100 * d / e}')% of embedded) | $(steady "$OUT/steady") |"
  echo "| netns cluster without loss | – | $(steady "$OUT/lossless") |"
  echo
  echo "CPU at $embedded_rate r/s, in % of one core (the machine has $(nproc)), medians of $ROUNDS runs:"
  echo
  echo "| schedulers | frontends | backends | etcd members | tutti-netdelay | clients and the kernel | idle |"
  echo "|---|---|---|---|---|---|---|"
  echo "| $(for c in 1 2 3 4 5 6 7; do cut -d' ' -f$c "$OUT/cpu" | med; done | paste -sd'|' | sed 's/|/ | /g') |"
  echo
  echo "| fault at $rate r/s (healed 3 s after it was injected, or 30 s) | bad before | bad during | recovery s | bad after | every request answered |"
  echo "|---|---|---|---|---|---|"
  for k in "${!faults[@]}"; do
    f=$OUT/fault_$k
    echo "| ${faults[$k]%%|*} | $(spread "$f" 4 %) | $(spread "$f" 1 %) | $(spread "$f" 2) | $(spread "$f" 3 %) | yes |"
  done
  echo
  echo "Schedulers over every run (\`check-leaders\`): $leaders."
  echo
  echo "| stateful sequences, fault on the GRU's primary | requests, $ROUNDS runs | answered | errors | outputs differing from the reference |"
  echo "|---|---|---|---|---|"
  for fault in "kill -9 of the primary" "the primary cut off"; do
    cat "$OUT"/stateful_*.txt | awk -v f="$fault" 'index($0, "across namespaces, " f ":") {
        split(substr($0, length("across namespaces, " f ": ") + 1), x, " ")
        n += x[1]; ok += x[3]; e += x[9]; m += x[11]}
      END {printf "| %s | %d | %d | %d | %d |\n", f, n, ok, e, m}'
  done
  echo
  cat "$OUT"/stateful_*.txt | awk '/NSPB.s audit:/ {a += $3; i += $6}
    END {printf "NSPB'"'"'s audit over every run (each backend of the GRU'"'"'s group, as it stops): %d answers audited, %d inconsistent (read a state other than their sequence'"'"'s).\n", a, i}'
} | tee "$OUT/table.md"

if [ "$WRITE_DOCS" = 1 ]; then
  write_results_page netns_cluster "Distributed mode across network namespaces, with faults" \
    "Across namespaces with 0.5 ± 0.2 ms links and 0.1% loss, how much of embedded goodput does distributed mode keep, and what does each fault cost?" \
    "bench/netns_cluster.sh --write-docs" \
    "\`scripts/netns_cluster.sh\`: 3 etcd members, 2 schedulers, 2 frontends and 8 emulated A100 backends (bench/netns_resnet50_a100_8gpu.yaml: emulated ResNet50, 20 ms objective, the default policy), each in its own network namespace on one bridge, mutual TLS, etcd with pre-vote; every packet a node sends held 250 ± 100 µs by tutti-netdelay (a link's round trip 0.5 ± 0.2 ms), 0.1% of the packets each node receives dropped (lost on the wire: the sender's TCP resends them), TCP's least retransmission timeout 5 ms on every link (as datacenter hosts set it); leases of 3 s. Goodput: \`tutti load --find-goodput\` (p99 within 20 ms; ${PROBE_S} s probes) through one frontend, against \`tutti serve\` with the same config. The load: $embedded_rate r/s (30% of the embedded goodput), Poisson, half through each frontend, 10 s a run, then the same with no packet lost; of which the servers': the requests the frontends answered late or with an error by their own timings (\`tutti load\`'s \"late by the server\"), the rest of the bad being late only on the way between client and frontend; CPU: each process's user and system time over 6 s of each run at that load; the faults run at $rate r/s (30% of the cluster's own goodput). Faults: injected 2 s into a run (its clients have been sending for about 1.7 s) and healed 3 s later (the raised link delay: 30 s later; a killed process restarted then, a link's raised delay set back), the run going on $((TAIL_S + 1)) s past the heal; before: a 3 s run right before the fault; during: the requests sent between the fault and its heal; recovery: from the heal, in steps of 0.1 s, until both the next second's requests and all sent from then until $TAIL_S s after the heal are back to the bad rate before, within 0.5 points ($TAIL_S: not within the run; each client's \`--timeline-csv\` counts, per 100 ms of sending, the requests sent and the bad); after: a 3 s run right after. A run in which a request was left without an answer fails the benchmark, and so do two schedulers leading at once (from their logs: each leads from its election until its lease is lost, it is killed or stopped). Stateful sequences: the cluster of \`NetnsStatefulTest\` (src/tutti/cli/stateful_cluster_test.cc; the same links, 3 etcd members, 2 schedulers, 1 frontend, a torch backend for the graph's stateless steps and the GRU's primary, backup and spare under NSPB) with 8 clients streaming 7-step sequences through clamp → GRU → softmax, every answer checked against the same step of the same sequence served alone; the GRU's primary killed, then its successor cut off until its backup took over, then healed; each run fails unless every request is answered with its reference's output, no sequence loses its state and the audit finds nothing inconsistent. Client, cluster and tutti-netdelay (one process, real-time priority) share this machine's 2 cores. Medians of $ROUNDS runs [the worst]." \
    "$OUT/table.md"
fi

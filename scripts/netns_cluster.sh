#!/usr/bin/env bash
# A distributed Tutti across network namespaces on this machine, as if on
# many hosts: each etcd member, scheduler, frontend and backend runs in a
# network namespace of its own, joined to the others by a veth pair to one
# bridge (tutti-br0, 10.231.0.1/24 on the host). Every process binds its
# namespace's address, never loopback, and mutual TLS stays on between them
# and to etcd (a CA and one certificate for every address, made here).
# Clients run on the host and reach the frontends at their addresses.
#
#   scripts/netns_cluster.sh up --repo DIR --config FILE [--etcd N] [--schedulers N]
#                               [--frontends N] [--backends N[,N…]] [--lease-ttl-s S]
#                               [--delay-us D] [--jitter-us J] [--loss-pct P] [--rto-min-ms R]
#   scripts/netns_cluster.sh nodes                 name, role, address, pid, state
#   scripts/netns_cluster.sh frontends             the frontends' HTTP endpoints, one a line
#   scripts/netns_cluster.sh leader                the scheduler that leads
#   scripts/netns_cluster.sh partition NODE        take its link down (no packet in or out)
#   scripts/netns_cluster.sh heal [NODE]           bring its link (every link) back up, and undo its cuts
#   scripts/netns_cluster.sh cut NODE OTHER…       cut NODE off from the OTHER nodes only, both ways
#   scripts/netns_cluster.sh kill NODE             kill -9 its process
#   scripts/netns_cluster.sh stop NODE | cont NODE SIGSTOP / SIGCONT its process
#   scripts/netns_cluster.sh restart NODE          start a killed node's process again
#   scripts/netns_cluster.sh delay NODE D J        its outgoing packets held D ± J µs
#   scripts/netns_cluster.sh loss NODE P           P% of the packets it receives dropped
#   scripts/netns_cluster.sh check-leaders         exit 1 if two schedulers ever led at once
#   scripts/netns_cluster.sh down                  stop every process, remove the namespaces (WORK/logs stays)
#
# Needs root and a kernel with network namespaces, veth and bridges
# (`ip netns`); `up` says so and exits 3 without them. Delay and jitter
# apply to what a node sends (a link's round trip crosses two nodes), by
# build/bin/tutti-netdelay, one process at real-time priority serving every
# namespace's netfilter queue (this kernel has no netem; iptables-legacy,
# as the nf_tables backend cannot queue here). Loss applies to what a node
# receives, by an iptables statistic rule: a packet lost on the wire, which
# the sender's TCP must detect and resend (a drop on the way out would fail
# the send at once, which TCP retries on a timer of 200 ms or more). TCP's
# least retransmission timeout on every link is R ms (default 5, as
# datacenter hosts set it: Linux's 200 ms would make any lost packet miss
# an objective of tens of ms). Defaults: 3 etcd
# members, 2 schedulers, 2 frontends, the config's executor counts as
# backends, leases of 3 s (longer than an etcd election, so that losing
# etcd's leader costs no process its lease). Nodes are named e1…, s1…, f1…, b1… (backends of group 0 first).
# State, logs and certificates: WORK (default /tmp/tutti_netns).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=${WORK:-/tmp/tutti_netns}
TUTTI=${TUTTI:-$ROOT/build/bin/tutti}
ETCD_BIN=${ETCD_BIN:-/usr/bin/etcd}
BRIDGE=tutti-br0
NET=10.231.0

die() { echo "netns_cluster: $*" >&2; exit 1; }
usage() { sed -n '10,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# The nodes file: one line per node, "name role address group".
node_field() {  # NAME FIELD(2 role, 3 address, 4 group)
  awk -v n="$1" -v f="$2" '$1 == n {print $f}' "$WORK/nodes" 2> /dev/null
}
need_node() { [ -n "$(node_field "$1" 2)" ] || die "no node '$1' (see: $0 nodes)"; }
ns() { echo "tutti-$1"; }
pid_of() { cat "$WORK/pids/$1" 2> /dev/null || true; }

check_kernel() {
  [ "$(id -u)" = 0 ] || { echo "netns_cluster: needs root (network namespaces)" >&2; exit 3; }
  if ! ip netns add tutti-probe 2> /dev/null; then
    echo "netns_cluster: this kernel does not allow network namespaces" >&2
    exit 3
  fi
  ip netns del tutti-probe
  command -v iptables-legacy > /dev/null || { echo "netns_cluster: needs iptables-legacy (scripts/setup.sh)" >&2; exit 3; }
}

make_certs() {  # ADDRESSES…: a CA and one certificate for all of them, for both ends
  local dir=$WORK/tls san="IP:127.0.0.1" a
  for a in "$@"; do san="$san,IP:$a"; done
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
    -days 2 -subj "/CN=tutti netns ca" 2> /dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/node.key" -out "$dir/node.csr" \
    -subj "/CN=tutti node" 2> /dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" > "$dir/ext.cnf"
  openssl x509 -req -in "$dir/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/node.pem" -days 2 -extfile "$dir/ext.cnf" 2> /dev/null
}

add_namespace() {  # NAME ADDRESS
  local n; n=$(ns "$1")
  # Leftovers of a cluster that was not taken down go first, with whatever
  # still runs in them.
  ip netns pids "$n" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
  ip netns del "$n" 2> /dev/null || true
  ip link del "tt-$1" 2> /dev/null || true
  ip netns add "$n"
  ip link add "tt-$1" type veth peer name "tp-$1"
  ip link set "tp-$1" netns "$n"
  ip -n "$n" link set "tp-$1" name eth0
  ip link set "tt-$1" master "$BRIDGE" up
  ip -n "$n" addr add "$2/24" dev eth0
  ip -n "$n" link set lo up
  ip -n "$n" link set eth0 up
  ip -n "$n" route replace "$NET.0/24" dev eth0 proto kernel scope link src "$2" rto_min "$(cat "$WORK/rto_min_ms")ms"
}

# The command line of a node's process (etcd members: ETCD_CLUSTER set).
command_of() {  # NAME
  local name=$1 role address group tls
  role=$(node_field "$name" 2) address=$(node_field "$name" 3) group=$(node_field "$name" 4)
  tls=(--tls-cert "$WORK/tls/node.pem" --tls-key "$WORK/tls/node.key" --tls-ca "$WORK/tls/ca.pem")
  local common=(--etcd "$(cat "$WORK/etcd_endpoints")" --cluster netns --repo "$(cat "$WORK/repo")"
                --config "$(cat "$WORK/config")" --address "$address" --lease-ttl-s "$(cat "$WORK/lease_ttl")"
                "${tls[@]}")
  case $role in
    etcd)  # pre-vote (etcd 3.5's default): a member back from a partition disrupts no leader
      local state=new
      [ -d "$WORK/etcd/$name/member" ] && state=existing
      echo "$ETCD_BIN" --name "$name" --data-dir "$WORK/etcd/$name" \
        --listen-client-urls "https://$address:2379" --advertise-client-urls "https://$address:2379" \
        --listen-peer-urls "https://$address:2380" --initial-advertise-peer-urls "https://$address:2380" \
        --initial-cluster "$(cat "$WORK/etcd_cluster")" --initial-cluster-state "$state" \
        --initial-cluster-token tutti-netns --heartbeat-interval 100 --election-timeout 1000 --pre-vote \
        --cert-file "$WORK/tls/node.pem" --key-file "$WORK/tls/node.key" --trusted-ca-file "$WORK/tls/ca.pem" \
        --client-cert-auth --peer-cert-file "$WORK/tls/node.pem" --peer-key-file "$WORK/tls/node.key" \
        --peer-trusted-ca-file "$WORK/tls/ca.pem" --peer-client-cert-auth --log-level warn
      ;;
    scheduler) echo "$TUTTI" scheduler "${common[@]}" ;;
    frontend) echo "$TUTTI" frontend "${common[@]}" --http-address "$address" --http-port 8000 --grpc-port 8001 ;;
    backend) echo "$TUTTI" backend "${common[@]}" --group "$group" --id "$name" ;;
  esac
}

start_node() {  # NAME
  local cmd
  read -r -a cmd <<< "$(command_of "$1")"
  # setsid: its own process group, so that a fault signals only it.
  ip netns exec "$(ns "$1")" setsid "${cmd[@]}" >> "$WORK/logs/$1.log" 2>&1 < /dev/null &
  echo $! > "$WORK/pids/$1"
}

IPT=(iptables-legacy -w)
NETDELAY=${NETDELAY:-$ROOT/build/bin/tutti-netdelay}

# Loss on a node's incoming packets (a chain), delay on its outgoing ones:
# queue tutti-netdelay holds packets in (set up on first use).
set_loss() {  # NAME PERCENT
  local n; n=$(ns "$1")
  ip netns exec "$n" "${IPT[@]}" -F TUTTI_LOSS
  if awk -v p="$2" 'BEGIN {exit !(p > 0)}'; then
    ip netns exec "$n" "${IPT[@]}" -A TUTTI_LOSS -m statistic --mode random \
      --probability "$(awk -v p="$2" 'BEGIN {printf "%.6f", p / 100}')" -j DROP
  fi
  echo "$2" > "$WORK/links/$1.loss"
}
# Delay: one tutti-netdelay serves every namespace's queue 0 (started on
# first use); a node's packets go to it once its delay was set.
start_netdelay() {
  local pid; pid=$(cat "$WORK/pids/netdelay" 2> /dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null && return
  [ -x "$NETDELAY" ] || die "no $NETDELAY: it builds where libnetfilter-queue-dev is installed (scripts/setup.sh)"
  awk '{print "tutti-" $1, 0, 0}' "$WORK/nodes" > "$WORK/links/delays"
  # Real-time priority: a link does not wait for the hosts' processes to yield a core.
  setsid chrt -f 10 "$NETDELAY" --queue 0 --links "$WORK/links/delays" >> "$WORK/logs/netdelay.log" 2>&1 < /dev/null &
  echo $! > "$WORK/pids/netdelay"
  local i
  for i in $(seq 1 50); do  # bound to every queue before packets go there
    [ "$(grep -c "delay 0 us" "$WORK/logs/netdelay.log")" -ge "$(wc -l < "$WORK/nodes")" ] && return
    kill -0 "$(cat "$WORK/pids/netdelay")" 2> /dev/null || { cat "$WORK/logs/netdelay.log" >&2; die "tutti-netdelay failed"; }
    sleep 0.1
  done
  die "tutti-netdelay did not bind its queues"
}
set_delay() {  # NAME DELAY_US JITTER_US
  start_netdelay
  awk -v n="tutti-$1" -v d="$2" -v j="$3" '$1 == n {$2 = d; $3 = j} {print}' "$WORK/links/delays" \
    > "$WORK/links/delays.new" && mv "$WORK/links/delays.new" "$WORK/links/delays"
  kill -HUP "$(cat "$WORK/pids/netdelay")"
  if [ ! -e "$WORK/links/$1.queued" ]; then
    ip netns exec "$(ns "$1")" "${IPT[@]}" -A OUTPUT -o eth0 -j NFQUEUE --queue-num 0
    touch "$WORK/links/$1.queued"
  fi
}
cut_node() {  # NAME OTHER…: drop what NAME exchanges with the others
  local n a; n=$(ns "$1")
  need_node "$1"
  shift
  for other in "$@"; do
    need_node "$other"
    a=$(node_field "$other" 3)
    ip netns exec "$n" "${IPT[@]}" -A TUTTI_CUT -d "$a" -j DROP
    ip netns exec "$n" "${IPT[@]}" -A TUTTI_CUT_IN -s "$a" -j DROP
  done
}
uncut_node() {  # NAME
  local n; n=$(ns "$1")
  ip netns exec "$n" "${IPT[@]}" -F TUTTI_CUT
  ip netns exec "$n" "${IPT[@]}" -F TUTTI_CUT_IN
}
setup_links() {  # NAME: the cut and loss chains
  local n; n=$(ns "$1")
  ip netns exec "$n" "${IPT[@]}" -N TUTTI_CUT
  ip netns exec "$n" "${IPT[@]}" -A OUTPUT -o eth0 -j TUTTI_CUT
  ip netns exec "$n" "${IPT[@]}" -N TUTTI_CUT_IN
  ip netns exec "$n" "${IPT[@]}" -A INPUT -i eth0 -j TUTTI_CUT_IN
  ip netns exec "$n" "${IPT[@]}" -N TUTTI_LOSS
  ip netns exec "$n" "${IPT[@]}" -A INPUT -i eth0 -j TUTTI_LOSS
  set_loss "$1" "$(cat "$WORK/loss_pct")"
}

wait_ready() {  # ADDRESS:PORT of a frontend: until /v2/health/ready answers 200, or 60 s
  local i
  for i in $(seq 1 600); do
    curl -sf "http://$1/v2/health/ready" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

cmd_up() {
  local repo="" config="" etcds=3 schedulers=2 frontends=2 backends="" ttl=3 delay=0 jitter=0 loss=0 rto_min=5
  while [ $# -gt 0 ]; do
    case $1 in
      --repo) repo=$2; shift 2 ;;
      --config) config=$2; shift 2 ;;
      --etcd) etcds=$2; shift 2 ;;
      --schedulers) schedulers=$2; shift 2 ;;
      --frontends) frontends=$2; shift 2 ;;
      --backends) backends=$2; shift 2 ;;
      --lease-ttl-s) ttl=$2; shift 2 ;;
      --delay-us) delay=$2; shift 2 ;;
      --jitter-us) jitter=$2; shift 2 ;;
      --loss-pct) loss=$2; shift 2 ;;
      --rto-min-ms) rto_min=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  [ -n "$repo" ] && [ -n "$config" ] || usage
  [ -x "$TUTTI" ] || die "no $TUTTI: run scripts/build.sh first"
  check_kernel
  [ -e "$WORK/nodes" ] && die "a cluster is up already ($WORK): run '$0 down' first"
  ip link show "$BRIDGE" > /dev/null 2>&1 && die "$BRIDGE exists: another cluster is up (WORK=… $0 down)"
  # The backends per group: the config's counts unless given.
  if [ -z "$backends" ]; then
    backends=$(awk '/kind:/ {if (match($0, /count: *[0-9]+/)) {c = substr($0, RSTART, RLENGTH); sub(/count: */, "", c)}
                             else c = 1; printf "%s%s", n++ ? "," : "", c}' "$config")
    [ -n "$backends" ] || backends=1
  fi
  rm -rf "$WORK/logs"  # a last cluster's
  mkdir -p "$WORK/pids" "$WORK/logs" "$WORK/etcd" "$WORK/links"
  echo "$delay $jitter" > "$WORK/delay"
  echo "$loss" > "$WORK/loss_pct"
  echo "$rto_min" > "$WORK/rto_min_ms"
  realpath "$repo" > "$WORK/repo"
  realpath "$config" > "$WORK/config"
  echo "$ttl" > "$WORK/lease_ttl"
  : > "$WORK/nodes"
  local i g=0 b=0 count addresses=()
  for i in $(seq 1 "$etcds"); do echo "e$i etcd $NET.$((10 + i)) -" >> "$WORK/nodes"; done
  for i in $(seq 1 "$schedulers"); do echo "s$i scheduler $NET.$((20 + i)) -" >> "$WORK/nodes"; done
  for i in $(seq 1 "$frontends"); do echo "f$i frontend $NET.$((30 + i)) -" >> "$WORK/nodes"; done
  for count in ${backends//,/ }; do
    for i in $(seq 1 "$count"); do b=$((b + 1)); echo "b$b backend $NET.$((40 + b)) $g" >> "$WORK/nodes"; done
    g=$((g + 1))
  done
  [ "$b" -le 200 ] || die "at most 200 backends"
  mapfile -t addresses < <(awk '{print $3}' "$WORK/nodes")
  make_certs "${addresses[@]}"
  awk '$2 == "etcd" {printf "%s%s=https://%s:2380", n++ ? "," : "", $1, $3}' "$WORK/nodes" > "$WORK/etcd_cluster"
  awk '$2 == "etcd" {printf "%s%s:2379", n++ ? "," : "", $3}' "$WORK/nodes" > "$WORK/etcd_endpoints"

  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  ip route replace "$NET.0/24" dev "$BRIDGE" proto kernel scope link src "$NET.1" rto_min "${rto_min}ms"
  local name role address
  while read -r name role address _; do
    add_namespace "$name" "$address"
    setup_links "$name"
  done < "$WORK/nodes"
  local d j
  read -r d j < "$WORK/delay"
  if [ "$d" != 0 ] || [ "$j" != 0 ]; then
    for name in $(awk '{print $1}' "$WORK/nodes"); do set_delay "$name" "$d" "$j"; done
  fi
  echo "starting $(wc -l < "$WORK/nodes") nodes in their namespaces (logs: $WORK/logs)" >&2
  for role in etcd scheduler backend frontend; do
    while read -r name r _; do [ "$r" = "$role" ] && start_node "$name"; done < "$WORK/nodes"
  done
  while read -r name role address _; do
    [ "$role" = frontend ] || continue
    wait_ready "$address:8000" || { tail -20 "$WORK/logs/$name.log" >&2; die "frontend $name not ready in 60 s"; }
  done < "$WORK/nodes"
  echo "up: frontends at $(cmd_frontends | tr '\n' ' ')" >&2
}

cmd_down() {
  local name
  if [ -e "$WORK/nodes" ]; then
    for name in $(awk '{print $1}' "$WORK/nodes"); do
      local pid; pid=$(pid_of "$name")
      [ -n "$pid" ] && { kill -CONT -- "-$pid" 2> /dev/null || true; kill -TERM -- "-$pid" 2> /dev/null || true; }
    done
    # They stop gracefully (a backend prints its replication summary then),
    # within 5 s; what still runs is killed.
    local i alive
    for i in $(seq 50); do
      alive=0
      for name in $(awk '{print $1}' "$WORK/nodes"); do
        pid=$(pid_of "$name")
        [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null && alive=1
      done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    for name in $(awk '{print $1}' "$WORK/nodes"); do
      local pid; pid=$(pid_of "$name")
      [ -n "$pid" ] && kill -KILL -- "-$pid" 2> /dev/null || true

      ip netns pids "$(ns "$name")" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
      ip netns del "$(ns "$name")" 2> /dev/null || true
      ip link del "tt-$name" 2> /dev/null || true
    done
  fi
  local pid; pid=$(cat "$WORK/pids/netdelay" 2> /dev/null || true)
  [ -n "$pid" ] && kill -KILL "$pid" 2> /dev/null || true
  ip link del "$BRIDGE" 2> /dev/null || true
  # The logs stay (a backend's last lines say what it replicated).
  [ -d "$WORK" ] && find "$WORK" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
  true
}

cmd_nodes() {
  local name role address group pid state
  printf '%-5s %-10s %-14s %-8s %-16s %s\n' node role address pid "delay/jitter µs" "loss %, state"
  while read -r name role address group; do
    pid=$(pid_of "$name")
    state=running
    if [ -z "$pid" ] || ! kill -0 "$pid" 2> /dev/null; then state=dead;
    elif grep -q '^State:.*stopped' "/proc/$pid/status" 2> /dev/null; then state=stopped; fi
    [ "$(cat "/sys/class/net/tt-$name/operstate" 2> /dev/null)" = down ] && state="$state, partitioned"
    printf '%-5s %-10s %-14s %-8s %-16s %s\n' "$name" "$role" "$address" "${pid:--}" \
      "$(awk -v n="tutti-$name" '$1 == n {print $2 "/" $3}' "$WORK/links/delays" 2> /dev/null | grep . || echo 0/0)" \
      "$(cat "$WORK/links/$name.loss"), $state"
  done < "$WORK/nodes"
}

cmd_frontends() { awk '$2 == "frontend" {print $3 ":8000"}' "$WORK/nodes"; }

signal_node() {  # NAME SIGNAL: sent, and noted in its log with the time
  need_node "$1"
  local pid; pid=$(pid_of "$1")
  [ -n "$pid" ] || die "node $1 has no process"
  kill "-$2" -- "-$pid" 2> /dev/null || die "node $1's process is gone"
  echo "netns_cluster: SIG$2 at unix time $(date +%s.%N | cut -c1-14)" >> "$WORK/logs/$1.log"
}

# Whether two schedulers ever led at once, from their logs: a scheduler
# leads from its "leading at" until its lease is lost, it is killed,
# stopped (SIGSTOP) or stops; none may start leading before the one that
# led stopped. A stopped leader that is resumed plans again only while its
# lease holds: it checks before every plan, and exits once the lease may
# have lapsed (etcd keeps it at least that long), so a resume starts no
# leadership of its own.
cmd_check_leaders() {
  local name
  for name in $(awk '$2 == "scheduler" {print $1}' "$WORK/nodes"); do
    awk -v n="$name" '
      /leading at unix time/ {t = $0; sub(/.*leading at unix time /, "", t); sub(/[;, ].*/, "", t); print t, n, "lead"}
      /lost its etcd lease at unix time|netns_cluster: SIG(KILL|STOP) at unix time/ {
        t = $0; sub(/.*at unix time /, "", t); sub(/[;, ].*/, "", t); print t, n, "end"}' "$WORK/logs/$name.log"
  done | sort -n | awk '
    $3 == "lead" { if (cur != "" && cur != $2) { printf "two leaders: %s led from %s while %s still led (since %s)\n", $2, $1, cur, since; bad = 1 }
                   cur = $2; since = $1; n++ }
    $3 == "end" && cur == $2 { cur = "" }
    END { if (!bad) printf "one leader at a time: %d leaderships, none overlapping\n", n; exit bad }'
}

[ $# -ge 1 ] || usage
action=$1
shift
case $action in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  nodes) [ -e "$WORK/nodes" ] || die "no cluster is up"; cmd_nodes ;;
  frontends) cmd_frontends ;;
  partition) need_node "${1:-}"; ip link set "tt-$1" down ;;
  heal)
    if [ -n "${1:-}" ]; then need_node "$1"; ip link set "tt-$1" up; uncut_node "$1"
    else for name in $(awk '{print $1}' "$WORK/nodes"); do ip link set "tt-$name" up; uncut_node "$name"; done; fi ;;
  cut) [ $# -ge 2 ] || usage; cut_node "$@" ;;
  leader)  # the scheduler that leads now
    for name in $(awk '$2 == "scheduler" {print $1}' "$WORK/nodes"); do
      pid=$(pid_of "$name")
      if [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null && grep -E "leading at|standing by|campaigning" "$WORK/logs/$name.log" | tail -1 | grep -q "leading at"; then
        echo "$name"
      fi
    done | tail -1 ;;
  check-leaders) [ -e "$WORK/nodes" ] || die "no cluster is up"; cmd_check_leaders ;;
  kill) signal_node "${1:-}" KILL ;;
  stop) signal_node "${1:-}" STOP ;;
  cont) signal_node "${1:-}" CONT ;;
  delay) need_node "${1:-}"; [ $# -eq 3 ] || usage; set_delay "$1" "$2" "$3" ;;
  loss) need_node "${1:-}"; [ $# -eq 2 ] || usage; set_loss "$1" "$2" ;;
  restart)
    need_node "${1:-}"
    pid=$(pid_of "$1")
    [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null && die "node $1 still runs (kill it first)"
    start_node "$1" ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# Behaviour unchanged? Two `tutti` binaries (say, before and after a
# refactor) measured in turns by the serving benchmarks: per round, each
# binary in turn (the order alternating from round to round, so that the
# machine's drift falls on both sides) runs
#   SEARCH=0 bench/serving_overhead.sh   client p50 at 1,000 r/s; capacity with 128 in flight
#   bench/serving_goodput.sh             end-to-end goodput (tutti load --find-goodput)
#   MODES=nspb bench/stateful_overhead.sh 1   NSPB's p50 over none beside it
# Each script runs build/bin/tutti: the binary under test is copied there
# for its turn, and the one found there is put back at the end. Prints
# per binary the median of the rounds and the worst round, then the raw
# figures.
#   bench/before_after.sh OLD_BINARY NEW_BINARY [ROUNDS]   (default 5; after scripts/build.sh and `tutti demo`)
# OVERHEAD_ONLY=1 runs serving_overhead.sh alone (a few minutes for 5 rounds).
# Make the old binary from a checkout of the old commit: `cmake --build
# build --target tutti && cp build/bin/tutti /tmp/tutti_old`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
OLD=$1 NEW=$2 ROUNDS=${3:-5}
OUT=${OUT:-/tmp/tutti_before_after}
rm -rf "$OUT" && mkdir -p "$OUT"
cp build/bin/tutti "$OUT/tutti_found"
cp "$OLD" "$OUT/tutti_old" && cp "$NEW" "$OUT/tutti_new"
trap 'cp "$OUT/tutti_found" build/bin/tutti' EXIT

for r in $(seq 1 "$ROUNDS"); do
  sides=(old new)
  ((r % 2)) || sides=(new old)
  for side in "${sides[@]}"; do
    cp "$OUT/tutti_$side" build/bin/tutti
    SEARCH=0 timeout 600 bench/serving_overhead.sh > "$OUT/overhead_${side}_$r.txt" 2>&1 || true
    if [ "${OVERHEAD_ONLY:-0}" != 1 ]; then
      timeout 600 bench/serving_goodput.sh > "$OUT/goodput_${side}_$r.txt" 2>&1 || true
      MODES=nspb timeout 600 bench/stateful_overhead.sh 1 > "$OUT/stateful_${side}_$r.txt" 2>&1 || true
    fi
    echo "round $r of $ROUNDS: $side done" >&2
  done
done

med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "-"}'; }
low() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
high() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }
for side in old new; do
  p50="" cap="" gp="" st=""
  for r in $(seq 1 "$ROUNDS"); do
    p50+=" $(awk '/== added latency/ {a = 1} a && $1 == "total" {print $6; exit}' "$OUT/overhead_${side}_$r.txt")"
    cap+=" $(awk '/== capacity/ {a = 1} a && $1 == "total" {print $3; exit}' "$OUT/overhead_${side}_$r.txt")"
    gp+=" $(awk '/^goodput:/ {print $2}' "$OUT/goodput_${side}_$r.txt" 2> /dev/null || true)"
    st+=" $(awk '$1 == "nspb" && $2 == "p50" {gsub("%", "", $4); print $4}' "$OUT/stateful_${side}_$r.txt" 2> /dev/null || true)"
  done
  printf '%s: p50 at 1,000 r/s %s ms [%s]; capacity %s r/s [%s]; goodput %s r/s [%s]; nspb p50 over none %s%% [%s%%]\n' \
    "$side" "$(med <<< "$p50")" "$(high <<< "$p50")" "$(med <<< "$cap")" "$(low <<< "$cap")" \
    "$(med <<< "$gp")" "$(low <<< "$gp")" "$(med <<< "$st")" "$(high <<< "$st")"
  echo "  rounds: p50$p50 | capacity$cap | goodput$gp | nspb$st"
done

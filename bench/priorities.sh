#!/usr/bin/env bash
# Priorities under overload: emulated ResNet50 on 8 emulated GPUs, Poisson
# arrivals, deferred scheduling with early drop (the serve configs'
# policy). The single-level peak P is the simulator's goodput; then at 1.5 P:
#   one level     every request alike: all of them pay for the excess
#   two levels    half the requests sent at priority 1, half at 2
#                 (`--priorities 0.5,0.5`; the model has
#                 dynamic_batching.priority_levels: 2)
# The question: does priority 1 keep its bad rate within 1% while priority
# 2 absorbs the excess, and does the whole keep its goodput within 5% of
# the single-level peak?
#   1. The simulator (deterministic: one run), on A100s (SLO 20 ms) and
#      GTX 1080Tis (SLO 27 ms): P, and both cases at 1.5 P.
#   2. The real clock, on REAL_PROFILE (default 1080ti: the A100's 30,000
#      r/s at 1.5 P are beyond what one I/O loop of this 2-core machine
#      serves, even at one level): `tutti serve --repo
#      bench/emulated_repository --config bench/serve_resnet50_<profile>_8gpu.yaml`
#      (server on CPU 0) under `tutti load` (CPU 1), ROUNDS rounds of one
#      level at P (the peak as served), then one and two levels at 1.5 P;
#      medians over the rounds, the worst round in brackets. The whole's
#      goodput is judged against the better single-level goodput of the
#      round.
#   bench/priorities.sh [ROUNDS] [DURATION_S] [--write-docs]
# (defaults 5 and 10; ROUNDS=0 skips the real clock; after scripts/build.sh).
# --write-docs writes docs/benchmarks/priorities.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
ROUNDS=${1:-5}
DURATION=${2:-10}
PORT=${PORT:-8075}
REAL_PROFILE=${REAL_PROFILE:-1080ti}
profile() {  # $1: a100 | 1080ti; sets CONFIG, SIM, SLO
  case "$1" in
    a100) CONFIG=bench/serve_resnet50_a100_8gpu.yaml SIM=bench/resnet50_a100_8gpu_slo20.yaml SLO=20 ;;
    1080ti) CONFIG=bench/serve_resnet50_1080ti_8gpu.yaml SIM=bench/resnet50_1080ti_8gpu_slo27.yaml SLO=27 ;;
    *) echo "REAL_PROFILE is a100 or 1080ti" >&2; exit 2 ;;
  esac
}
OUT=${OUT:-/tmp/tutti_priorities}
rm -rf "$OUT" && mkdir -p "$OUT"
SERVER_CPUS=() CLIENT_CPUS=()
if [ "$(nproc)" -ge 2 ]; then SERVER_CPUS=(taskset -c 0) CLIENT_CPUS=(taskset -c 1); fi

# The single-level peak of a profile's simulation, and 1.5 times it.
peaks() {  # $1: profile; sets peak and over
  profile "$1"
  peak=$(build/bin/tutti sim goodput "$SIM" 2> /dev/null | awk '/^goodput:/ {printf "%.0f", $2}')
  over=$(awk -v p="$peak" 'BEGIN {printf "%.0f", 1.5 * p}')
}

# Rows of a `tutti sim run` or `tutti load` report: "total", "priority 1"
# and "priority 2" as: name sent/s goodput/s bad%.
rows() {  # $1: report, $2: sim | load
  awk -v kind="$2" '
    $1 == "total" {n = "total"; off = 1}
    $1 == "priority" && $2 ~ /^[0-9]+$/ {n = "priority" $2; off = 2}
    n != "" {
      if (kind == "sim") {sent = $(off + 2); good = $(off + 3); bad = $(off + 4)}
      else {sent = $(off + 1); good = $(off + 3); bad = $(off + 4)}
      sub(/%$/, "", bad); print n, sent, good, bad; n = ""}' "$1"
}

# 1. The simulator.
for p in a100 1080ti; do
  peaks "$p"
  echo "$peak $over" > "$OUT/sim_$p.peak"
  sed "s/policies: .*/policies: [deferred]/" "$SIM" > "$OUT/sim.yaml"
  sed 's/^workload: {\(.*\)}$/workload: {\1, priorities: [0.5, 0.5]}/' "$OUT/sim.yaml" > "$OUT/sim2.yaml"
  build/bin/tutti sim run "$OUT/sim.yaml" --rate "$over" > "$OUT/sim_one_$p.txt" 2> /dev/null
  build/bin/tutti sim run "$OUT/sim2.yaml" --rate "$over" > "$OUT/sim_two_$p.txt" 2> /dev/null
  rows "$OUT/sim_one_$p.txt" sim > "$OUT/sim_one_$p.rows"
  rows "$OUT/sim_two_$p.txt" sim > "$OUT/sim_two_$p.rows"
done

# 2. The real clock.
peaks "$REAL_PROFILE"
if [ "$ROUNDS" -gt 0 ]; then
  "${SERVER_CPUS[@]}" build/bin/tutti serve --repo bench/emulated_repository --config "$CONFIG" --port "$PORT" \
    --grpc-port -1 > "$OUT/server.log" 2>&1 &
  SERVER=$!
  trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
  await_server "$PORT" "$SERVER" "$OUT/server.log"
  load() {  # $1: rate, $2: --priorities value ("" : none), $3: output
    "${CLIENT_CPUS[@]}" build/bin/tutti load --models resnet50 --rate "$1" --slo-ms "$SLO" --duration-s "$DURATION" \
      --warmup-s 2 --port "$PORT" --seed "$RANDOM" ${2:+--priorities "$2"} > "$3" 2>&1 || true
  }
  for r in $(seq "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    load "$peak" "" "$OUT/peak_$r.txt"
    load "$over" "" "$OUT/one_$r.txt"
    load "$over" 0.5,0.5 "$OUT/two_$r.txt"
    for k in peak one two; do rows "$OUT/${k}_$r.txt" load > "$OUT/${k}_$r.rows"; done
  done
fi

# The goodput ratio is against the better single-level goodput of the same
# round (at P or at 1.5 P): the peak as this server reached it.
table() {
  {
    echo "| where | GPUs | case | offered r/s | priority 1 bad | priority 2 bad | all bad | goodput r/s | goodput ÷ single-level peak |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for p in a100 1080ti; do
      read -r speak sover < "$OUT/sim_$p.peak"
      awk -v peak="$speak" -v over="$sover" -v p="$p" '
        FILENAME ~ /sim_one/ && $1 == "total" {
          printf "| simulator | %s | one level | %d | – | – | %.2f%% | %.0f | %.3f |\n", p, over, $4, $3, $3 / peak}
        FILENAME ~ /sim_two/ && $1 == "priority1" {h = $4}
        FILENAME ~ /sim_two/ && $1 == "priority2" {l = $4}
        FILENAME ~ /sim_two/ && $1 == "total" {t = $4; g = $3}
        END {printf "| simulator | %s | two levels | %d | %.2f%% | %.2f%% | %.2f%% | %.0f | %.3f |\n", p, over, h, l, t, g,
                    g / peak}
      ' "$OUT/sim_one_$p.rows" "$OUT/sim_two_$p.rows"
    done
    if [ "$ROUNDS" -gt 0 ]; then
      for k in peak one two; do
        for r in $(seq "$ROUNDS"); do
          awk 'FNR == 1 {f++} f <= 2 && $1 == "total" && $3 > best {best = $3} f == 3 {x[$1] = $3; b[$1] = $4}
            END {printf "%s %s %s %s %s\n", b["priority1"] + 0, b["priority2"] + 0, b["total"] + 0, x["total"] + 0,
                        (best > 0 ? x["total"] / best : 0)}' \
            "$OUT/peak_$r.rows" "$OUT/one_$r.rows" "$OUT/${k}_$r.rows"
        done > "$OUT/$k.summary"
        # Median and worst of each column (worst: the highest bad, the lowest goodput).
        awk -v k="$k" -v peak="$peak" -v over="$over" -v p="$REAL_PROFILE" "$COLUMN_STATS_AWK"'
          {for (c = 1; c <= 5; c++) col[NR, c] = $c}
          END {
            name = k == "two" ? "two levels" : "one level"
            rate = k == "peak" ? peak : over
            p1 = k == "two" ? sprintf("%.2f%% [%.2f%%]", med(1), worst(1, 1)) : "–"
            p2 = k == "two" ? sprintf("%.2f%% [%.2f%%]", med(2), worst(2, 1)) : "–"
            printf "| real clock | %s | %s | %d | %s | %s | %.2f%% [%.2f%%] | %.0f [%.0f] | %.3f [%.3f] |\n", p, name, rate, p1, p2,
                   med(3), worst(3, 1), med(4), worst(4, 0), med(5), worst(5, 0)
          }' "$OUT/$k.summary"
      done
    fi
  } > "$OUT/table.md"
}
table
cat "$OUT/table.md"
echo "real clock on $REAL_PROFILE: single-level simulated peak $peak r/s, overload $over r/s; logs in $OUT"

if [ "$WRITE_DOCS" = 1 ]; then
  echo >> "$OUT/table.md"
  echo "Offered: 1.5 P, with P the simulator's single-level goodput (A100: $(cut -d' ' -f1 "$OUT/sim_a100.peak") r/s; 1080Ti: $(cut -d' ' -f1 "$OUT/sim_1080ti.peak") r/s); the real clock's first row runs one level at P. Real clock: $ROUNDS runs of $DURATION s (2 s warm-up), medians, the worst run in brackets; bad counts late answers and errors (requests dropped: HTTP 503) as the client saw them." >> "$OUT/table.md"
  write_results_page priorities "Priorities under overload" \
    "At 1.5 times capacity, with half the requests at priority 1 and half at 2, does priority 1 keep its bad rate within 1% while priority 2 absorbs the excess, and does the whole keep its goodput within 5% of the single-level peak?" \
    "bench/priorities.sh --write-docs" \
    "Emulated ResNet50 on 8 emulated GPUs (Symphony appendix C: A100, SLO 20 ms; GTX 1080Ti, SLO 27 ms), Poisson arrivals, deferred scheduling with early drop, the model with \`dynamic_batching: {priority_levels: 2, default_priority_level: 2}\`. The simulator is deterministic (seed 1, 10 s, 1 s warm-up). On the real clock ($REAL_PROFILE: the A100's rates are beyond one I/O loop of this machine), \`tutti serve\` runs on CPU 0 and \`tutti load\` on CPU 1; each round runs one level at P, then one level and two levels (\`--priorities 0.5,0.5\`) at 1.5 P; a round's goodput ratio is against the better single-level goodput of that round." \
    "$OUT/table.md"
fi

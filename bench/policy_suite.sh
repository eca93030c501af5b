#!/usr/bin/env bash
# Scheduling policies across workloads, in the simulator (the same scheduler
# objects as the server): the goodput (p99 within every model's objective)
# of deferred with early drop (Symphony), of adaptive (the default),
# of eager, of timeout (Triton's dynamic batcher, the best of 1, 2 and 5
# ms) and of nexus, their ratios to eager, and adaptive's ratio to the
# better of deferred and eager (the bar: 0.99), on
#   - the A100 and GTX 1080Ti zoos of Symphony's appendix C (Tables 4 and 3,
#     data/profiles/symphony_zoo_*.csv): every model ("mixed"), the
#     strong-batching ones (beta/alpha > 2: batching pays) and the weak ones;
#   - 16, 32, 64 and 128 GPUs, Poisson arrivals, equal popularity;
#   - at 64 GPUs also Zipf popularity (exponent 1) and bursty Gamma arrivals
#     (shape 0.25: CV 2), mixed zoo, each policy's median over BURSTY_SEEDS.
# Then, at 10% and 50% of eager's goodput (mixed zoos, 64 GPUs), the p50,
# p99 and GPU-seconds of eager, deferred and the default in a fixed pool
# and consolidating. Deterministic (fixed seed): one run per cell. About 12
# minutes.
#   bench/policy_suite.sh [GPU_COUNTS] [--write-docs]
# (after scripts/build.sh; default "16 32 64 128"). --write-docs writes
# docs/benchmarks/policy_suite.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/results_page.sh
parse_write_docs "$@"
set -- "${ARGS[@]+"${ARGS[@]}"}"
GPU_COUNTS=${1:-16 32 64 128}
DURATION_S=${DURATION_S:-10}
# The goodput search's relative precision: finer than the 1% bar the suite
# checks (a/max), so that one search step cannot decide a cell.
TOLERANCE=${TOLERANCE:-0.002}
# Bursty arrivals: 10 s of them decide a goodput only within a few percent
# (eager's own varies so from seed to seed), so those cells take each
# policy's median over these seeds.
BURSTY_SEEDS=${BURSTY_SEEDS:-1 2 3 4 5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Model names of a zoo CSV (model,alpha_ms,beta_ms,slo_ms) by batching strength.
names() {  # $1: csv, $2: strong | weak
  awk -F, -v want="$2" '!/^#/ && $1 != "model" {
    strong = ($3 / $2 > 2); if ((want == "strong") == strong) printf "%s%s", (n++ ? ", " : ""), $1 }' "$1"
}

# One cell: prints the goodputs of deferred, adaptive, eager, timeout (best)
# and nexus, then d/e, a/e, t/e, n/e and a/max(d, e). With several seeds,
# each policy's goodput is its median over them.
cell() {  # $1: zoo csv, $2: subset (mixed|strong|weak), $3: gpus, $4: workload YAML, $5: seeds ("1")
  local csv=$PWD/$1 models seed
  case $2 in
    mixed) models="  - {zoo: $csv}" ;;
    *) models="  - {zoo: $csv, names: [$(names "$1" "$2")]}" ;;
  esac
  for seed in ${5:-1}; do
    cat > "$work/x.yaml" <<EOF
seed: $seed
duration_s: $DURATION_S
warmup_s: 1
gpus: $3
policies: [deferred+early, adaptive+early, eager, timeout, nexus]
timeout_delays_ms: [1, 2, 5]
models:
$models
workload: $4
EOF
    build/bin/tutti sim compare "$work/x.yaml" --goodput --tolerance "$TOLERANCE" 2> /dev/null |
      awk '$1 == "deferred+early" && !d {d = $2} $1 == "adaptive+early" && !a {a = $2} $1 == "eager" && !e {e = $2}
           $1 ~ /^timeout[(]/ && $2 + 0 > t {t = $2} $1 == "nexus" && !n {n = $2}
           END {print d, a, e, t, n}'
  done | awk '
    function median(col,   k, i, j, x, v) {
      for (i = 1; i <= NR; i++) v[i] = g[i, col]
      for (i = 2; i <= NR; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
      return NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    }
    {for (k = 1; k <= 5; k++) g[NR, k] = $k}
    END {d = median(1); a = median(2); e = median(3); t = median(4); n = median(5); m = d > e ? d : e
         printf "%9.0f %9.0f %9.0f %9.0f %9.0f %6.2fx %6.2fx %6.2fx %6.2fx %7.3fx", d, a, e, t, n,
                (e > 0 ? d / e : 0), (e > 0 ? a / e : 0), (e > 0 ? t / e : 0), (e > 0 ? n / e : 0), (m > 0 ? a / m : 0)}'
}

{
printf "%-7s %-7s %5s  %-26s %9s %9s %9s %9s %9s %7s %7s %7s %7s %8s\n" zoo models GPUs arrivals deferred adaptive eager \
  timeout nexus d/e a/e t/e n/e a/max
for zoo in a100 1080ti; do
  csv=data/profiles/symphony_zoo_$zoo.csv
  for subset in mixed strong weak; do
    for g in $GPU_COUNTS; do
      out=$(cell "$csv" "$subset" "$g" "{arrival: poisson, rate: $((g * 100))}")
      printf "%-7s %-7s %5d  %-26s %s\n" "$zoo" "$subset" "$g" "poisson, equal" "$out"
      if [[ $subset == mixed && $g == 64 ]]; then echo "$out" | awk '{print $3 / 2}' > "$work/half_$zoo"; fi
    done
  done
  printf "%-7s %-7s %5d  %-26s %s\n" "$zoo" mixed 64 "poisson, zipf 1" \
    "$(cell "$csv" mixed 64 "{arrival: poisson, rate: 6400, zipf: 1}")"
  printf "%-7s %-7s %5d  %-26s %s\n" "$zoo" mixed 64 "gamma (CV 2), equal" \
    "$(cell "$csv" mixed 64 "{arrival: gamma, gamma_shape: 0.25, rate: 6400}" "$BURSTY_SEEDS")"
done

# Latency and GPU time below capacity: at 10% and 50% of eager's goodput
# (mixed zoos, 64 GPUs), each policy's p50 and p99, and the GPU-seconds its
# batches ran — eager, deferred, and the default (adaptive) in a fixed pool
# (latency: idle GPUs answer at once) and consolidating (as when
# autoscaling: GPU time saved). Also the GPUs that ran batches and how
# busy those were: deferral keeps the highest-numbered idle (releasable).
for zoo in a100 1080ti; do
  [[ -f $work/half_$zoo ]] || continue
  for share in 0.2 1; do  # of half of eager's goodput: 10% and 50%
    rate=$(awk -v h="$(cat "$work/half_$zoo")" -v s="$share" 'BEGIN {printf "%.0f", h * s}')
    printf "\n%s, mixed, 64 GPUs, Poisson at %s r/s (%s%% of eager's goodput):\n" "$zoo" "$rate" \
      "$(awk -v s="$share" 'BEGIN {print 50 * s}')"
    cat > "$work/x.yaml" <<EOF
seed: 1
duration_s: $DURATION_S
warmup_s: 1
gpus: 64
policies: [eager, deferred+early, adaptive+early, adaptive+early+consolidate]
models:
  - {zoo: $PWD/data/profiles/symphony_zoo_$zoo.csv}
workload: {arrival: poisson, rate: $rate}
EOF
    build/bin/tutti sim compare "$work/x.yaml" 2> /dev/null |
      awk '$1 == "policy" {printf "  %-28s %8s %8s %8s %9s %5s %6s\n", "policy", "bad", "p50 ms", "p99 ms", "GPU-s", "GPUs", "busy"}
           $1 ~ /^(deferred|adaptive|eager)/ && NF == 9 {
             name = $1; sub(/\+consolidate$/, " (consolidate)", name); sub(/^adaptive\+early$/, "adaptive+early (latency)", name)
             printf "  %-28s %8s %8s %8s %9s %5s %6s\n", name, $3, $4, $5, $9, $7, $8}'
  done
done
} | tee "$work/out.txt"

if [ "$WRITE_DOCS" = 1 ]; then
  # The goodput table as markdown; the latency tables as they are.
  awk '
    NR == 1 {print "| zoo | models | GPUs | arrivals | deferred | adaptive | eager | timeout | nexus | d/e | a/e | t/e | n/e | a/max |"
             print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"; next}
    /^[a-z0-9]+ +(mixed|strong|weak) / {
      n = split($0, f, /  +/)
      line = "|"; for (i = 1; i <= n; i++) if (f[i] != "") line = line " " f[i] " |"
      print line; next}
    /^$/ {print ""; next}
    {print}' "$work/out.txt" | sed 's/^\(a100\|1080ti\), mixed, 64 GPUs,/**&/; s/goodput):$/goodput):**/' > "$work/page.md"
  write_results_page policy_suite "Policies across workloads" \
    "Where does deferral win and lose against eager, timeout and nexus, does the default (adaptive) keep at least 0.99 of the better of deferred and eager in every workload, and what do the policies cost in latency and GPU time below capacity?" \
    "bench/policy_suite.sh --write-docs" \
    "The simulator, deterministic (seed 1, 10 s, 1 s warm-up; the bursty Gamma rows take each policy's median over seeds 1 to 5, since 10 s of bursts fix a goodput only within a few percent). Goodput is the highest rate with every model's p99 within its objective, searched to 0.2% (finer than the 1% bar it checks). Below capacity, the rates are 10% and 50% of eager's goodput on the mixed zoos at 64 GPUs; GPU-s is the GPU time batches took; GPUs counts those that ran a batch, busy how busy those were." \
    "$work/page.md"
fi

# Sourced by the benchmark scripts that keep a results page in
# docs/benchmarks/: one page per experiment, its latest table, rewritten by
# the script itself (`--write-docs`), so that re-measuring is one command
# and the page always matches its script. History lives in git.

# Takes --write-docs out of the arguments: WRITE_DOCS=1 if it was there,
# the others left in ARGS.
parse_write_docs() {
  WRITE_DOCS=0
  ARGS=()
  local a
  for a in "$@"; do
    if [ "$a" = --write-docs ]; then WRITE_DOCS=1; else ARGS+=("$a"); fi
  done
}

# The machine in one line: CPU model, cores, memory, and what else ran.
machine_line() {
  local cpu cores mem load
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  cores=$(nproc)
  mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "${cpu:-unknown CPU}, $cores cores, $mem; 1-minute load average $load when the run ended"
}

# write_results_page NAME TITLE QUESTION COMMAND METHOD TABLE_FILE
# writes docs/benchmarks/NAME.md.
write_results_page() {
  local name=$1 title=$2 question=$3 command=$4 method=$5 table=$6
  local page=docs/benchmarks/$name.md commit
  commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
  git diff --quiet HEAD -- src bench scripts CMakeLists.txt 2> /dev/null || commit="$commit (with uncommitted changes to the code)"
  mkdir -p docs/benchmarks
  {
    echo "# $title"
    echo
    echo "<!-- Written by \`$command\`; edit the script, not this page. -->"
    echo
    echo "**Question.** $question"
    echo
    echo "**Command.**"
    echo
    echo '```sh'
    echo "$command"
    echo '```'
    echo
    echo "**Method.** $method"
    echo
    echo "**Latest run:** $(date -u +%Y-%m-%d), commit $commit; $(machine_line)."
    echo
    cat "$table"
  } > "$page"
  echo "wrote $page"
}

# Awk functions over a table of rows read into col[row, column] (rows
# 1..NR): med(c), the median of column c, and worst(c, high), its highest
# (high = 1) or lowest value. Prepend to a program: awk "$COLUMN_STATS_AWK"'…'.
COLUMN_STATS_AWK='
  function med(c,   i, j, x, v) {
    for (i = 1; i <= NR; i++) v[i] = col[i, c]
    for (i = 2; i <= NR; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  }
  function worst(c, high,   i, w) {
    w = col[1, c]; for (i = 2; i <= NR; i++) if (high ? col[i, c] > w : col[i, c] < w) w = col[i, c]; return w
  }
'

# Waits until the server on PORT is ready; if its process PID exits first,
# prints its LOG and exits 1.
await_server() {  # PORT PID LOG
  until curl -sf "127.0.0.1:$1/v2/health/ready" > /dev/null; do
    kill -0 "$2" 2> /dev/null || { cat "$3" >&2; exit 1; }
    sleep 0.2
  done
}

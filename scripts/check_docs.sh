#!/usr/bin/env bash
# The documentation cannot rot (a CTest, docs_check):
#   - every relative link in README.md and docs/ resolves, and none leaves
#     the repository;
#   - README.md is at most 250 lines;
#   - no history of measurements or issue numbers in README.md, docs/ or src/
#     ("final code", "N rounds", "issue N"; installed npm packages aside);
#   - docs/reference/cli.md is what scripts/write_cli_reference.sh writes
#     from the binary's --help;
#   - every `tutti` command in docs/getting_started/ uses flags its --help
#     lists, and every script it runs exists;
#   - every `tutti sim ACTION FILE.yaml` in README.md, docs/ and bench/*.sh
#     reads every key of its file (`tutti sim ... --check`, which also
#     names the policies it runs).
# (The config references are checked against their parsers by
# DocsTest.* in C++.)
#   scripts/check_docs.sh [TUTTI]   (default build/bin/tutti)
set -uo pipefail
cd "$(dirname "$0")/.."
TUTTI=${1:-build/bin/tutti}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

pages=(README.md $(find docs -name '*.md' | sort))
root=$(pwd -P)

# Links: [text](target) with a relative target (no scheme, no leading #).
for page in "${pages[@]}"; do
  dir=$(dirname "$page")
  while IFS= read -r target; do
    target=${target%%#*}
    [ -z "$target" ] && continue
    case $target in http://* | https://* | mailto:*) continue ;; esac
    resolved=$(realpath -m "$dir/$target")
    case $resolved in
      "$root"/*) [ -e "$resolved" ] || fail "$page: link to $target: no such file" ;;
      *) fail "$page: link to $target leaves the repository" ;;
    esac
  done < <(grep -o '\](\([^)]*\))' "$page" | sed 's/^](\(.*\))$/\1/')
  grep -n '\.\./shared\|/work/' "$page" | sed "s|^|FAIL: $page: a reference outside the repository: |" | grep . && failures=$((failures + 1))
done

lines=$(wc -l < README.md)
[ "$lines" -le 250 ] || fail "README.md has $lines lines (at most 250)"

history=$(grep -rnE 'final code|[0-9]+ rounds|issue [0-9]+' README.md docs src --exclude-dir=node_modules)
[ -z "$history" ] || fail "history or issue numbers in the docs or code:"$'\n'"$history"

if [ -x "$TUTTI" ]; then
  fresh=$(mktemp)
  scripts/write_cli_reference.sh "$TUTTI" "$fresh" > /dev/null
  diff -u docs/reference/cli.md "$fresh" > /dev/null ||
    fail "docs/reference/cli.md differs from the binary's --help: run scripts/write_cli_reference.sh"
  rm -f "$fresh"

  # Commands in getting_started: the lines of fenced blocks.
  for page in docs/getting_started/*.md; do
    while IFS= read -r line; do
      line=${line%%#*}
      set -- $line
      [ $# -gt 0 ] || continue
      case $1 in
        build/bin/tutti)
          cmd=$2 sub=""
          [ "$cmd" = bench ] && sub=$3
          help=$("$TUTTI" $cmd $sub --help 2>&1)
          for flag in $(echo "$line" | grep -oE -- '--[a-z][a-z0-9-]*'); do
            echo "$help" | grep -qE -- "(^|[[:space:]])$flag([[:space:]=]|$)" ||
              fail "$page: tutti $cmd $sub has no flag $flag"
          done ;;
        scripts/* | bench/*) [ -e "$1" ] || fail "$page: no such script: $1" ;;
      esac
    done < <(awk '/^```(sh|bash)/ {on = 1; next} /^```/ {on = 0} on' "$page")
  done

  # Experiment files under the commands that run them (with their --policy).
  while read -r action file policy; do
    out=$("$TUTTI" sim "$action" "$file" ${policy:+--policy "$policy"} --check 2>&1) || fail "$out"
  done < <(grep -rhoE --include='*.md' --include='*.sh' \
             'tutti sim (run|compare|goodput) [A-Za-z0-9_./-]+\.yaml( --[a-z-]+ [A-Za-z0-9_.+-]+)*' README.md docs bench |
             awk '{p = ""; for (i = 5; i < NF; i++) if ($i == "--policy") p = $(i + 1); print $3, $4, p}' | sort -u |
             while read -r a f p; do [ -e "$f" ] && echo "$a $f $p"; done)
else
  fail "no tutti binary at $TUTTI to check the CLI reference against"
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures documentation check(s) failed"
  exit 1
fi
echo "documentation checks passed (${#pages[@]} pages)"

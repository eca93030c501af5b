#!/usr/bin/env bash
# Writes docs/reference/cli.md from the `tutti` binary's own --help: the
# command list, then each command's (and each `tutti bench` experiment's)
# help verbatim. scripts/check_docs.sh checks the page against the binary.
#   scripts/write_cli_reference.sh [TUTTI] [OUT]   (defaults build/bin/tutti, docs/reference/cli.md)
set -euo pipefail
cd "$(dirname "$0")/.."
TUTTI=${1:-build/bin/tutti}
OUT=${2:-docs/reference/cli.md}
help() { "$TUTTI" "$@" --help 2>&1 || true; }
{
  echo "# The \`tutti\` command line"
  echo
  echo "<!-- Written by scripts/write_cli_reference.sh from \`tutti … --help\`; a test checks it against the binary. -->"
  echo
  echo '```'
  "$TUTTI" --help 2>&1 || true
  echo '```'
  for cmd in $("$TUTTI" --help 2>&1 | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
    echo
    echo "## tutti $cmd"
    echo
    echo '```'
    help "$cmd"
    echo '```'
    if [ "$cmd" = bench ]; then
      for exp in $(help bench | awk '/^experiments:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
        echo
        echo "### tutti bench $exp"
        echo
        echo '```'
        help bench "$exp"
        echo '```'
      done
    fi
  done
} > "$OUT"
echo "wrote $OUT"

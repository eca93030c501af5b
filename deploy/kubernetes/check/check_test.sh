#!/usr/bin/env bash
# The schema check of deploy/kubernetes/ (check.mjs) passes the shipped
# manifests and fails a broken one, naming what is wrong: a wrong type, and
# a kind no schema knows.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ -d "$here/node_modules" ] || { echo "npm packages missing: run scripts/setup.sh" >&2; exit 1; }
node "$here/check.mjs" "$here"/../*.yaml
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/bad.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec: {replicas: two, selector: {matchLabels: {app: x}}, template: {metadata: {labels: {app: x}}, spec: {containers: []}}}
---
apiVersion: apps/v1
kind: Deploymint
metadata: {name: typo}
YAML
if node "$here/check.mjs" "$work/bad.yaml" > "$work/out" 2>&1; then
  echo "a broken manifest passed the check" >&2
  exit 1
fi
grep -q "FAIL: .*Deployment broken: .*replicas must be integer" "$work/out" || { cat "$work/out" >&2; exit 1; }
grep -q "FAIL: .*Deploymint typo: no schema" "$work/out" || { cat "$work/out" >&2; exit 1; }
echo "ok: a broken manifest is refused, naming its faults"

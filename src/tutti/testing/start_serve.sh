# Sourced by the shell tests: start_serve TUTTI LOG ARGS… starts
# `TUTTI serve ARGS… --port 0` (any free port: no race with other tests for
# a port picked beforehand) with its output in LOG, and waits until it
# serves. Sets served_pid and served_port. Fails the test, with the log,
# if the server exits first or does not serve within 60 s.
start_serve() {
  local tutti=$1 log=$2
  shift 2
  "$tutti" serve "$@" --port 0 > "$log" 2>&1 &
  served_pid=$!
  local i
  for i in $(seq 1 600); do
    served_port=$(sed -n 's|^Tutti is serving .* on https\{0,1\}://[^:]*:\([0-9][0-9]*\) .*|\1|p' "$log" | head -1)
    if [ -n "$served_port" ]; then
      local scheme=http
      grep -q "^Tutti is serving .* on https://" "$log" && scheme=https
      curl -sfk "$scheme://127.0.0.1:$served_port/v2/health/ready" > /dev/null && return 0
    fi
    if ! kill -0 "$served_pid" 2> /dev/null; then
      echo "FAIL: tutti serve exited before serving:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "FAIL: tutti serve did not serve within 60 s:" >&2
  cat "$log" >&2
  exit 1
}

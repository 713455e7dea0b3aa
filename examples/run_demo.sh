#!/usr/bin/env bash
# Build the transfer demo and run it: a listener and a connector on 127.0.0.1 exchange
# seed-paper objects and a derived strided array over UCX, verify them and print a table.
#   examples/run_demo.sh [PORT]     (default: any free port)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${CDT_BUILD_DIR:-$root/build-demo}"
port="${1:-0}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target transfer_demo -j2 >/dev/null
demo="$build/examples/c/transfer_demo"
log=$(mktemp)
"$demo" listen "$port" >"$log" 2>&1 &
listener=$!
trap 'kill "$listener" 2>/dev/null || true; rm -f "$log"' EXIT
# the listener prints the port it bound
for _ in $(seq 1 100); do
  port=$(sed -n 's/^listener: waiting on 127.0.0.1:\([0-9]*\)$/\1/p' "$log")
  [ -n "$port" ] && break
  kill -0 "$listener" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ] || [ "$port" = 0 ]; then
  cat "$log" >&2
  echo "run_demo: the listener did not start" >&2
  exit 1
fi
status=0
timeout 120 "$demo" connect 127.0.0.1 "$port" || status=$?
wait "$listener" || status=$?
cat "$log"
trap - EXIT
rm -f "$log"
exit $status

#!/usr/bin/env bash
# Build the transfer demo and run it: a listener and a connector on 127.0.0.1 exchange
# seed-paper objects and a derived strided array over UCX, verify them and print a table.
#   examples/run_demo.sh [PORT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${CDT_BUILD_DIR:-$root/build-demo}"
port="${1:-13377}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target transfer_demo -j2 >/dev/null
demo="$build/examples/c/transfer_demo"
"$demo" listen "$port" &
listener=$!
trap 'kill "$listener" 2>/dev/null || true' EXIT
status=0
timeout 120 "$demo" connect 127.0.0.1 "$port" || status=$?
wait "$listener" || status=$?
trap - EXIT
exit $status

#!/usr/bin/env bash
# Two ends of one endpoint on different UCX release lines (docs/TRANSPORT.md §1, "Peers on
# different UCX versions do not talk"): examples/c/transfer_demo from a build against the
# system's UCX (1.13) and one against the libucx-cu12 wheel (1.22), over loopback, checked
# against the table there. Usage: tests/transport/cross_ucx.sh SYSTEM_BUILD WHEEL_BUILD
# Exits 0 when every combination ends as the table says (1 otherwise, naming it); 77 when a
# build is missing.
set -uo pipefail
sys_demo=$1/examples/c/transfer_demo
whl_demo=$2/examples/c/transfer_demo
[ -x "$sys_demo" ] && [ -x "$whl_demo" ] || { echo "cross_ucx: no transfer_demo in both builds"; exit 77; }
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# run LISTENER CONNECTOR EXPECT [VAR=VALUE...]: EXPECT is ok (the demo's objects all verified)
# or fail (the connector exits non-zero within its bound)
run() {
  local lis=$1 con=$2 expect=$3
  shift 3
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env "$@" timeout 60 "$lis" listen "$port" >"$tmp/l.log" 2>&1 &
  local lpid=$!
  sleep 1
  env "$@" timeout 50 "$con" connect 127.0.0.1 "$port" >"$tmp/c.log" 2>&1
  local rc=$?
  kill "$lpid" 2>/dev/null
  wait "$lpid" 2>/dev/null
  local got=fail
  [ $rc -eq 0 ] && got=ok
  local what="$(basename "$(dirname "$(dirname "$(dirname "$con")")")") -> $(basename "$(dirname "$(dirname "$(dirname "$lis")")")") [$*]"
  if [ "$got" = "$expect" ]; then
    echo "cross_ucx: $what: $got, as documented"
  else
    echo "cross_ucx: $what: $got, documented $expect (docs/TRANSPORT.md §1 is out of date)"
    sed 's/^/    /' "$tmp/c.log" | tail -5
    failed=1
  fi
}

run "$whl_demo" "$sys_demo" fail
run "$sys_demo" "$whl_demo" fail
run "$whl_demo" "$sys_demo" fail UCX_CM_USE_ALL_DEVICES=n
run "$whl_demo" "$sys_demo" ok UCX_CM_USE_ALL_DEVICES=n UCX_RNDV_SCHEME=am
run "$sys_demo" "$whl_demo" fail UCX_CM_USE_ALL_DEVICES=n UCX_RNDV_SCHEME=am
exit $failed

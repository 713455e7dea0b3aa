#!/usr/bin/env bash
# The packaging check of the Python package (scripts/test, "packaging"; docs/TESTING.md):
#  1. `python -m build --sdist python/` gives cdtypes-VERSION.tar.gz, which must carry libcdt's
#     sources (python/build_backend/cdtypes_build.py copies them into _libcdt/);
#  2. a fresh venv (no system site-packages) in an empty temporary folder, outside the checkout,
#     gets `pip install cdtypes-VERSION.tar.gz` and numpy (from the registry, like a user's);
#  3. from that folder, with the venv's interpreter (tests/install/python_smoke.py):
#     cdtypes is imported from the venv, never the checkout, and `import cdtypes` maps no UCX;
#     `python -m cdtypes --info` names the venv's libcdt and transport files; an object with
#     NumPy arrays is sent over UCX (cdtypes.ucx) from one process to another and received
#     equal.
# Usage: tests/install/python-sdist.sh [WORK_DIR]   (default: a temporary folder; one inside
#   the checkout is replaced by a temporary one, so that nothing there can be imported)
#   PYTHON   the interpreter that builds the sdist and makes the venv (python3); it needs the
#            `build` module (scripts/setup installs it) and the registry for the build's
#            requirements (scikit-build-core, cffi) and numpy
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=
[ -n "${1:-}" ] && work=$(mkdir -p "$1" && cd "$1" && pwd)
python=${PYTHON:-python3}
export UCX_WARN_UNUSED_ENV_VARS=n
fail() { echo "python packaging check: $*" >&2; exit 1; }

# the folder outside the checkout where the venv lives and the smoke test runs
case "$work/" in "$root"/* | /)
  work=$(mktemp -d "${TMPDIR:-/tmp}/cdtypes-sdist.XXXXXX")
  trap 'rm -rf "$work"' EXIT ;;
esac
rm -rf "$work/dist" "$work/venv" "$work/run"
mkdir -p "$work/dist" "$work/run"

# --- 1. the sdist ----------------------------------------------------------------------------
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/python/pyproject.toml")
"$python" -m build --sdist -o "$work/dist" "$root/python" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "python -m build --sdist failed"; }
sdist="$work/dist/cdtypes-$version.tar.gz"
[ -f "$sdist" ] || fail "no $sdist"
[ ! -e "$root/python/_libcdt" ] || fail "the sdist build left python/_libcdt behind"
listing=$(tar tzf "$sdist")
for f in _libcdt/CMakeLists.txt _libcdt/libcdt/include/cdt.h _libcdt/libcdt/CMakeLists.txt \
  _libcdt/libcdt/src/sobj/cdt_sobj.c _libcdt/bindings/abi.txt _libcdt/cmake/cdtypes.pc.in \
  LICENSE CMakeLists.txt pyproject.toml build_backend/cdtypes_build.py; do
  grep -qx "cdtypes-$version/$f" <<<"$listing" || fail "the sdist lacks $f"
done
if tar tvzf "$sdist" | grep '^l'; then fail "the sdist holds symlinks (above)"; fi
echo "  sdist: $(basename "$sdist"), $(stat -c %s "$sdist") bytes, $(wc -l <<<"$listing") entries"

# --- 2. a fresh venv in an empty folder, the sdist installed ---------------------------------
cd "$work/run"
"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -v numpy "$sdist" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "pip install $(basename "$sdist") failed"; }
# pip -v shows which UCX the transport was built against (python/CMakeLists.txt)
ucx_line=$(grep -o 'cdtypes: the UCX transport (cdtypes.ucx) is built against UCX [^ ]*.*' \
  "$work/install.log" | head -1) || fail "pip install -v does not say which UCX the transport was built against"
echo "  pip -v: $ucx_line"

# --- 3. the smoke test, from the empty folder --------------------------------------------------
cp "$root/tests/install/python_smoke.py" "$work/smoke.py"
package=$("$py" "$work/smoke.py" where "$root") || fail "the installed package (above)"
echo "  cdtypes imported from $package; \`import cdtypes\` mapped no UCX"
"$py" -m cdtypes --info >"$work/info.txt" 2>&1 || { cat "$work/info.txt" >&2; fail "--info failed"; }
sed 's/^/    /' "$work/info.txt"
grep -q "^cdtypes $version\$" "$work/info.txt" || fail "--info does not name version $version"
grep -qF "libcdt: $version ($package/libcdtypes.so)" "$work/info.txt" ||
  fail "--info does not name the venv's libcdt ($package/libcdtypes.so)"
grep -qF "($package/libcdtypes-ucx.so)" "$work/info.txt" ||
  fail "--info does not name the venv's transport ($package/libcdtypes-ucx.so)"
if grep -F "$root" "$work/info.txt"; then fail "--info names files of the checkout (above)"; fi

# the artefact report (tests/install/artefacts.sh): the sdist, and the transport pip built from
# it, with the UCX that --info saw it load
transport=$(sed -n 's/^transport: \(UCX [^ ]*\) .*/\1/p' "$work/info.txt")
ucx_files=$(sed -n 's/^\(libuc[mpst]\): \(.*\)/\1 \2/p' "$work/info.txt" | paste -sd, - | sed 's/,/, /g')
"$root/tests/install/artefacts.sh" add "$sdist" \
  "none itself; pip builds the transport against the UCX pkg-config finds at install time"
"$root/tests/install/artefacts.sh" add-label "cdtypes/libcdtypes-ucx.so (pip install of the sdist)" \
  "$(stat -c %s "$package/libcdtypes-ucx.so")" \
  "${transport:-no transport} found at build time (--info): ${ucx_files:-no UCX file mapped}"

rm -f "$work/port"
"$py" "$work/smoke.py" recv "$work/port" >"$work/recv.log" 2>&1 &
receiver=$!
for _ in $(seq 300); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { kill "$receiver"; cat "$work/recv.log" >&2; fail "the receiver did not listen"; }
timeout 120 "$py" "$work/smoke.py" send "$(cat "$work/port")" ||
  { kill "$receiver"; fail "the sender failed"; }
wait "$receiver" || { cat "$work/recv.log" >&2; fail "the receiver failed"; }
echo "  UCX between two processes: $(cat "$work/recv.log")"
echo "python packaging check: the sdist installs in a fresh venv away from the checkout and works"

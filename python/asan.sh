#!/usr/bin/env bash
# The Python binding's buffer-lifetime tests under AddressSanitizer: libcdt and both compiled
# backends (cdtypes._ext, cdtypes._cffi_ext) built with -fsanitize=address, imported by the
# ordinary (uninstrumented) interpreter with the compiler's ASan runtime preloaded. A view that
# reads freed memory (a Frame's memory after close(), a receive buffer given back) is then a
# heap-use-after-free report and a failed run, not a silent wrong byte.
# Usage: python/asan.sh [pytest arguments]   (default: the buffer-lifetime tests)
#   PYTHON=python3   the interpreter (CPython: the C extension needs its C API)
#   CC=gcc|clang     the compiler; its own ASan runtime is preloaded
# Builds into build-pyasan/ (the package tree it tests: build-pyasan/site).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python3}
cc=${CC:-gcc}
build=build-pyasan
jobs=$(nproc 2>/dev/null || echo 2)

case "$("$cc" --version | head -1)" in
  *clang*) runtime=$("$cc" -print-file-name="libclang_rt.asan-$(uname -m).so") ;;
  *) runtime=$("$cc" -print-file-name=libasan.so) ;;
esac
if [ ! -f "$runtime" ]; then
  echo "python/asan.sh: $cc has no shared ASan runtime ($runtime)" >&2
  exit 1
fi

cmake -S python -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
  -DPython_EXECUTABLE="$(command -v "$python")" >/dev/null
cmake --build "$build" -j "$jobs"

# the package as pip would install it: the Python sources (cdtypes/_cffi/ is a package of its
# own), then what the build installs
site="$PWD/$build/site"
rm -rf "$site"
mkdir -p "$site/cdtypes"
(cd python && find cdtypes -name '*.py' -exec install -D -m 644 {} "$site/{}" \;)
cmake --install "$build" --component python --prefix "$site" >/dev/null

[ $# -gt 0 ] || set -- python/tests/test_buffer_lifetime.py
# detect_leaks=0: the interpreter keeps memory to its exit on purpose; PYTHONMALLOC=malloc:
# Python's own objects come from malloc too, so that ASan sees them; UCX_MEM_EVENTS=no: UCX's
# memory hooks and ASan's interceptors do not share malloc; CDTYPES_EXPECT_ASAN: the tests
# check that the runtime is really there
export LD_PRELOAD="$runtime" ASAN_OPTIONS=detect_leaks=0 \
  PYTHONMALLOC=malloc UCX_MEM_EVENTS=no PYTHONPATH="$site" CDTYPES_EXPECT_ASAN=1
failed=()
for backend in c cffi; do
  echo "== AddressSanitizer, CDTYPES_BACKEND=$backend: $python -m pytest $*"
  CDTYPES_BACKEND=$backend "$python" -c \
    "import cdtypes, sys; sys.exit(not cdtypes.__file__.startswith('$site'))" ||
    { echo "python/asan.sh: cdtypes is not imported from $site" >&2; exit 1; }
  # --capture=sys: an ASan report (written to fd 2 as the process ends) reaches the log
  if ! CDTYPES_BACKEND=$backend "$python" -m pytest -q -p no:cacheprovider --capture=sys "$@"; then
    failed+=("$backend")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "python/asan.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "python/asan.sh: all passed"

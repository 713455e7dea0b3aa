#!/usr/bin/env bash
# The Python binding's buffer-lifetime tests under AddressSanitizer: libcdt and both compiled
# backends (cdtypes._ext, cdtypes._cffi_ext) built with -fsanitize=address, imported by the
# ordinary (uninstrumented) interpreter with the compiler's ASan runtime preloaded. A view that
# reads freed memory (a Frame's memory after close(), a receive buffer given back) is then a
# heap-use-after-free report and a failed run, not a silent wrong byte.
# Usage: python/asan.sh [pytest arguments]   (default: the buffer-lifetime tests)
#        python/asan.sh --mpi                  the Python MPI scripts (python/tests/mpi_*.py)
#          at 2 ranks under MPICH, each rank under ASan WITH leak detection, suppressing only
#          the MPI library's and the interpreter's own allocations (python/tests/lsan_mpi.supp);
#          first a canary job that leaks through libcdt, which must fail
#   PYTHON=python3   the interpreter (CPython: the C extension needs its C API)
#   CC=gcc|clang     the compiler; its own ASan runtime is preloaded
# Builds into build-pyasan/ (the package tree it tests: build-pyasan/site).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# the interpreter itself, not a launcher script in front of it (pyenv's shims are bash scripts:
# under the preloaded runtime with leak detection, bash's own leaks failed every MPI job)
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
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

if [ "${1:-}" = "--mpi" ]; then
  # Each rank, not mpiexec, gets the runtime (env in front of the interpreter). Leak
  # detection on; fast_unwind_on_malloc=0: MPI's and the interpreter's stacks unwind whole, so
  # that the suppressions (by library and function name) match them and nothing else
  supp="$root/python/tests/lsan_mpi.supp"
  asan_env=(env LD_PRELOAD="$runtime" ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
    LSAN_OPTIONS=suppressions="$supp" PYTHONMALLOC=malloc UCX_MEM_EVENTS=no
    PYTHONPATH="$site")
  launcher=(mpiexec.mpich)
  command -v mpiexec.mpich >/dev/null || { echo "python/asan.sh: no mpiexec.mpich" >&2; exit 1; }
  tests=python/tests
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  echo "== AddressSanitizer + leaks, MPI: the canary (a type made through libcdt, never freed)"
  canary="import ctypes, os, cdtypes
from mpi4py import MPI
lib = ctypes.CDLL(os.path.join(os.path.dirname(cdtypes.__file__), 'libcdtypes.so'))
lib.cdt_type_predefined.restype = ctypes.c_void_p
lib.cdt_type_predefined.argtypes = [ctypes.c_int]
lib.cdt_type_contiguous.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
t = ctypes.c_void_p()
assert lib.cdt_type_contiguous(1000, lib.cdt_type_predefined(1), ctypes.byref(t)) == 0
print('canary: made a type, not freeing it')"
  if timeout 300 "${launcher[@]}" -n 1 "${asan_env[@]}" "$python" -c "$canary" >"$log" 2>&1 ||
    ! grep -q "detected memory leaks" "$log"; then
    cat "$log"
    echo "python/asan.sh: the canary's leak was not reported: leak detection is off or the" \
      "suppressions hide libcdt"
    exit 1
  fi
  grep -m1 "SUMMARY" "$log"
  failed=()
  # script, its arguments: every Python MPI script at 2 ranks
  jobs_=("mpi_roundtrip.py" "mpi_hostile.py 2" "mpi_coll.py" "mpi_pkl5.py" "mpi_exceptions.py"
    "mpi_dynamic.py merge" "mpi4py_suite/run_pkl5.py")
  for backend in c cffi; do
    for job in "${jobs_[@]}"; do
      read -r -a args <<<"$job"
      echo "== AddressSanitizer + leaks, CDTYPES_BACKEND=$backend: mpiexec -n 2 $job"
      if ! CDTYPES_BACKEND=$backend timeout 600 "${launcher[@]}" -n 2 "${asan_env[@]}" \
        "$python" "$tests/${args[0]}" "${args[@]:1}" >"$log" 2>&1; then
        cat "$log"
        failed+=("$backend: $job")
      elif grep -q "ERROR: \(Address\|Leak\)Sanitizer" "$log"; then
        cat "$log"
        failed+=("$backend: $job (report)")
      fi
    done
  done
  if [ ${#failed[@]} -gt 0 ]; then
    printf 'python/asan.sh --mpi: FAILED: %s\n' "${failed[@]}"
    exit 1
  fi
  echo "python/asan.sh --mpi: all passed"
  exit 0
fi

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

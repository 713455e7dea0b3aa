#!/usr/bin/env bash
# The Python binding's buffer-lifetime tests under AddressSanitizer: libcdt and both compiled
# backends (cdtypes._ext, cdtypes._cffi_ext) built with -fsanitize=address, imported by the
# ordinary (uninstrumented) interpreter with the compiler's ASan runtime preloaded. A view that
# reads freed memory (a Frame's memory after close(), a receive buffer given back) is then a
# heap-use-after-free report and a failed run, not a silent wrong byte.
# Usage: python/asan.sh [pytest arguments]   (default: the buffer-lifetime tests and the
#          plain-stream scan's, whose C walk reads bytes a peer sent)
#        python/asan.sh --mpi                  the Python MPI scripts (python/tests/mpi_*.py)
#          at 2 ranks under MPICH on both backends, and those whose paths change with the rank
#          count or the MPI library at 3 ranks and under Open MPI (with its own mpi4py, as
#          python/tests/test_mpi.py), each rank under ASan WITH leak detection, suppressing only
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
  # that the suppressions (by library and function name) match them and nothing else.
  # CDTYPES_WATCHDOG_SCALE: the scripts' deadlock watchdogs (90-120 s) four times as long,
  # within each job's timeout of 600 s (mpi4py's pkl5 suite at 2 ranks took 96-102 s here,
  # each malloc's stack unwound whole, at a load average of 25 on 2 cores).
  # intercept_tls_get_addr=0: GCC 12's runtime guesses the bounds of a thread's dynamic TLS
  # block from its address (a block at 16 bytes past a page boundary is taken for glibc 2.19's
  # header, whose bytes give the bounds), and ASan's own allocator puts one of ld.so's 8-byte
  # blocks there in some layouts: LeakSanitizer's tracer then scans from a bogus start and
  # dies at exit ("Tracer caught signal 11: addr=0x10320" in ScanRangeForPointers, the job
  # failing on every attempt in one checkout and never in another; google/sanitizers#1322).
  # The blocks are heap chunks that the thread's DTV points to, so the leak scan still reaches
  # what they hold without the interception
  supp="$root/python/tests/lsan_mpi.supp"
  asan_env=(env LD_PRELOAD="$runtime"
    ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0
    LSAN_OPTIONS=suppressions="$supp" PYTHONMALLOC=malloc UCX_MEM_EVENTS=no
    CDTYPES_WATCHDOG_SCALE=4 PYTHONPATH="$site")
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
  # MPI library, ranks, backends, script and its arguments: every Python MPI script at 2 ranks
  # under MPICH on both backends; at 3 ranks (more than one peer: bcast's tree forwards,
  # gather and the agreement meet several sources) and under Open MPI (its single-copy path
  # and error reporting: the discards' branch for it) the scripts whose paths change with
  # either, on one backend each, alternated so that each backend meets both libraries. Each
  # job takes 1-3 minutes here (2 cores, load 20-28): the jobs beyond the 2-rank MPICH ones
  # add about 15 minutes at that load
  jobs_=(
    "mpich 2 c,cffi mpi_roundtrip.py" "mpich 2 c,cffi mpi_hostile.py 2"
    "mpich 2 c,cffi mpi_coll.py" "mpich 2 c,cffi mpi_pkl5.py" "mpich 2 c,cffi mpi_exceptions.py"
    "mpich 2 c,cffi mpi_dynamic.py merge" "mpich 2 c,cffi mpi4py_suite/run_pkl5.py"
    "mpich 2 c mpi_release.py exit"
    "mpich 3 cffi mpi_coll.py" "mpich 3 c mpi_pkl5.py"
    "openmpi 2 c mpi_roundtrip.py" "openmpi 2 cffi mpi_hostile.py 2" "openmpi 2 cffi mpi_pkl5.py"
    "openmpi 2 c mpi_release.py finalize"
    "openmpi 2 c mpi_coll.py" "openmpi 3 cffi mpi_coll.py")
  # Open MPI: mpi4py built against it (scripts/setup; as python/tests/test_mpi.py), first on
  # the path; without it (or mpiexec.openmpi) its jobs are skipped and say so
  ompi_path=$("$python" scripts/mpi4py_openmpi_dir.py 2>/dev/null || true)
  ompi=(mpiexec.openmpi --allow-run-as-root --oversubscribe)
  if [ -z "$ompi_path" ] || [ ! -d "$ompi_path/mpi4py" ] ||
    ! command -v mpiexec.openmpi >/dev/null; then
    echo "python/asan.sh --mpi: no mpi4py for Open MPI (scripts/setup): its jobs are skipped"
    ompi=()
  fi
  for job in "${jobs_[@]}"; do
    read -r mpilib nranks backends script args_ <<<"$job"
    read -r -a args <<<"${args_:-}"
    if [ "$mpilib" = mpich ]; then
      run=("${launcher[@]}") path="$site"
    elif [ ${#ompi[@]} -gt 0 ]; then
      run=("${ompi[@]}") path="$ompi_path:$site"
    else
      continue
    fi
    for backend in ${backends//,/ }; do
      echo "== AddressSanitizer + leaks, $mpilib, CDTYPES_BACKEND=$backend:" \
        "mpiexec -n $nranks $script ${args[*]}"
      started=$SECONDS
      ok=1
      for attempt in 1 2 3; do
        ok=1
        CDTYPES_BACKEND=$backend timeout 600 "${run[@]}" -n "$nranks" "${asan_env[@]}" \
          PYTHONPATH="$path" "$python" "$tests/$script" "${args[@]}" >"$log" 2>&1 || ok=0
        # LeakSanitizer's own crash at a rank's exit ("Tracer caught signal 11 ... LeakSanitizer
        # has encountered a fatal error": its stop-the-world tracer, not a report; a known,
        # intermittent fault of the runtime, google/sanitizers#1353; the dynamic-TLS cause is
        # off above) is run again, up to three attempts in all; a leak or an ASan report is
        # never retried
        if [ $ok = 1 ] || [ $attempt = 3 ] ||
          ! grep -q "LeakSanitizer has encountered a fatal error" "$log" ||
          grep -q "ERROR: \(Address\|Leak\)Sanitizer" "$log"; then
          break
        fi
        echo "   LeakSanitizer's tracer crashed (not a report): once more"
      done
      if [ $ok = 0 ]; then
        cat "$log"
        failed+=("$mpilib -n $nranks $backend: $script ${args[*]}")
      elif grep -q "ERROR: \(Address\|Leak\)Sanitizer" "$log"; then
        cat "$log"
        failed+=("$mpilib -n $nranks $backend: $script ${args[*]} (report)")
      fi
      echo "   $((SECONDS - started)) s"
    done
  done
  if [ ${#failed[@]} -gt 0 ]; then
    printf 'python/asan.sh --mpi: FAILED: %s\n' "${failed[@]}"
    exit 1
  fi
  echo "python/asan.sh --mpi: all passed"
  exit 0
fi

[ $# -gt 0 ] || set -- python/tests/test_buffer_lifetime.py python/tests/test_stream_plain.py
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

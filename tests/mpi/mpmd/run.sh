#!/usr/bin/env bash
# One MPI job, three languages (issue 29, docs/MPI.md): MPMD jobs under MPICH in which every
# rank (C: mpmd_rank.c on cdt_mpi.h; Python: mpmd_rank.py on cdtypes.mpi; Rust:
# rust/cdtypes/examples/mpmd_rank.rs on cdtypes::mpi) sends every other rank the objects of
# the shared test vectors and a large one, and checks what it receives byte for byte.
#   1. C : Python : Rust, one rank each
#   2. C : Python (C extension) : Python (cffi backend) : Rust : C (two ranks of one language
#      too, and both Python backends)
#   3. under Open MPI, where its launcher and the C rank built for it exist: C : Rust : C (no
#      Python rank: mpi4py is built for MPICH here), the Rust rank built for Open MPI in its
#      own target folder (rust/target/openmpi)
# Julia joins the first job where it exists (julia/test/mpmd_rank.jl, checked statically by
# julia/check.sh otherwise).
# Needs: the C build (BUILD, default build/) with mpmd_rank_mpich, the Python package
# installed in PYTHON (default python3; python/test.sh installs it), cargo.
# Usage: tests/mpi/mpmd/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
build=${BUILD:-build}
python=${PYTHON:-python3}
c_rank="$build/tests/mpi/mpmd_rank_mpich"
[ -x "$c_rank" ] || { echo "mpmd: $c_rank not built (cmake --build $build)"; exit 1; }
"$python" -c "import cdtypes, mpi4py" || { echo "mpmd: $python lacks cdtypes or mpi4py"; exit 1; }
command -v mpiexec.mpich >/dev/null || { echo "mpmd: mpiexec.mpich not found"; exit 1; }

echo "== mpmd: the Rust rank (cargo build --example mpmd_rank --features mpi, MPICH)"
(cd rust && MPICC=mpicc.mpich cargo build -q -j "${CARGO_JOBS:-2}" -p cdtypes --features mpi \
  --example mpmd_rank)
rust_rank="$root/rust/target/debug/examples/mpmd_rank"
vectors="$root/tests/vectors"
py_rank="$root/tests/mpi/mpmd/mpmd_rank.py"
julia_part=()
if command -v julia >/dev/null 2>&1; then
  julia_part=(: -n 1 julia --project="$root/julia" "$root/julia/test/mpmd_rank.jl" "$vectors")
fi

run() { # label, expected "ok" lines, mpiexec arguments...
  local label=$1 want=$2
  shift 2
  echo "== mpmd: $label"
  local out
  local launcher=mpiexec.mpich
  case "$label" in "Open MPI"*) launcher=mpiexec.openmpi ;; esac
  if ! out=$(timeout 300 "$launcher" "$@" 2>&1); then
    echo "$out"
    echo "mpmd: $label FAILED"
    exit 1
  fi
  echo "$out" | grep "byte for byte ok"
  # Count occurrences, not lines: the launcher forwards each rank's output as it comes, so two
  # ranks' reports can share one line ("... okmpmd rank 2 ...").
  local got
  got=$(echo "$out" | grep -o "byte for byte ok" | wc -l)
  [ "$got" = "$want" ] || { echo "$out"; echo "mpmd: $label: $got of $want ranks ok"; exit 1; }
}

n=3
[ ${#julia_part[@]} -gt 0 ] && n=4
run "C : Python : Rust${julia_part:+ : Julia}" "$n" \
  -n 1 "$c_rank" "$vectors" : -n 1 "$python" "$py_rank" "$vectors" : -n 1 "$rust_rank" "$vectors" \
  "${julia_part[@]}"
run "C : Python (C extension) : Python (cffi) : Rust : C" 5 \
  -n 1 "$c_rank" "$vectors" \
  : -n 1 -env CDTYPES_BACKEND c "$python" "$py_rank" "$vectors" \
  : -n 1 -env CDTYPES_BACKEND cffi "$python" "$py_rank" "$vectors" \
  : -n 1 "$rust_rank" "$vectors" : -n 1 "$c_rank" "$vectors"
c_ompi="$build/tests/mpi/mpmd_rank_openmpi"
if [ -x "$c_ompi" ] && command -v mpiexec.openmpi >/dev/null && command -v mpicc.openmpi >/dev/null; then
  echo "== mpmd: the Rust rank for Open MPI (MPICC=mpicc.openmpi, rust/target/openmpi)"
  (cd rust && MPICC=mpicc.openmpi CARGO_TARGET_DIR="$root/rust/target/openmpi" cargo build -q \
    -j "${CARGO_JOBS:-2}" -p cdtypes --features mpi --example mpmd_rank)
  run "Open MPI: C : Rust : C" 3 --allow-run-as-root --oversubscribe \
    -n 1 "$c_ompi" "$vectors" : -n 1 "$root/rust/target/openmpi/debug/examples/mpmd_rank" "$vectors" \
    : -n 1 "$c_ompi" "$vectors"
else
  echo "== mpmd: Open MPI job skipped (mpiexec.openmpi, mpicc.openmpi or $c_ompi missing)"
fi
echo "mpmd: all jobs passed"

#!/usr/bin/env bash
# Everything CI runs for the Rust crates, from a clean checkout: formatting, clippy with
# warnings as errors, and the whole workspace's tests with every feature (unit, integration,
# two-process UCX, the serde bridge, doc examples), the example program run once, and the
# crates as published: their rustdoc as docs.rs builds it, and package-check.sh (the .crate
# files unpacked and used by a new project).
# Needs cargo (rustup), CMake, a C compiler and libucx-dev (scripts/setup installs them);
# installs libclang-dev (for bindgen) when it is missing.
# Environment: CARGO_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")"
jobs=${CARGO_JOBS:-2}

step() { printf '\n=== %s ===\n' "$*"; }

if ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q libclang; then
  step "installing libclang-dev (bindgen)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y libclang-dev || { $sudo apt-get update && $sudo apt-get install -y libclang-dev; }
fi
if ! command -v cargo >/dev/null; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
# cdtypes' `mpi` feature (on with --all-features) builds against the MPI that mpicc names; MPICH
# is the one mpi4py uses here, so that Rust ranks join Python and C ranks in one job
# (tests/mpi/mpmd). Its tests run under that MPI's mpiexec (cdtypes/tests/mpi.rs).
if [ -z "${MPICC:-}" ] && command -v mpicc.mpich >/dev/null; then
  export MPICC=mpicc.mpich
fi

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy --all-targets --all-features -- -D warnings"
cargo clippy -j "$jobs" --workspace --all-targets --all-features -- -D warnings
# the library alone, without its optional features (derive, serde); libcdt bundled as by default
cargo clippy -j "$jobs" -p cdtypes --no-default-features --features bundled -- -D warnings

step "cargo test --workspace --all-features (serde bridge included)"
cargo test -j "$jobs" --workspace --all-features

step "rustdoc of the published crates as docs.rs builds them (DOCS_RS, warnings are errors)"
# DOCS_RS: cdtypes-sys generates the bindings from its carried headers and builds no C; its own
# target folder, so that the tests' build of cdtypes-sys is not redone
DOCS_RS=1 RUSTDOCFLAGS="-D warnings" CARGO_TARGET_DIR="$PWD/target/docsrs" \
  cargo doc -j "$jobs" --no-deps -p cdtypes-sys -p cdtypes-derive -p cdtypes --features cdtypes/serde

step "example: two processes send a derived struct (examples/rust)"
cargo run -j "$jobs" -q -p cdtypes-examples

step "the crates as published: package, unpack, use from a new project (package-check.sh)"
./package-check.sh

printf '\nrust: all checks passed\n'

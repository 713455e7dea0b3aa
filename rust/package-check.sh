#!/usr/bin/env bash
# The Rust crates as users get them: package cdtypes-sys, cdtypes-derive and cdtypes
# (`cargo publish --dry-run`: each .crate builds on its own, cdtypes against the other two
# through cargo's temporary registry), unpack the three .crate files into an empty folder outside
# the repository, and build and run a new cargo project that depends on the unpacked crates
# (rust/package-check/main.rs: a raw cdtypes-sys call, a derived struct framed, and sent over UCX
# between two processes). Twice: with the default `bundled` feature (libcdt built from the C
# sources in the cdtypes-sys crate, linked statically), and without it, against a libcdt built
# from those same carried sources, installed into a prefix and found through pkg-config; and a
# libcdt 0.3.0 (cdtypes-ucx.pc and cdtypes.pc that say so) must be refused.
# Needs what rust/test.sh needs, and the crates.io index (cargo reaches it, or its cache).
# Environment: CARGO_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")"
jobs=${CARGO_JOBS:-2}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
crates=(cdtypes-sys cdtypes-derive cdtypes)

step() { printf '\n=== %s ===\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cdtypes-package-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
# registry dependencies (bindgen, syn...) stay compiled between runs
export CARGO_TARGET_DIR="$PWD/target/package-check"
# ... but not our own crates: cargo takes a registry crate whose version it has built before as
# unchanged, so the verify step would link the cdtypes-sys of an earlier run (same version,
# other sources) into cdtypes ("no field `object_count` on type `cdt_frame_info`"); nor cargo's
# unpacked copies of them from earlier runs' temporary registries
rm -rf "$CARGO_TARGET_DIR/package" "$CARGO_TARGET_DIR"/debug/.fingerprint/cdtypes* \
  "$CARGO_TARGET_DIR"/debug/build/cdtypes* "$CARGO_TARGET_DIR"/debug/deps/*cdtypes*
for crate in "${crates[@]}"; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate-$version"
done

step "cargo publish --dry-run (${crates[*]})"
# --allow-dirty: check the tree as it is, committed or not
cargo publish --dry-run --allow-dirty -j "$jobs" "${crates[@]/#/-p}"
# the .crate files themselves (publish leaves none behind), already verified above
cargo package --no-verify --allow-dirty -q "${crates[@]/#/-p}"
# the C sources travel inside cdtypes-sys
# (each listing read whole before grep -q: under pipefail, a writer that grep -q leaves behind
# dies of SIGPIPE and fails the pipeline at random)
grep -qx 'libcdt-src/libcdt/include/cdt.h' <<<"$(cargo package --list --allow-dirty -p cdtypes-sys)"

step "unpack the .crate files into an empty folder"
mkdir "$work/crates"
for crate in "${crates[@]}"; do
  tar -xzf "$CARGO_TARGET_DIR/package/$crate-$version.crate" -C "$work/crates"
done
ls "$work/crates"

# each crate carries its README (crates.io and docs.rs show it) and names it in its metadata
for crate in "${crates[@]}"; do
  dir="$work/crates/$crate-$version"
  [ -s "$dir/README.md" ] || { echo "package-check: $crate's .crate holds no README.md" >&2; exit 1; }
  grep -qx 'readme = "README.md"' "$dir/Cargo.toml" ||
    { echo "package-check: $crate's Cargo.toml names no readme" >&2; exit 1; }
  for key in description license documentation keywords categories rust-version; do
    grep -q "^$key = " "$dir/Cargo.toml" ||
      { echo "package-check: $crate's Cargo.toml has no $key" >&2; exit 1; }
  done
done

# the [patch.crates-io] block of rust/README.md, the documented way to use the unpacked crates
# before they are published, with its CRATES placeholder pointing at them
patch=$(awk '/<!-- package-check:/ { f = 1; next } f && /^```toml/ { b = 1; next }
  b && /^```/ { exit } b && /^\[patch\.crates-io\]/ { p = 1 } p { print }' README.md |
  sed 's|CRATES/|../crates/|')
grep -q '^\[patch\.crates-io\]' <<<"$patch" ||
  { echo "package-check: no [patch.crates-io] block found in rust/README.md" >&2; exit 1; }
for crate in "${crates[@]}"; do
  grep -q "^$crate = { path = \"../crates/$crate-$version\" }" <<<"$patch" ||
    { echo "package-check: rust/README.md's [patch.crates-io] block lacks $crate $version" >&2; exit 1; }
done

mkdir -p "$work/smoke/src"
cp package-check/main.rs "$work/smoke/src/main.rs"
cp Cargo.lock "$work/smoke/Cargo.lock" # the versions the workspace tests
cat >"$work/smoke/Cargo.toml" <<TOML
[package]
name = "cdtypes-package-check"
version = "0.1.0"
edition = "2021"
publish = false

[features]
default = ["bundled"]
bundled = ["cdtypes/bundled", "cdtypes-sys/bundled"]

[dependencies]
cdtypes = { version = "$version", default-features = false, features = ["derive"] }
cdtypes-sys = { version = "$version", default-features = false }

[workspace]

TOML
# the unpacked crates stand in for crates.io, as rust/README.md says
echo "$patch" >>"$work/smoke/Cargo.toml"

step "smoke test, bundled libcdt (default features)"
(cd "$work/smoke" && cargo run -j "$jobs" -q)
bin="$CARGO_TARGET_DIR/debug/cdtypes-package-check"
if grep -q 'libcdtypes' <<<"$(ldd "$bin")"; then
  echo "package-check: the bundled build links a shared libcdt" >&2
  exit 1
fi
# what the bundled build's program loads for UCX (the artefact report, below)
bundled_ucx=$(ldd "$bin" | awk '$1 ~ /^libuc[mpst]\.so/ { print $1 " => " $3 }' | paste -sd, - | sed 's/,/, /g')

step "smoke test, installed libcdt through pkg-config (no default features)"
cmake -S "$work/crates/cdtypes-sys-$version/libcdt-src" -B "$work/cbuild" -DCMAKE_BUILD_TYPE=Release \
  -DCDT_BUILD_TESTS=OFF -DCDT_BUILD_EXAMPLES=OFF -DCDT_BUILD_BENCH=OFF -DCDT_WITH_UCX=ON \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" -DCMAKE_INSTALL_LIBDIR=lib >/dev/null
cmake --build "$work/cbuild" -j "$jobs" >/dev/null
cmake --install "$work/cbuild" >/dev/null
(cd "$work/smoke" && PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" LD_LIBRARY_PATH="$work/prefix/lib" \
  cargo run -j "$jobs" -q --no-default-features)
if ! grep -q "$work/prefix/lib/libcdtypes-ucx\.so" <<<"$(LD_LIBRARY_PATH="$work/prefix/lib" ldd "$bin")"; then
  echo "package-check: the build without 'bundled' does not use the installed libcdt" >&2
  exit 1
fi

step "an installed libcdt outside the accepted range is refused with a clear error"
mkdir "$work/pc-0.3"
# the installed library, only its version changed: a range check that let it through would build
for pc in cdtypes cdtypes-ucx; do
  sed -e 's/^Version: .*/Version: 0.3.0/' -e 's/^Requires: cdtypes = .*/Requires: cdtypes = 0.3.0/' \
    -e "s|^prefix=.*|prefix=$work/prefix|" "$work/prefix/lib/pkgconfig/$pc.pc" >"$work/pc-0.3/$pc.pc"
done
if (cd "$work/smoke" && PKG_CONFIG_PATH="$work/pc-0.3" cargo build -j "$jobs" -q --no-default-features) \
  >"$work/refused.log" 2>&1; then
  echo "package-check: cdtypes-sys accepted libcdt 0.3.0" >&2
  exit 1
fi
grep -q 'no libcdt 0.2.0 ..< 0.3.0 was found through pkg-config' "$work/refused.log" ||
  { cat "$work/refused.log" >&2; exit 1; }
echo "refused as it should be"

# the artefact report of the packaging stage (tests/install/artefacts.sh)
report=../tests/install/artefacts.sh
ucx_version=$(pkg-config --modversion ucx 2>/dev/null || echo unknown)
"$report" add "$CARGO_TARGET_DIR/package/cdtypes-sys-$version.crate" \
  "bundled (default): libcdt's carried sources, the transport built against pkg-config's UCX ($ucx_version here); the program loads ${bundled_ucx:-no UCX}; without bundled: the installed libcdtypes-ucx's UCX"
"$report" add "$CARGO_TARGET_DIR/package/cdtypes-$version.crate" "cdtypes-sys's (above)"
"$report" add "$CARGO_TARGET_DIR/package/cdtypes-derive-$version.crate" "none (a procedural macro, run by the compiler)"
printf '\nrust package check: passed\n'

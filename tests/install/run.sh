#!/usr/bin/env bash
# The packaging check of the C library (scripts/test, "packaging"; docs/TESTING.md):
#  1. `cmake --install` into a prefix that already holds Graphviz's libcdt (its libcdt.so* and
#     libcdt.pc, copied from the system when its development package is installed): none of
#     Graphviz's files may be touched, and nothing installed may be named libcdt* or cdt.pc;
#  2. the prefix is moved elsewhere (the CMake package and the .pc files must find it there);
#  3. two programs outside the tree - tests/install/consumer: main.c (a frame round trip, the
#     core only) and transfer.c (a derived type sent between two processes over UCX) - are built
#     three ways: find_package(cdtypes) (CMake), pkg-config (cdtypes, cdtypes-ucx), and plain
#     -I/-L/-l; each binary must need libcdtypes (never Graphviz's libcdt), the core-only one
#     no UCX library, and each transfer pair must deliver the particles.
# Usage: tests/install/run.sh BUILD_DIR SOURCE_DIR(tests/install) WORK_DIR
# CDT_REQUIRE_GRAPHVIZ=1: fail when Graphviz's development package is not installed (the
# packaging stage sets it; scripts/setup installs libgraphviz-dev).
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
# absolute paths: CMake reads a relative CMAKE_PREFIX_PATH against its own build folder
build=$(cd "$build" && pwd) src=$(cd "$src" && pwd) work=$(cd "$work" && pwd)
export UCX_WARN_UNUSED_ENV_VARS=n

fail() { echo "packaging check: $*" >&2; exit 1; }

# --- 1. Graphviz's libcdt in the prefix, then libcdt installed beside it ------------------
staging="$work/staging"
mkdir -p "$staging/lib/pkgconfig"
graphviz=0
if pkg-config --exists libcdt 2>/dev/null; then
  gv_libdir=$(pkg-config --variable=libdir libcdt)
  if compgen -G "$gv_libdir/libcdt.so*" >/dev/null; then
    cp -P "$gv_libdir"/libcdt.so* "$staging/lib/"
    sed "s|^prefix=.*|prefix=$work/prefix|; s|^libdir=.*|libdir=\${prefix}/lib|" \
      "$(pkg-config --variable=pcfiledir libcdt)/libcdt.pc" >"$staging/lib/pkgconfig/libcdt.pc"
    graphviz=1
  fi
fi
if [ "$graphviz" = 0 ]; then
  [ "${CDT_REQUIRE_GRAPHVIZ:-0}" = 1 ] &&
    fail "Graphviz's libcdt is not installed (apt-get install libgraphviz-dev; scripts/setup does)"
  echo "packaging check: Graphviz's libcdt not installed: the clash part is skipped"
fi
before=$(cd "$staging" && find . -type f -o -type l | sort | xargs -r sha256sum 2>/dev/null || true)
cmake --install "$build" --prefix "$staging" >"$work/install.log"
after=$(cd "$staging" && find . -name 'libcdt.*' -o -name 'libcdt.so*' | sort | xargs -r sha256sum)
if [ "$graphviz" = 1 ]; then
  # every Graphviz file is still there, unchanged
  while read -r sum file; do
    grep -q "^$sum  $file\$" <<<"$after" || fail "the install changed Graphviz's $file"
  done < <(grep -E 'libcdt' <<<"$before")
fi
installed=$(sed -n 's/^-- \(Installing\|Up-to-date\): //p' "$work/install.log")
if grep -E '/(libcdt[.-][^/]*|cdt\.pc|libcdt\.pc)$' <<<"$installed"; then
  fail "libcdt installs a file with Graphviz's names (above)"
fi

# --- 2. the prefix moves -------------------------------------------------------------------
mv "$staging" "$work/prefix"
prefix="$work/prefix"
lib=$(ls -d "$prefix"/lib*/ | head -1)
lib=${lib%/}
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# the licence where README.md says it goes
[ -f "$prefix/share/doc/cdtypes/LICENSE" ] || fail "no share/doc/cdtypes/LICENSE in the prefix"
grep -qF 'share/doc/cdtypes' "$src/../../README.md" || fail "README.md does not name share/doc/cdtypes"
# every installed header compiles with the prefix's include folder alone
for h in cdt.h cdt_sobj.h cdt_ucx.h; do
  printf '#include <%s>\nint main(void) { return 0; }\n' "$h" >"$work/hdr.c"
  cc -Wall -Werror -fsyntax-only -I"$prefix/include" "$work/hdr.c" || fail "$h alone does not compile"
done

# no installed library may point into the build tree (a RUNPATH there would load the build's
# copy, or nothing once it is gone)
for so in "$lib"/libcdtypes*.so; do
  if readelf -d "$so" | grep -E 'R(UN)?PATH' | grep -qF "$(cd "$build" && pwd)"; then
    fail "$so has a RUNPATH into the build tree"
  fi
done

# --- 3. the programs, three ways -----------------------------------------------------------
needs() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

check_core() { # the frame program: needs libcdtypes, neither Graphviz's libcdt nor UCX
  local bin=$1 how=$2
  needs "$bin" | grep -qx 'libcdtypes.so.0.[0-9]*' || fail "$how: $bin does not need libcdtypes"
  ! needs "$bin" | grep -q '^libcdt\.' || fail "$how: $bin needs Graphviz's libcdt"
  if ldd "$bin" | grep -E 'libuc[pstm]|libcdtypes-ucx'; then
    fail "$how: the core-only program loads UCX (above)"
  fi
  # ldd's output read whole first: `ldd | grep -q` fails at random under pipefail (grep exits at
  # the first match and ldd, still writing, dies of SIGPIPE)
  grep -qF "$lib/libcdtypes.so" <<<"$(ldd "$bin")" || fail "$how: $bin does not load $lib/libcdtypes.so"
  "$bin" >/dev/null || fail "$how: $bin failed"
}

check_transfer() { # the UCX program: two processes, the particles delivered
  local bin=$1 how=$2
  needs "$bin" | grep -qx 'libcdtypes-ucx.so.0.[0-9]*' || fail "$how: $bin does not need libcdtypes-ucx"
  ! needs "$bin" | grep -q '^libcdt\.' || fail "$how: $bin needs Graphviz's libcdt"
  local portfile="$work/port.$how"
  rm -f "$portfile"
  "$bin" recv "$portfile" >"$work/recv.$how.log" 2>&1 &
  local receiver=$!
  for _ in $(seq 300); do [ -s "$portfile" ] && break; sleep 0.1; done
  [ -s "$portfile" ] || { kill "$receiver" 2>/dev/null; fail "$how: the receiver did not listen"; }
  timeout 60 "$bin" send "$(cat "$portfile")" || { kill "$receiver" 2>/dev/null; fail "$how: send failed"; }
  wait "$receiver" || { cat "$work/recv.$how.log" >&2; fail "$how: receive failed"; }
  grep -q ': ok$' "$work/recv.$how.log" || { cat "$work/recv.$how.log" >&2; fail "$how: wrong values"; }
  echo "  $how: $(cat "$work/recv.$how.log")"
}

# find_package(cdtypes): CMake finds the moved prefix through CMAKE_PREFIX_PATH
cmake -S "$src/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
check_core "$work/cmake-build/consumer" cmake
check_transfer "$work/cmake-build/transfer" cmake

# pkg-config, with Graphviz's libcdt.pc in the same folder
export PKG_CONFIG_PATH="$lib/pkgconfig"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$work/consumer-pc" "$src/consumer/main.c" $(pkg-config --cflags --libs cdtypes)
check_core "$work/consumer-pc" pkg-config
# shellcheck disable=SC2046
cc -Wall -Werror -o "$work/transfer-pc" "$src/consumer/transfer.c" \
  $(pkg-config --cflags --libs cdtypes-ucx)
check_transfer "$work/transfer-pc" pkg-config
# README's pkg-config route in a prefix outside the loader's path: the program finds the libraries
# through the rpath that README shows, with no LD_LIBRARY_PATH (without it, the loader does not
# find libcdtypes-ucx.so.0.MINOR, as README says)
pc_libdir=$(pkg-config --variable=libdir cdtypes)
# shellcheck disable=SC2046
cc -Wall -Werror -o "$work/transfer-rpath" "$src/consumer/transfer.c" \
  $(pkg-config --cflags --libs cdtypes-ucx) -Wl,-rpath,"$pc_libdir"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$work/consumer-rpath" "$src/consumer/main.c" \
  $(pkg-config --cflags --libs cdtypes) -Wl,-rpath,"$pc_libdir"
if env -u LD_LIBRARY_PATH ldd "$work/transfer-rpath" | grep 'not found'; then
  fail "pkg-config + -Wl,-rpath: a library is not found without LD_LIBRARY_PATH (above)"
fi
env -u LD_LIBRARY_PATH "$work/consumer-rpath" >"$work/consumer-rpath.log" 2>&1 ||
  { cat "$work/consumer-rpath.log" >&2; fail "pkg-config + -Wl,-rpath: the program does not run"; }
echo "  pkg-config + -Wl,-rpath,\$(pkg-config --variable=libdir cdtypes): runs without LD_LIBRARY_PATH"

# plain -l, with Graphviz's libcdt.so in the same folder
cc -Wall -Werror -o "$work/consumer-l" "$src/consumer/main.c" -I"$prefix/include" -L"$lib" -lcdtypes
check_core "$work/consumer-l" -l
cc -Wall -Werror -o "$work/transfer-l" "$src/consumer/transfer.c" -I"$prefix/include" -L"$lib" \
  -lcdtypes-ucx -lcdtypes
check_transfer "$work/transfer-l" -l
if [ "$graphviz" = 1 ]; then
  # and -lcdt there is Graphviz's, as it was before libcdt was installed
  echo 'int main(void){return 0;}' >"$work/gv.c"
  cc -o "$work/gv" "$work/gv.c" -L"$lib" -Wl,--no-as-needed -lcdt
  needs "$work/gv" | grep -qx 'libcdt.so.[0-9]*' || fail "-lcdt no longer gives Graphviz's libcdt"
  echo "  Graphviz's libcdt in the same prefix: untouched, and -lcdt still links it"
fi

# --- the artefact report (tests/install/artefacts.sh): each installed library, its size and the
# UCX it loads, as its NEEDED entries and the dynamic loader's resolution (ldd) say --------------
ucx_version=$(pkg-config --modversion ucx 2>/dev/null || echo unknown)
for so in "$lib"/libcdtypes*; do
  [ -f "$so" ] && [ ! -L "$so" ] || continue
  case "$so" in
    *.a) # a static archive loads nothing: the program that links it links what its .pc says
      pc=cdtypes
      case "$so" in *ucx*) pc=cdtypes-ucx ;; esac
      ucx_libs=$(pkg-config --static --libs-only-l "$pc" | tr ' ' '\n' | { grep '^-luc' || true; } | sort -u | xargs)
      if [ -z "$ucx_libs" ]; then
        "$src/artefacts.sh" add "$so" "none (pkg-config --static --libs $pc names no UCX library)"
      else
        "$src/artefacts.sh" add "$so" "the UCX a program linking it links: pkg-config --static --libs $pc gives $ucx_libs (ucx $ucx_version)"
      fi
      continue ;;
  esac
  ucx_needed=$(needs "$so" | grep -E '^libuc[mpst]\.so' || true)
  if [ -z "$ucx_needed" ]; then
    "$src/artefacts.sh" add "$so" "none (no UCX library among its NEEDED)"
    continue
  fi
  resolved=$(for n in $ucx_needed; do
    ldd "$so" | awk -v n="$n" '$1 == n { print n " => " $3 }'
  done | paste -sd, - | sed 's/,/, /g')
  "$src/artefacts.sh" add "$so" "the system's UCX $ucx_version (pkg-config ucx at build time): NEEDED $resolved"
done

# --- 4. libcdt as a subproject (add_subdirectory, as FetchContent does): the libraries alone ----
# tests, examples and benchmarks only when libcdt is the top-level project, and warnings are not
# errors outside development builds (README.md, "Building and using")
root=$(cd "$src/../.." && pwd)
mkdir -p "$work/subproject"
cp "$src/consumer/main.c" "$work/subproject/"
printf '%s\n' 'cmake_minimum_required(VERSION 3.20)' 'project(app C)' \
  "add_subdirectory(\"$root\" cdt)" 'add_executable(app main.c)' \
  'target_link_libraries(app PRIVATE cdtypes::core)' >"$work/subproject/CMakeLists.txt"
cmake -S "$work/subproject" -B "$work/subproject/build" -G Ninja >"$work/subproject.log" 2>&1 ||
  { cat "$work/subproject.log" >&2; fail "libcdt as a subproject: configure failed"; }
targets=$(cmake --build "$work/subproject/build" --target help)
for t in test_frame example_struct_vec bench_pack_cdt; do
  if grep -q "^$t:" <<<"$targets"; then fail "libcdt as a subproject builds $t"; fi
done
if grep -q -- '-Werror' "$work/subproject/build/build.ninja"; then
  fail "libcdt as a subproject compiles with -Werror"
fi
cmake --build "$work/subproject/build" --target app >>"$work/subproject.log" 2>&1 ||
  { cat "$work/subproject.log" >&2; fail "libcdt as a subproject: build failed"; }
"$work/subproject/build/app" >/dev/null || fail "libcdt as a subproject: the program failed"
echo "  as a subproject: the libraries alone (no tests, examples, benchmarks, -Werror)"
echo "packaging check: the installed C library (moved prefix) works through CMake, pkg-config and -l"

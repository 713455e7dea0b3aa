#!/usr/bin/env bash
# Install the built library into a scratch prefix, then build a program outside the tree
# against it twice: with find_package(cdtypes) and with pkg-config.
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
lib=$(ls -d "$work"/prefix/lib*/ | head -1)
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

cmake -S "$src/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"

export PKG_CONFIG_PATH="$lib/pkgconfig"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$work/consumer-pc" "$src/consumer/main.c" $(pkg-config --cflags --libs cdtypes)
"$work/consumer-pc"
echo "install test: find_package and pkg-config consumers ok"

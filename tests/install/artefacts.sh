#!/usr/bin/env bash
# The artefact report of the packaging stage (scripts/test; docs/PACKAGING.md, "Artefacts").
# Each packaging check (tests/install/run.sh, python-sdist.sh, python-wheel.sh,
# rust/package-check.sh, julia/check.sh) records every artefact it built, with what it observed
# about the UCX that artefact loads, as one line of the summary file that CDT_ARTEFACTS names;
# at the end of the stage `table` prints them.
# Usage:
#   tests/install/artefacts.sh add FILE UCX     one row: FILE's name and size, and UCX, the text
#                                               saying which UCX it loads (nothing when
#                                               CDT_ARTEFACTS is unset: the checks run alone)
#   tests/install/artefacts.sh add-label NAME SIZE UCX   a row for an artefact that is no file
#                                               here (SIZE: bytes, or - )
#   tests/install/artefacts.sh table [--markdown]   print the rows of $CDT_ARTEFACTS; fails when
#                                               it lacks a kind of artefact (the C libraries,
#                                               the sdist, a wheel, the crates, the JLL)
# The summary file holds one row a line: name, bytes, UCX, separated by tabs.
set -euo pipefail
fail() { echo "artefacts: $*" >&2; exit 1; }

add_row() { # name, bytes, ucx
  [ -n "${CDT_ARTEFACTS:-}" ] || return 0
  # tabs and newlines would break the row's columns
  local ucx=${3//$'\t'/ }
  ucx=${ucx//$'\n'/; }
  printf '%s\t%s\t%s\n' "$1" "$2" "$ucx" >>"$CDT_ARTEFACTS"
}

kib() { # bytes -> "12.3" (or "-")
  case $1 in
    '' | *[!0-9]*) echo - ;;
    *) awk -v b="$1" 'BEGIN { printf "%.1f", b / 1024 }' ;;
  esac
}

case "${1:-}" in
  add)
    [ $# -eq 3 ] || fail "usage: add FILE UCX"
    [ -f "$2" ] || fail "no file $2"
    add_row "$(basename "$2")" "$(stat -c %s "$2")" "$3"
    ;;
  add-label)
    [ $# -eq 4 ] || fail "usage: add-label NAME SIZE UCX"
    add_row "$2" "$3" "$4"
    ;;
  table)
    [ -n "${CDT_ARTEFACTS:-}" ] || fail "CDT_ARTEFACTS names no summary file"
    [ -s "$CDT_ARTEFACTS" ] || fail "$CDT_ARTEFACTS holds no artefact: did the packaging checks run?"
    # one row at least of each kind, so that a check that stops recording is noticed
    for kind in 'libcdtypes\.so\.' 'libcdtypes-ucx\.so\.' '^cdtypes-.*\.tar\.gz' '\.whl$' \
      '^cdtypes-sys-.*\.crate$' '^libcdtypes_jll'; do
      cut -f1 "$CDT_ARTEFACTS" | grep -qE "$kind" ||
        fail "no artefact matching /$kind/ in $CDT_ARTEFACTS: a packaging check did not record it"
    done
    if [ "${2:-}" = --markdown ]; then
      echo "| artefact | bytes | KiB | UCX it loads |"
      echo "|---|---:|---:|---|"
      while IFS=$'\t' read -r name bytes ucx; do
        echo "| \`$name\` | $bytes | $(kib "$bytes") | $ucx |"
      done <"$CDT_ARTEFACTS"
    else
      width=$(cut -f1 "$CDT_ARTEFACTS" | awk '{ if (length($0) > w) w = length($0) } END { print w }')
      printf "%-${width}s  %10s  %9s  %s\n" artefact bytes KiB "UCX it loads"
      while IFS=$'\t' read -r name bytes ucx; do
        printf "%-${width}s  %10s  %9s  %s\n" "$name" "$bytes" "$(kib "$bytes")" "$ucx"
      done <"$CDT_ARTEFACTS"
    fi
    ;;
  *) fail "usage: $0 add FILE UCX | add-label NAME SIZE UCX | table [--markdown]" ;;
esac

#!/usr/bin/env bash
# Everything CI runs for the Julia package CDTypes.jl on a machine without Julia, plus the
# package's own tests where Julia exists:
#   syntax check (tree-sitter-julia), ABI check (ccalls and mirrored structs against the C
#   headers and bindings/abi.txt), the JLL recipe and Project.toml against the CMake project,
#   the API reference's pages against the docstrings, fatou lint + format check, the checkers'
#   own tests, and
#   `julia --project=julia -e 'using Pkg; Pkg.test()'` when julia is on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
py="${PYTHON:-python3}"

need=()
"$py" -c "import tree_sitter" 2>/dev/null || need+=(tree-sitter)
"$py" -c "import tree_sitter_julia" 2>/dev/null || need+=(tree-sitter-julia)
"$py" -c "import pytest" 2>/dev/null || need+=(pytest)
command -v fatou >/dev/null 2>&1 || need+=(fatou)
if [ ${#need[@]} -gt 0 ]; then
    "$py" -m pip install -q "${need[@]}"
fi

cd "$here"
echo "== julia: syntax check (tree-sitter-julia)"
"$py" tools/check_syntax.py "$here" "$root/bench/julia"
echo "== julia: ABI check (ccalls and structs against the C headers and bindings/abi.txt)"
"$py" tools/check_abi.py src ext "$root/bench/julia"
echo "== julia: JLL recipe and Project.toml (versions, products, CMake options, UUIDs, compat)"
"$py" tools/check_recipe.py
# the artefact report of the packaging stage (tests/install/artefacts.sh): the JLL is built by
# BinaryBuilder (Yggdrasil), not here; what it loads is the recipe's UCX_jll dependency
recipe=$(ls deps/yggdrasil/L/*/build_tarballs.jl | head -1)
ucx_compat=$(awk '/name = "UCX_jll"/ { f = 1 } f && /compat = / { gsub(/[",]/, "", $3); print $3; exit }' "$recipe")
"$root/tests/install/artefacts.sh" add-label "libcdtypes_jll (julia/$recipe; not built here)" - \
  "UCX_jll (compat $ucx_compat), on the first transport call; with CDTypes.jl's binary preference \"system\" or a path: that libcdtypes-ucx's UCX (docs/JULIA.md)"
echo "== julia: API reference (docs/: every export documented, every @docs entry exists)"
"$py" tools/check_docs.py
if command -v fatou >/dev/null 2>&1; then
    echo "== julia: fatou lint and format check"
    fatou lint src ext test deps docs "$root/bench/julia"
    fatou format --check src ext test deps docs "$root/bench/julia"
else
    echo "== julia: fatou not available: lint skipped"
fi
echo "== julia: the checkers' own tests"
"$py" -m pytest -q tools/tests

if command -v julia >/dev/null 2>&1; then
    echo "== julia: Pkg.test()"
    cd "$root"
    julia --project=julia -e 'using Pkg; Pkg.test()'
else
    echo "julia tests: SKIPPED (no julia on PATH; syntax, ABI and lint checks ran)"
fi

# BinaryBuilder recipe of libcdtypes_jll: libcdt's core (libcdtypes) and its UCX transport
# (libcdtypes-ucx), as CDTypes.jl loads them by default (docs/JULIA.md, "Finding libcdt").
#
# The folder mirrors Yggdrasil's layout (L/libcdtypes/build_tarballs.jl), so submitting the JLL
# is a copy of julia/deps/yggdrasil/L/ into Yggdrasil. The name is libcdtypes, the installed
# library's, not libcdt: Graphviz (Graphviz_jll as well) ships a libcdt of its own.
#
#   julia build_tarballs.jl --help                 the options of BinaryBuilder
#   julia build_tarballs.jl --deploy=local         build here, write libcdtypes_jll to ~/.julia/dev
#
# julia/tools/check_recipe.py checks this file without Julia (julia/check.sh): the version is
# the CMake project's, every -DCDT_ option exists in CMake, the products are CMake's
# OUTPUT_NAMEs, the dependencies' UUIDs are their JLLs'.
using BinaryBuilder, Pkg

name = "libcdtypes"
version = v"0.2.0"

# The source is a git commit of libcdt. A release builds the commit of the tag v$(version) in
# the project's public repository: set `release` to (url, commit) when the tag exists (Yggdrasil
# takes nothing else). Until then the recipe builds HEAD of the checkout it lies in, which is
# how the JLL is tried before it is registered (`--deploy=local`).
release = nothing
checkout = normpath(joinpath(@__DIR__, "..", "..", "..", "..", ".."))
source_url, source_commit = if release === nothing
    (checkout, readchomp(`git -C $checkout rev-parse HEAD`))
else
    release
end
sources = [GitSource(source_url, source_commit; unpack_target = "libcdt")]

# Tests, examples and benchmarks stay out; CDT_WERROR=OFF so that a compiler newer than the
# project's CI cannot fail the build with a new warning; CDT_WITH_UCX=ON fails the build when
# UCX_jll's ucx.pc is not found instead of silently leaving the transport out.
script = raw"""
cd ${WORKSPACE}/srcdir/libcdt*
cmake -S . -B build \
    -DCMAKE_INSTALL_PREFIX=${prefix} \
    -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TARGET_TOOLCHAIN} \
    -DCMAKE_BUILD_TYPE=Release \
    -DCDT_BUILD_TESTS=OFF \
    -DCDT_BUILD_EXAMPLES=OFF \
    -DCDT_BUILD_BENCH=OFF \
    -DCDT_WERROR=OFF \
    -DCDT_WITH_UCX=ON
cmake --build build --parallel ${nproc}
cmake --install build
install_license LICENSE
"""

# UCX_jll is built for Linux with glibc only; so is libcdt's transport.
platforms = [
    Platform("x86_64", "linux"; libc = "glibc"),
    Platform("aarch64", "linux"; libc = "glibc"),
]

# The transport is not opened when the JLL loads (dont_dlopen): only a transport call needs it.
# (CDTypes.jl opens the core from the JLL's artifact without loading the JLL, and loads the JLL,
# whose UCX_jll opens UCX, on the first transport call: see julia/src/binary.jl.)
products = [
    LibraryProduct("libcdtypes", :libcdtypes),
    LibraryProduct("libcdtypes-ucx", :libcdtypes_ucx; dont_dlopen = true),
]

# UCX 1.13 is the oldest UCX the transport is tested with (README.md, docs/TRANSPORT.md).
dependencies = [Dependency(
    PackageSpec(name = "UCX_jll", uuid = "16e4e860-d6b8-5056-a518-93e88b6392ae");
    compat = "1.13",
)]

# C11 and the __atomic builtins: GCC 8 (BinaryBuilder's default GCC is older).
build_tarballs(
    ARGS,
    name,
    version,
    sources,
    script,
    platforms,
    products,
    dependencies;
    julia_compat = "1.9",
    preferred_gcc_version = v"8",
)

# The repository's own scripts (runtests.jl, mpmd_rank.jl, make_vectors.jl) use the build
# tree's libcdt (`cmake -S . -B build`), whatever the package's `binary` preference says
# (docs/JULIA.md, "Finding libcdt"). Included before `using CDTypes`; an ENV["CDTYPES_LIBCDT"]
# that is already set wins. The UCX transport is then the one beside that core.
let built = normpath(joinpath(
    @__DIR__,
    "..",
    "..",
    "build",
    "libcdt",
    "libcdtypes." * Base.Libc.Libdl.dlext,
))
    isempty(get(ENV, "CDTYPES_LIBCDT", "")) &&
        isfile(built) &&
        (ENV["CDTYPES_LIBCDT"] = built)
end

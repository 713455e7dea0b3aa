# Which libcdt the package loads: a Preferences.jl switch in the convention of MPI.jl and
# MPIPreferences. The preference is read when the package is compiled (a change takes effect
# after a restart of Julia, which recompiles it), so that the JLL is imported only when it is
# the one in use.
#
#   binary = "jll"     (the default) libcdtypes_jll: the libraries built by
#                      julia/deps/yggdrasil/L/libcdtypes/build_tarballs.jl, with UCX_jll
#   binary = "system"  `libcdtypes` / `libcdtypes-ucx` through the dynamic loader's search
#                      path (LD_LIBRARY_PATH, ld.so.conf: a `cmake --install` prefix)
#   binary = PATH      the core at this absolute path; the transport beside it, or at the
#                      preference `libcdtypes_ucx` when set
#
# ENV["CDTYPES_LIBCDT"] / ENV["CDTYPES_LIBCDT_UCX"] override all of them (the repository's tests
# and benchmarks point them at the build tree).

const BINARY_KEY = "binary"
const UCX_KEY = "libcdtypes_ucx"
const _BINARY = @load_preference(BINARY_KEY, "jll")
const _UCX_PREFERENCE = @load_preference(UCX_KEY, nothing)

@static if _BINARY == "jll"
    import libcdtypes_jll
end

"""
    CDTypes.library_preference() -> String

The `binary` preference the package was compiled with: `"jll"` (the default), `"system"` or
the path of a libcdt core; see `CDTypes.set_library!`.
"""
library_preference() = _BINARY

# Why `binary` cannot be used, or nothing when it can.
function _binary_problem(binary::AbstractString)
    binary in ("jll", "system") && return nothing
    isabspath(binary) ||
        return "binary = \"$(binary)\" is neither \"jll\", \"system\" nor an absolute path"
    isfile(binary) || return "binary = \"$(binary)\": no such file"
    return nothing
end

"""
    CDTypes.set_library!(binary; ucx=nothing, export_prefs=false)

Choose the libcdt that CDTypes loads, as a preference of the active project
(`LocalPreferences.toml`, or `Project.toml` with `export_prefs=true`); restart Julia for it
to take effect.

- `"jll"`: libcdtypes_jll (the default);
- `"system"`: `libcdtypes` and `libcdtypes-ucx` through the dynamic loader's search path;
- an absolute path to `libcdtypes.so`: that core, with the transport `libcdtypes-ucx.so`
  beside it, or at `ucx` (an absolute path) when given.

An invalid choice is an `ArgumentError`, and nothing is written.
"""
function set_library!(
    binary::AbstractString;
    ucx::Union{Nothing, AbstractString} = nothing,
    export_prefs::Bool = false,
)
    problem = _binary_problem(binary)
    problem === nothing || throw(ArgumentError("CDTypes.set_library!: " * problem))
    if ucx !== nothing
        binary in ("jll", "system") &&
            throw(ArgumentError(
                "CDTypes.set_library!: ucx is for a core given by its path",
            ))
        (isabspath(ucx) && isfile(ucx)) ||
            throw(ArgumentError(
                "CDTypes.set_library!: ucx = \"$(ucx)\" is not an existing absolute path",
            ))
    end
    set_preferences!(@__MODULE__, BINARY_KEY => String(binary); export_prefs, force = true)
    if ucx === nothing
        delete_preferences!(@__MODULE__, UCX_KEY; export_prefs, force = true)
    else
        set_preferences!(@__MODULE__, UCX_KEY => String(ucx); export_prefs, force = true)
    end
    binary == _BINARY && ucx == _UCX_PREFERENCE ||
        @info "CDTypes: libcdt set to $(binary); restart Julia for it to take effect."
    return nothing
end

# The core's candidates of the preference (ENV["CDTYPES_LIBCDT"] is handled by the caller).
function _preferred_core()
    problem = _binary_problem(_BINARY)
    problem === nothing ||
        error(
            "CDTypes preference " *
                problem *
                "; fix it with CDTypes.set_library!(...) and restart",
        )
    @static if _BINARY == "jll"
        libcdtypes_jll.is_available() ||
            error(
                "libcdtypes_jll has no build for this platform ($(Base.BinaryPlatforms.triplet(Base.BinaryPlatforms.HostPlatform()))); " *
                    "use CDTypes.set_library!(\"system\") or a path, and restart Julia",
            )
        return [libcdtypes_jll.libcdtypes_path]
    end
    return _BINARY == "system" ? ["libcdtypes"] : [_BINARY]
end

# The transport's candidates of the preference, given the loaded core's folder.
function _preferred_ucx(core_dir::AbstractString)
    @static if _BINARY == "jll"
        return [libcdtypes_jll.libcdtypes_ucx_path]
    end
    _UCX_PREFERENCE === nothing || return [_UCX_PREFERENCE]
    return [joinpath(core_dir, "libcdtypes-ucx." * Libdl.dlext), "libcdtypes-ucx"]
end

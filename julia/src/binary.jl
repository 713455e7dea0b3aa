# Which libcdt the package loads: a Preferences.jl switch in the convention of MPI.jl and
# MPIPreferences. The preference is read when the package is compiled (a change takes effect
# after a restart of Julia, which recompiles it).
#
#   binary = "auto"    (the default) libcdtypes_jll when it is installed in the environment,
#                      else as "system"
#   binary = "jll"     libcdtypes_jll: the libraries built by
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
const _BINARY = @load_preference(BINARY_KEY, "auto")
const _UCX_PREFERENCE = @load_preference(UCX_KEY, nothing)

# libcdtypes_jll is not a dependency of the package ([deps] names only standard libraries and
# packages of the General registry, so that `Pkg.add`, `Pkg.develop` and `Pkg.test` resolve
# with the General registry alone): a user who wants it adds it to the environment
# (`Pkg.add` of libcdtypes_jll), where the load path finds it. It is found without being loaded.
# Loading a JLL loads its dependencies, and
# libcdtypes_jll's UCX_jll opens UCX's libraries; the core needs no UCX (a program that frames
# objects, or sends them with an MPI library that uses a UCX of its own, must not get a second
# UCX), so the core is opened from the JLL's artifact directly and the JLL itself (with UCX_jll)
# is loaded on the first transport call only.
const _JLL = Base.PkgId(Base.UUID("42fccd27-48ff-5aef-b108-8d688682e9a1"), "libcdtypes_jll")

# The directory of libcdtypes_jll's build for this platform (its artifact), without loading it.
function _jll_artifact_dir()
    entry = Base.locate_package(_JLL)
    entry === nothing &&
        error(
            "libcdtypes_jll is not installed in this environment (Pkg.add(\"libcdtypes_jll\")), " *
                "or use CDTypes.set_library!(\"system\") or a path and restart Julia",
        )
    toml = joinpath(dirname(dirname(entry)), "Artifacts.toml")
    meta = Artifacts.artifact_meta("libcdtypes", toml)
    meta === nothing &&
        error(
            "libcdtypes_jll has no build for this platform " *
                "($(Base.BinaryPlatforms.triplet(Base.BinaryPlatforms.HostPlatform()))); use " *
                "CDTypes.set_library!(\"system\") or a path, and restart Julia",
        )
    return Artifacts.artifact_path(Base.SHA1(meta["git-tree-sha1"]))
end

# The transport of libcdtypes_jll: loading the JLL opens UCX_jll's libraries, which the
# transport links, and gives the transport's path.
function _jll_transport_path()
    jll = Base.require(_JLL)
    return Base.invokelatest(getproperty, jll, :libcdtypes_ucx_path)::String
end

# Whether libcdtypes_jll is installed in the environment (the load path finds it).
_jll_installed() = Base.locate_package(_JLL) !== nothing

"""
    CDTypes.library_preference() -> String

The `binary` preference the package was compiled with: `"auto"` (the default: libcdtypes_jll
when it is installed in the environment, else the system's), `"jll"`, `"system"` or the path
of a libcdt core; see `CDTypes.set_library!`.
"""
library_preference() = _BINARY

# What the preference means here: "auto" becomes "jll" or "system".
_effective_binary() = _BINARY == "auto" ? (_jll_installed() ? "jll" : "system") : _BINARY

# Why `binary` cannot be used, or nothing when it can.
function _binary_problem(binary::AbstractString)
    binary in ("auto", "jll", "system") && return nothing
    isabspath(binary) ||
        return "binary = \"$(binary)\" is neither \"auto\", \"jll\", \"system\" nor an absolute path"
    isfile(binary) || return "binary = \"$(binary)\": no such file"
    return nothing
end

"""
    CDTypes.set_library!(binary; ucx=nothing, export_prefs=false)

Choose the libcdt that CDTypes loads, as a preference of the active project
(`LocalPreferences.toml`, or `Project.toml` with `export_prefs=true`); restart Julia for it
to take effect.

- `"auto"` (the default): libcdtypes_jll when it is installed in the active environment
  (`Pkg.add("libcdtypes_jll")`), else as `"system"`;
- `"jll"`: libcdtypes_jll, which must be installed in the environment (it is not a dependency
  of CDTypes, so that the package installs with the General registry alone);
- `"system"`: `libcdtypes` and `libcdtypes-ucx` through the dynamic loader's search path (a
  `cmake --install` prefix on `LD_LIBRARY_PATH` or in `ld.so.conf`);
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
        binary in ("auto", "jll", "system") &&
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
    binary = _effective_binary()
    binary == "jll" &&
        return [joinpath(_jll_artifact_dir(), "lib", "libcdtypes." * Libdl.dlext)]
    return binary == "system" ? ["libcdtypes"] : [binary]
end

# The transport's candidates of the preference, given the loaded core's folder.
function _preferred_ucx(core_dir::AbstractString)
    if _effective_binary() == "jll"
        # a JLL that does not load is a transport that cannot be found (has_ucx() is false):
        # the reason becomes the candidate's name in the error message
        return try
            [_jll_transport_path()]
        catch e
            [
                "libcdtypes_jll's transport (libcdtypes_jll did not load: $(sprint(showerror, e)))",
            ]
        end
    end
    _UCX_PREFERENCE === nothing || return [_UCX_PREFERENCE]
    return [joinpath(core_dir, "libcdtypes-ucx." * Libdl.dlext), "libcdtypes-ucx"]
end

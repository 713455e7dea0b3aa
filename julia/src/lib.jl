# Low level: where libcdt comes from, the C structs mirrored field for field, status codes
# as exceptions. Every `ccall` of the package goes through `cfn(:name)` (the function pointer
# of `name` in the loaded libcdt); julia/tools/check_abi.py checks each one against the C
# headers and bindings/abi.txt (name, argument count, argument and return types).
#
# libcdt is two libraries: the core (libcdtypes: types, engine, frames), which links no UCX,
# and the UCX transport (libcdtypes-ucx). The transport is opened on the first `cdt_ucx_`
# call only, so a program that only frames objects (or sends them with MPI.jl, whose MPI
# library may use a UCX of its own) never loads UCX.

const _LIB_LOCK = ReentrantLock()
const _LIB_HANDLE = Ref{Ptr{Cvoid}}(C_NULL)
const _LIB_PATH = Ref{String}("")
const _UCX_HANDLE = Ref{Ptr{Cvoid}}(C_NULL)
const _UCX_PATH = Ref{String}("")
# copy-on-write table: lock-free lookups (also from finalizers), inserts under _LIB_LOCK
const _SYMS = Ref(Base.ImmutableDict{Symbol, Ptr{Cvoid}}())

"""
    CDTypes.library_candidates() -> Vector{String}

Where libcdt's core (`libcdtypes`) is looked for, in order:

1. `ENV["CDTYPES_LIBCDT"]`, a path to the shared library (nothing else is tried when it is set;
   the repository's tests and benchmarks set it to the build tree's library);
2. what the `binary` preference says (`CDTypes.set_library!`): `"auto"` (the default),
   libcdtypes_jll's library when the JLL is installed in the environment, else the system's;
   libcdtypes_jll's (`"jll"`); the system's `libcdtypes` through the dynamic loader's search
   path (`"system"`); or the path it names.
"""
function library_candidates()
    env = get(ENV, "CDTYPES_LIBCDT", "")
    isempty(env) || return [env]
    return _preferred_core()
end

"""
    CDTypes.ucx_library_candidates() -> Vector{String}

Where libcdt's UCX transport (`libcdtypes-ucx`) is looked for, in order:

1. `ENV["CDTYPES_LIBCDT_UCX"]`, a path to the shared library (nothing else is tried when set);
2. when `ENV["CDTYPES_LIBCDT"]` names the core: `libcdtypes-ucx` beside it;
3. otherwise what the `binary` preference says: libcdtypes_jll's transport (`"jll"`, or
   `"auto"` with the JLL installed); the
   preference `libcdtypes_ucx` when set; else `libcdtypes-ucx` in the folder of the loaded core
   (`libcdt_path()`), then the system's (the dynamic loader's search path).
"""
function ucx_library_candidates()
    env = get(ENV, "CDTYPES_LIBCDT_UCX", "")
    isempty(env) || return [env]
    core_dir = dirname(libcdt_path())
    isempty(get(ENV, "CDTYPES_LIBCDT", "")) ||
        return [joinpath(core_dir, "libcdtypes-ucx." * Libdl.dlext)]
    return _preferred_ucx(core_dir)
end

"""
    CDTypes.libcdt_path() -> String

The path of the libcdt core that is loaded (loading it on first use).
"""
function libcdt_path()
    libhandle()
    return _LIB_PATH[]
end

"""
    CDTypes.libcdt_ucx_path() -> String

The path of the UCX transport library that is loaded (loading it, and UCX, on first use).
"""
function libcdt_ucx_path()
    ucxhandle()
    return _UCX_PATH[]
end

# Open the first candidate that loads: (handle, path), or (C_NULL, what was tried).
function _open_first(candidates, system_name)
    tried = String[]
    for cand in candidates
        if cand != system_name && !isfile(cand)
            push!(tried, cand * " (no such file)")
            continue
        end
        hh = Libdl.dlopen(cand, Libdl.RTLD_LAZY | Libdl.RTLD_GLOBAL; throw_error = false)
        if hh === nothing || hh == C_NULL
            push!(tried, cand * " (could not be loaded)")
            continue
        end
        return hh, (cand == system_name ? Libdl.dlpath(hh) : cand)
    end
    return C_NULL, join(tried, ", ")
end

function libhandle()
    h = _LIB_HANDLE[]
    h == C_NULL || return h
    return lock(_LIB_LOCK) do
        _LIB_HANDLE[] == C_NULL || return _LIB_HANDLE[]
        hh, path = _open_first(library_candidates(), "libcdtypes")
        hh == C_NULL &&
            error(
                "libcdt not found; tried: " *
                    path *
                    ". Choose another with CDTypes.set_library!(\"system\" or a path) and " *
                    "restart Julia, or set ENV[\"CDTYPES_LIBCDT\"] to the path of libcdtypes.so.",
            )
        _LIB_PATH[] = path
        _LIB_HANDLE[] = hh
        return hh
    end
end

# The transport library's handle, opened after the core (it links the core by its SONAME, which
# the loaded core carries); C_NULL with `throw_error = false` when it cannot be loaded.
function ucxhandle(; throw_error::Bool = true)
    h = _UCX_HANDLE[]
    h == C_NULL || return h
    libhandle() # the core first: the transport finds it loaded
    return lock(_LIB_LOCK) do
        _UCX_HANDLE[] == C_NULL || return _UCX_HANDLE[]
        hh, path = _open_first(ucx_library_candidates(), "libcdtypes-ucx")
        if hh == C_NULL
            throw_error || return C_NULL
            error(
                "libcdt's UCX transport not found; tried: " *
                    path *
                    ". Build libcdt with UCX (pkg-config ucx), or name it with " *
                    "CDTypes.set_library!(core; ucx=path) or ENV[\"CDTYPES_LIBCDT_UCX\"].",
            )
        end
        _UCX_PATH[] = path
        _UCX_HANDLE[] = hh
        return hh
    end
end

"""
    CDTypes.cfn(name::Symbol) -> Ptr{Cvoid}

The address of the C function `name` in libcdt (looked up once, then cached): a `cdt_ucx_`
function in the UCX transport library (opened on the first such call), every other one in
the core.
"""
function cfn(name::Symbol)
    p = get(_SYMS[], name, C_NULL)
    p == C_NULL || return p
    transport = startswith(String(name), "cdt_ucx_")
    h = transport ? ucxhandle() : libhandle()
    return lock(_LIB_LOCK) do
        q = get(_SYMS[], name, C_NULL)
        q == C_NULL || return q
        r = Libdl.dlsym(h, name; throw_error = false)
        (r === nothing || r == C_NULL) &&
            error(
                "libcdt at $(transport ? _UCX_PATH[] : _LIB_PATH[]) does not export $(name)",
            )
        _SYMS[] = Base.ImmutableDict(_SYMS[], name => r)
        return r
    end
end

"""True when libcdt's UCX transport library loads (this loads it, and UCX, on first use)."""
function has_ucx()
    return ucxhandle(; throw_error = false) != C_NULL
end

# --- constants (values are stable ABI: cdt.h) ----------------------------------------------

const CDT_SUCCESS = Cint(0)
const CDT_INPROGRESS = Cint(1)
const CDT_ERR_INVALID_ARG = Cint(-1)
const CDT_ERR_NO_MEMORY = Cint(-2)
const CDT_ERR_FRAME_MALFORMED = Cint(-11)
const CDT_ERR_FRAME_TRUNCATED = Cint(-12)
const CDT_ERR_FRAME_MISMATCH = Cint(-13)
const CDT_ERR_TIMEOUT = Cint(-23)
const CDT_ERR_BUSY = Cint(-24)
const CDT_ERR_USER_BASE = Cint(-1000)
const CDT_ERR_JULIA_EXCEPTION = CDT_ERR_USER_BASE - Cint(1) # a Julia callback threw

const CDT_FRAME_FIXED_HEADER_SIZE = 48
const CDT_DECODER_PARAM_MAX_FRAME_BYTES = UInt64(1) << 0
const CDT_DECODER_PARAM_MAX_REGIONS = UInt64(1) << 1
const CDT_FRAME_INFO_ALL = UInt64(0xff)    # every field of CdtFrameInfo
const CDT_UCX_RECV_INFO_ALL = UInt64(0x7f) # every field of CdtUcxRecvInfo
const CDT_SOBJ_FIELD_ALLOC = UInt64(1) << 0

const CDT_KIND_BYTE = Cint(1)
const CDT_KIND_BOOL = Cint(15)

# element kinds of Julia bits types (docs/FORMAT.md, section 3); others travel as bytes
const _KINDS = Dict{DataType, Cint}(
    Int8 => 3,
    Int16 => 4,
    Int32 => 5,
    Int64 => 6,
    UInt8 => 7,
    UInt16 => 8,
    UInt32 => 9,
    UInt64 => 10,
    Float32 => 11,
    Float64 => 12,
    ComplexF32 => 13,
    ComplexF64 => 14,
    Bool => 15,
)
cdt_kind_of(::Type{T}) where {T} = get(_KINDS, T, CDT_KIND_BYTE)

# --- mirrored C structs (field order and types exactly as the headers; checked by
# --- julia/tools/check_abi.py) ---------------------------------------------------------------

"`cdt_iov` (cdt.h): a contiguous piece of memory."
struct CdtIov
    base::Ptr{Cvoid}
    len::Int64
end

"`cdt_frame_params` (cdt.h): encoding options."
struct CdtFrameParams
    field_mask::UInt64
    region_threshold::Int64
    head_alloc::Ptr{Cvoid}
    head_release::Ptr{Cvoid}
    head_alloc_arg::Ptr{Cvoid}
end

"`cdt_frame_info` (cdt.h): what a valid header says."
struct CdtFrameInfo
    field_mask::UInt64 # in: the fields to fill (CDT_FRAME_INFO_ALL)
    version::UInt32
    flags::UInt32
    header_size::Int64
    packed_size::Int64
    region_count::Int64
    region_bytes::Int64
    frame_size::Int64
    object_count::Int64 # the sender's object count; -1 when the frame carries none
end
CdtFrameInfo() = CdtFrameInfo(CDT_FRAME_INFO_ALL, 0, 0, 0, 0, 0, 0, 0, 0)

"`cdt_decoder_params` (cdt.h): receiver limits."
struct CdtDecoderParams
    field_mask::UInt64
    max_frame_bytes::Int64
    max_regions::Int64
end

"`cdt_sobj_buffer` (libcdt/include/cdt_sobj.h): one out-of-band buffer."
struct CdtSobjBuffer
    base::Ptr{Cvoid}
    len::Int64
    kind::Cint
end

"`cdt_sobj` (libcdt/include/cdt_sobj.h): in-band bytes + out-of-band buffers."
struct CdtSobj
    field_mask::UInt64 # CDT_SOBJ_FIELD_ALLOC when alloc is set; high bits: the library's
    inband::Ptr{Cvoid}
    inband_len::Int64
    buffers::Ptr{CdtSobjBuffer}
    nbuffers::Int64
    alloc::Ptr{Cvoid}
    alloc_user::Ptr{Cvoid}
    # CDT_SOBJ_FIELD_INBAND_PARTS (send): the in-band bytes in pieces
    inband_parts::Ptr{CdtIov}
    inband_nparts::Int64
end

"`cdt_ucx_context_params` (cdt_ucx.h)."
struct CdtUcxContextParams
    field_mask::UInt64
    estimated_num_eps::Csize_t
    shared_memory::Cint
    wakeup::Cint
end

"`cdt_ucx_worker_params` (cdt_ucx.h)."
struct CdtUcxWorkerParams
    field_mask::UInt64
    sender_id::UInt32
    zcopy_threshold::Int64
    buffer_cache_bytes::Csize_t
    protocol::Cint
    fifo_stall_timeout_ms::Int64
    lane::Cint
end

"`cdt_ucx_listener_params` (cdt_ucx.h)."
struct CdtUcxListenerParams
    field_mask::UInt64
    host::Ptr{UInt8}
    port::UInt16
end

"`cdt_ucx_recv_info` (cdt_ucx.h): what a completed receive matched."
struct CdtUcxRecvInfo
    field_mask::UInt64 # in: the fields to fill (CDT_UCX_RECV_INFO_ALL)
    tag::UInt64
    frame_size::Int64
    packed_size::Int64
    region_count::Int64
    region_bytes::Int64
    sender::UInt64    # the sending endpoint's id (split mode)
    failed_by::UInt64 # CDT_ERR_PEER: the peer id of the endpoint that ended the receive
    failure::Cint     # CDT_ERR_PEER: how (cdt_ucx_recv_failure)
end
CdtUcxRecvInfo() = CdtUcxRecvInfo(CDT_UCX_RECV_INFO_ALL, 0, 0, 0, 0, 0, 0, 0, 0)

"`cdt_ucx_recv_params` (cdt_ucx.h)."
struct CdtUcxRecvParams
    field_mask::UInt64
    prepare::Ptr{Cvoid}
    prepare_arg::Ptr{Cvoid}
    max_frame_bytes::Int64
    max_regions::Int64
    rest_timeout_ms::Int64
end

# --- errors ----------------------------------------------------------------------------------

"""
    CDTypesError(code, name, message, context)

A libcdt call failed: `code` is the status (negative), `name` its constant name from
`cdt_err_name` ("CDT_ERR_FRAME_MAGIC"), `message` the library's text from `cdt_strerror`,
`context` what was being done.
"""
struct CDTypesError <: Exception
    code::Int
    name::String
    message::String
    context::String
end

function CDTypesError(code::Integer, context::AbstractString = "")
    c = Cint(code)
    name = unsafe_string(ccall(cfn(:cdt_err_name), Cstring, (Cint,), c))
    msg = unsafe_string(ccall(cfn(:cdt_strerror), Cstring, (Cint,), c))
    return CDTypesError(Int(code), name, msg, String(context))
end

function Base.showerror(io::IO, e::CDTypesError)
    print(io, "CDTypesError: ")
    isempty(e.context) || print(io, e.context, ": ")
    print(io, e.message, " (", e.name, ", ", e.code, ")")
end

"""
    CDTypes.check(rc, context="") -> rc

Throw a `CDTypesError` for a negative status; return the status otherwise.
"""
@inline function check(rc::Integer, context::AbstractString = "")
    rc < 0 && throw(CDTypesError(rc, context))
    return rc
end

"Name of a status code (`cdt_err_name`)."
err_name(code::Integer) = unsafe_string(ccall(
    cfn(:cdt_err_name),
    Cstring,
    (Cint,),
    Cint(code),
))
"Message of a status code (`cdt_strerror`)."
strerror(code::Integer) = unsafe_string(ccall(
    cfn(:cdt_strerror),
    Cstring,
    (Cint,),
    Cint(code),
))

"Version of the loaded libcdt: major * 10000 + minor * 100 + patch."
libcdt_version() = Int(ccall(cfn(:cdt_version_number), Cuint, ()))

"Size in bytes of one element of `kind` (0 for an invalid kind)."
kind_size(kind::Integer) = Int(ccall(cfn(:cdt_kind_size), Int64, (Cint,), Cint(kind)))
"Name of an element kind (\"double\", ...)."
kind_name(kind::Integer) = unsafe_string(ccall(
    cfn(:cdt_kind_name),
    Cstring,
    (Cint,),
    Cint(kind),
))

_sobj_type() = ccall(cfn(:cdt_sobj_type), Ptr{Cvoid}, ())

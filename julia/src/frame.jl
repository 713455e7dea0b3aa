# Frames: encode an object into one message, decode one message back (docs/FORMAT.md).

"""
    Frame

One object as one message: header + in-band stream (the frame's `head`) + the out-of-band
arrays, referenced in place (not copied). Keep the Frame, and leave its arrays unchanged,
while its pieces are in flight; `close(frame)` (or the finalizer) releases it.

    f = CDTypes.encode(obj)
    f.size          # total bytes
    iov(f)          # Vector{CdtIov}: (base, len) pieces, in order; their concatenation is the frame
    pieces(f)       # the same pieces as Vector{UInt8} views (valid until close)
    tobytes(f)      # one Vector{UInt8} (a copy)
"""
mutable struct Frame
    handle::Ptr{Cvoid}
    size::Int
    sobj::Base.RefValue{CdtSobj}
    bufs::Vector{CdtSobjBuffer}
    inband::Vector{UInt8}
    arrays::Vector{Any}
end

function _handle(f::Frame)
    f.handle == C_NULL && throw(ArgumentError("operation on a closed Frame"))
    return f.handle
end

function Base.close(f::Frame)
    h = f.handle
    f.handle = C_NULL
    if h != C_NULL
        ccall(cfn(:cdt_frame_free), Cint, (Ptr{Cvoid},), h)
    end
    f.arrays = Any[]
    return nothing
end

Base.isopen(f::Frame) = f.handle != C_NULL
Base.length(f::Frame) = f.size

function Base.show(io::IO, f::Frame)
    print(
        io,
        "CDTypes.Frame(",
        isopen(f) ? "$(f.size) bytes, $(length(f.arrays)) regions" : "closed",
        ")",
    )
end

"""A filled `cdt_sobj` for (inband, arrays): the struct and its buffer table."""
function _outgoing(inband::Vector{UInt8}, arrays::Vector{Any})
    bufs = CdtSobjBuffer[
        CdtSobjBuffer(Ptr{Cvoid}(pointer(a)), Int64(sizeof(a)), cdt_kind_of(eltype(a)))
        for a in arrays
    ]
    so = Ref(CdtSobj(
        UInt64(0),
        Ptr{Cvoid}(pointer(inband)),
        Int64(length(inband)),
        isempty(bufs) ? Ptr{CdtSobjBuffer}(C_NULL) : pointer(bufs),
        Int64(length(bufs)),
        C_NULL,
        C_NULL,
        Ptr{CdtIov}(C_NULL),
        Int64(0),
    ))
    return so, bufs
end

"""
    CDTypes.encode(obj; threshold=CDTypes.DEFAULT_THRESHOLD) -> Frame

Serialize `obj` into a frame: the Julia serialization stream travels in band, every
`Array{T}` with `isbitstype(T)` and at least `threshold` bytes as its own out-of-band region
(zero-copy: the frame references the array). `threshold=-1` keeps everything in band.
"""
function encode(obj; threshold::Integer = DEFAULT_THRESHOLD)
    inband, arrays = serialize_parts(obj; threshold = threshold)
    so, bufs = _outgoing(inband, arrays)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    cfn(:cdt_frame_free) # resolved now: the finalizer must not take the library lock
    rc = GC.@preserve inband arrays bufs so begin
        ccall(
            cfn(:cdt_frame_encode),
            Cint,
            (Ptr{Cvoid}, Int64, Ptr{Cvoid}, Ptr{CdtFrameParams}, Ref{Ptr{Cvoid}}),
            so,
            1,
            _sobj_type(),
            C_NULL,
            out,
        )
    end
    check(rc, "cdt_frame_encode")
    n = Ref{Int64}(0)
    rc = ccall(cfn(:cdt_frame_size), Cint, (Ptr{Cvoid}, Ref{Int64}), out[], n)
    if rc < 0
        ccall(cfn(:cdt_frame_free), Cint, (Ptr{Cvoid},), out[])
        check(rc, "cdt_frame_size")
    end
    f = Frame(out[], Int(n[]), so, bufs, inband, arrays)
    finalizer(close, f)
    return f
end

"Number of out-of-band regions of the frame."
function nregions(f::Frame)
    n = Ref{Int64}(0)
    check(
        ccall(cfn(:cdt_frame_region_count), Cint, (Ptr{Cvoid}, Ref{Int64}), _handle(f), n),
        "cdt_frame_region_count",
    )
    return Int(n[])
end

"The frame as (base, len) pieces in order; valid until `close(f)`."
function iov(f::Frame)
    h = _handle(f)
    n = Ref{Int64}(0)
    check(
        ccall(cfn(:cdt_frame_iov_count), Cint, (Ptr{Cvoid}, Ref{Int64}), h, n),
        "cdt_frame_iov_count",
    )
    v = Vector{CdtIov}(undef, n[])
    got = Ref{Int64}(0)
    check(
        ccall(
            cfn(:cdt_frame_iov),
            Cint,
            (Ptr{Cvoid}, Int64, Int64, Ptr{CdtIov}, Ref{Int64}),
            h,
            0,
            n[],
            v,
            got,
        ),
        "cdt_frame_iov",
    )
    resize!(v, got[])
    return v
end

"The frame's pieces as byte vectors over the frame's memory (no copy; valid until close)."
pieces(f::Frame) = [unsafe_wrap(Array, Ptr{UInt8}(p.base), Int(p.len)) for p in iov(f)]

"The frame's first piece: header + in-band stream (a copy)."
function head(f::Frame)
    data = Ref{Ptr{Cvoid}}(C_NULL)
    n = Ref{Int64}(0)
    check(
        ccall(
            cfn(:cdt_frame_head),
            Cint,
            (Ptr{Cvoid}, Ref{Ptr{Cvoid}}, Ref{Int64}),
            _handle(f),
            data,
            n,
        ),
        "cdt_frame_head",
    )
    return copy(unsafe_wrap(Array, Ptr{UInt8}(data[]), Int(n[])))
end

"Copy frame bytes [offset, offset + length(dst)) into `dst`."
function gather!(dst::Vector{UInt8}, f::Frame, offset::Integer = 0)
    check(
        ccall(
            cfn(:cdt_frame_gather),
            Cint,
            (Ptr{Cvoid}, Int64, Ptr{Cvoid}, Int64),
            _handle(f),
            offset,
            dst,
            length(dst),
        ),
        "cdt_frame_gather",
    )
    return dst
end

"The whole frame in one `Vector{UInt8}` (a copy)."
tobytes(f::Frame) = gather!(Vector{UInt8}(undef, f.size), f)

# --- receiving --------------------------------------------------------------------------------

# State of one receive, reached from C callbacks through a pointer (kept alive by the caller).
mutable struct _RecvState
    mode::Symbol # :arrays (preallocated), :bytes (Vector{UInt8}), :malloc
    inband::Vector{UInt8}
    arrays::Vector{Any} # :arrays: the receiving arrays, in region order
    regions::Vector{Vector{UInt8}}
    ptrs::Vector{Ptr{Cvoid}} # :malloc: memory to hand to arrays (or to free)
    lens::Vector{Int64}
    kinds::Vector{Cint}
    exc::Any
    sobj::Base.RefValue{CdtSobj}
    prepared::Bool
end

_RecvState(mode::Symbol, arrays::Vector{Any} = Any[]) = _RecvState(
    mode,
    UInt8[],
    arrays,
    Vector{UInt8}[],
    Ptr{Cvoid}[],
    Int64[],
    Cint[],
    nothing,
    Ref(CdtSobj(0, C_NULL, 0, C_NULL, 0, C_NULL, C_NULL, C_NULL, 0)),
    false,
)

# cdt_sobj_alloc_func_t: memory for the in-band bytes (index -1) and for each buffer
function _alloc_cb(
    user::Ptr{Cvoid},
    index::Int64,
    len::Int64,
    kind::Cint,
    base::Ptr{Ptr{Cvoid}},
)::Cint
    st = unsafe_pointer_to_objref(user)::_RecvState
    try
        p = Ptr{Cvoid}(C_NULL)
        if index < 0
            st.inband = Vector{UInt8}(undef, len)
            p = Ptr{Cvoid}(pointer(st.inband))
        elseif st.mode === :arrays
            index + 1 <= length(st.arrays) || return CDT_ERR_FRAME_MISMATCH
            a = st.arrays[index + 1]
            sizeof(a) == len || return CDT_ERR_FRAME_MISMATCH
            p = Ptr{Cvoid}(pointer(a))
        elseif st.mode === :bytes
            r = Vector{UInt8}(undef, len)
            push!(st.regions, r)
            p = Ptr{Cvoid}(pointer(r))
        else
            if len > 0
                p = Libc.malloc(len)
                p == C_NULL && return CDT_ERR_NO_MEMORY
            end
            push!(st.ptrs, p)
        end
        if index >= 0
            push!(st.lens, len)
            push!(st.kinds, kind)
        end
        unsafe_store!(base, len == 0 ? Ptr{Cvoid}(C_NULL) : p)
        return CDT_SUCCESS
    catch e
        st.exc = e
        return CDT_ERR_JULIA_EXCEPTION
    end
end

_alloc_cfunc() = @cfunction(
    _alloc_cb,
    Cint,
    (Ptr{Cvoid}, Int64, Int64, Cint, Ptr{Ptr{Cvoid}}),
)

# size st.sobj from the decoder's header through _alloc_cb, then bind the decoder to it
function _prepare_bind(st::_RecvState, dec::Ptr{Cvoid})::Cint
    st.sobj[] = CdtSobj(
        CDT_SOBJ_FIELD_ALLOC,
        C_NULL,
        0,
        C_NULL,
        0,
        _alloc_cfunc(),
        pointer_from_objref(st),
        C_NULL,
        0,
    )
    rc = ccall(cfn(:cdt_sobj_recv_prepare), Cint, (Ref{CdtSobj}, Ptr{Cvoid}), st.sobj, dec)
    rc == 0 || return rc
    st.prepared = true
    rc = ccall(
        cfn(:cdt_decoder_bind),
        Cint,
        (Ptr{Cvoid}, Ptr{Cvoid}, Int64, Ptr{Cvoid}),
        dec,
        st.sobj,
        1,
        _sobj_type(),
    )
    return rc
end

function _release!(st::_RecvState)
    if st.prepared
        ccall(cfn(:cdt_sobj_release), Cvoid, (Ref{CdtSobj},), st.sobj)
        st.prepared = false
    end
end

function _free_ptrs!(st::_RecvState)
    for p in st.ptrs
        p == C_NULL || Libc.free(p)
    end
    empty!(st.ptrs)
end

function _raise(st::_RecvState, rc::Integer, what::AbstractString)
    if rc == CDT_ERR_JULIA_EXCEPTION && st.exc !== nothing
        throw(st.exc)
    end
    check(rc, what)
end

function _decoder_info(dec::Ptr{Cvoid})
    info = Ref(CdtFrameInfo())
    check(
        ccall(cfn(:cdt_decoder_info), Cint, (Ptr{Cvoid}, Ref{CdtFrameInfo}), dec, info),
        "cdt_decoder_info",
    )
    return info[]
end

function _region_info(dec::Ptr{Cvoid}, i::Integer)
    len = Ref{Int64}(0)
    kind = Ref{Cint}(0)
    off = Ref{Int64}(0)
    check(
        ccall(
            cfn(:cdt_decoder_region_info),
            Cint,
            (Ptr{Cvoid}, Int64, Ref{Int64}, Ref{Cint}, Ref{Int64}),
            dec,
            i,
            len,
            kind,
            off,
        ),
        "cdt_decoder_region_info",
    )
    return (len = Int(len[]), kind = Int(kind[]), offset = Int(off[]))
end

# validate the header of a whole frame in `bytes`; returns (decoder, info)
function _open_frame(bytes::Vector{UInt8}, max_frame_bytes, max_regions)
    n = length(bytes)
    n < CDT_FRAME_FIXED_HEADER_SIZE &&
        throw(CDTypesError(CDT_ERR_FRAME_TRUNCATED, "$n bytes cannot hold a frame header"))
    dec = Ref{Ptr{Cvoid}}(C_NULL)
    if max_frame_bytes === nothing && max_regions === nothing
        rc = ccall(
            cfn(:cdt_decoder_create),
            Cint,
            (Ptr{UInt8}, Int64, Ref{Ptr{Cvoid}}),
            bytes,
            n,
            dec,
        )
    else
        mask = UInt64(0)
        mask |= max_frame_bytes === nothing ? UInt64(0) : CDT_DECODER_PARAM_MAX_FRAME_BYTES
        mask |= max_regions === nothing ? UInt64(0) : CDT_DECODER_PARAM_MAX_REGIONS
        p = Ref(CdtDecoderParams(
            mask,
            something(max_frame_bytes, 0),
            something(max_regions, 0),
        ))
        rc = ccall(
            cfn(:cdt_decoder_create_advanced),
            Cint,
            (Ptr{UInt8}, Int64, Ref{CdtDecoderParams}, Ref{Ptr{Cvoid}}),
            bytes,
            n,
            p,
            dec,
        )
    end
    check(rc, "cdt_decoder_create")
    info = try
        _decoder_info(dec[])
    catch
        ccall(cfn(:cdt_decoder_free), Cint, (Ptr{Cvoid},), dec[])
        rethrow()
    end
    msg = ""
    code = 0
    if info.frame_size > n
        code, msg = CDT_ERR_FRAME_TRUNCATED,
            "the header announces $(info.frame_size) bytes, $n were given"
    elseif info.frame_size < n
        code, msg = CDT_ERR_FRAME_MALFORMED,
            "$(n - info.frame_size) bytes after the end of the frame"
    end
    if code != 0
        ccall(cfn(:cdt_decoder_free), Cint, (Ptr{Cvoid},), dec[])
        throw(CDTypesError(code, msg))
    end
    return dec[], info
end

# bind through st, write the whole frame, finish; frees the decoder
function _run_decoder(dec::Ptr{Cvoid}, st::_RecvState, bytes::Vector{UInt8})
    try
        GC.@preserve st bytes begin
            _raise(st, _prepare_bind(st, dec), "cdt_sobj_recv_prepare")
            check(
                ccall(
                    cfn(:cdt_decoder_write),
                    Cint,
                    (Ptr{Cvoid}, Int64, Ptr{UInt8}, Int64),
                    dec,
                    0,
                    bytes,
                    length(bytes),
                ),
                "cdt_decoder_write",
            )
            check(
                ccall(cfn(:cdt_decoder_finish), Cint, (Ptr{Cvoid},), dec),
                "cdt_decoder_finish",
            )
        end
    finally
        ccall(cfn(:cdt_decoder_free), Cint, (Ptr{Cvoid},), dec)
        _release!(st)
    end
    return nothing
end

_bytes(data::Vector{UInt8}) = data
_bytes(data::AbstractVector{UInt8}) = Vector{UInt8}(data)

"""
    RawFrame

A frame decoded at the frame level (any frame, whatever wrote it): `info` (the header's
fields, `CdtFrameInfo`), `header` (its bytes), `stream` (the packed stream), `regions` (each
region's bytes) and `kinds` (each region's element kind, docs/FORMAT.md section 3).
"""
struct RawFrame
    info::CdtFrameInfo
    header::Vector{UInt8}
    stream::Vector{UInt8}
    regions::Vector{Vector{UInt8}}
    kinds::Vector{Int}
end

"""
    CDTypes.decode_frame(bytes; max_frame_bytes=nothing, max_regions=nothing) -> RawFrame

Validate one whole frame and take it apart (header, packed stream, regions) through the
serialized-object adapter; works for frames from C, Python or Julia. Throws `CDTypesError`
for anything that is not one complete, valid frame.
"""
function decode_frame(
    data::AbstractVector{UInt8};
    max_frame_bytes = nothing,
    max_regions = nothing,
)
    bytes = _bytes(data)
    dec, info = _open_frame(bytes, max_frame_bytes, max_regions)
    st = _RecvState(:bytes)
    _run_decoder(dec, st, bytes)
    return RawFrame(info, bytes[1:info.header_size], st.inband, st.regions, Int.(st.kinds))
end

"""
    CDTypes.decode(bytes; max_frame_bytes=nothing, max_regions=nothing)

Rebuild the object of one whole frame written by `encode` (or sent by `send`). The table of
contents at the start of the in-band stream gives each out-of-band array's element type and
dimensions: each is allocated as `Array{T}(undef, dims)` and the region's bytes are written
straight into it, then the rest of the stream is deserialized. Throws `CDTypesError` for an
invalid frame (`max_*` limits: `CDT_ERR_LIMIT`), `ArgumentError` for a valid frame that does
not hold a CDTypes.jl stream.

Like `Serialization.deserialize`, decoding runs the Julia deserializer on the in-band stream:
only decode frames from peers you trust.
"""
function decode(
    data::AbstractVector{UInt8};
    max_frame_bytes = nothing,
    max_regions = nothing,
)
    bytes = _bytes(data)
    dec, info = _open_frame(bytes, max_frame_bytes, max_regions)
    arrays = Any[]
    try
        hs, ps = Int(info.header_size), Int(info.packed_size)
        stream = bytes[hs + 1:hs + ps]
        _is_julia_stream(stream) ||
            throw(ArgumentError(
                "not a CDTypes.jl frame: its packed stream is not a Julia serialization stream (decode_frame gives the raw parts)",
            ))
        toc = read_toc(IOBuffer(stream))
        length(toc) == info.region_count ||
            throw(CDTypesError(
                CDT_ERR_FRAME_MISMATCH,
                "the stream lists $(length(toc)) arrays, the frame has $(info.region_count) regions",
            ))
        for (i, (T, dims)) in enumerate(toc)
            nbytes = Base.checked_mul(reduce(Base.checked_mul, dims; init = 1), sizeof(T))
            r = _region_info(dec, i - 1)
            nbytes == r.len ||
                throw(CDTypesError(
                    CDT_ERR_FRAME_MISMATCH,
                    "array $i is $nbytes bytes, region $(i - 1) is $(r.len)",
                ))
            push!(arrays, Array{T}(undef, dims))
        end
    catch
        ccall(cfn(:cdt_decoder_free), Cint, (Ptr{Cvoid},), dec)
        rethrow()
    end
    st = _RecvState(:arrays, arrays)
    _run_decoder(dec, st, bytes)
    io = IOBuffer(st.inband)
    read_toc(io)
    return deserialize_body(io, arrays)
end

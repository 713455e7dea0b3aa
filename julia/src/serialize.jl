# Julia's Serialization onto the serialized-object adapter (libcdt/include/cdt_sobj.h).
#
# In-band bytes of a frame written by this package (all one Julia serialization stream format):
#
#   table of contents: a plain Serializer stream (with header) of Vector{Any} holding one
#                      (element type, dims) tuple per out-of-band array, in region order
#   body:              a `CDTSerializer` stream (with header) of the object, in which every
#                      out-of-band array is written as a reference (`OOBArrayRef`, its index)
#
# The receiver reads the table first (it lies in the packed stream, before any region), so
# it allocates each array as Array{T}(undef, dims) before the region bytes land in it.

"""
    OOBArrayRef

Marker type in the in-band stream where an array travels out of band (field: 1-based index
into the table of contents / the frame's regions). Never seen by users.
"""
struct OOBArrayRef
    index::Int
end

"Default: `Array{T}` with `isbitstype(T)` and at least this many bytes go out of band."
const DEFAULT_THRESHOLD = 1024

"""
    CDTSerializer(io; threshold=DEFAULT_THRESHOLD, arrays=Any[])

A `Serialization.AbstractSerializer` that writes the ordinary Julia serialization stream,
except that every `Array{T}` with `isbitstype(T)` and `sizeof(a) >= threshold` is written as
a reference (its index) and collected in `arrays`. Deserializing with `arrays` filled gives
those arrays back at the references.
"""
mutable struct CDTSerializer{I <: IO} <: Serialization.AbstractSerializer
    io::I
    counter::Int
    table::IdDict{Any, Any}
    pending_refs::Vector{Int}
    known_object_data::Dict{UInt64, Any}
    version::Int
    threshold::Int
    arrays::Vector{Any}
    inband::Int # > 0 while serializing something that keeps its arrays in band
    function CDTSerializer{I}(io::I, threshold::Integer, arrays::Vector{Any}) where {I <:
        IO}
        new(
            io,
            0,
            IdDict(),
            Int[],
            Dict{UInt64, Any}(),
            Serialization.ser_version,
            Int(threshold),
            arrays,
            0,
        )
    end
end

CDTSerializer(
    io::IO;
    threshold::Integer = DEFAULT_THRESHOLD,
    arrays::Vector{Any} = Any[],
) = CDTSerializer{typeof(io)}(io, threshold, arrays)

_oob(s::CDTSerializer, a::Array{T}) where {T} = s.inband == 0 &&
    isbitstype(T) &&
    s.threshold >= 0 &&
    sizeof(a) >= s.threshold

function Serialization.serialize(s::CDTSerializer, a::Array{T, N}) where {T, N}
    if !_oob(s, a)
        return invoke(
            Serialization.serialize,
            Tuple{Serialization.AbstractSerializer, Array},
            s,
            a,
        )
    end
    # as serialize_any does for a mutable object: identity first (a repeated array becomes a
    # back-reference), then REF_OBJECT_TAG + the marker type, then its field
    Serialization.serialize_cycle(s, a) && return nothing
    push!(s.arrays, a)
    Serialization.serialize_type(s, OOBArrayRef, true)
    Serialization.serialize(s, length(s.arrays))
    return nothing
end

# BitArray is sent in band, its chunks included
function Serialization.serialize(s::CDTSerializer, b::BitArray)
    s.inband += 1
    try
        invoke(
            Serialization.serialize,
            Tuple{Serialization.AbstractSerializer, BitArray},
            s,
            b,
        )
    finally
        s.inband -= 1
    end
    return nothing
end

function Serialization.deserialize(s::CDTSerializer, ::Type{OOBArrayRef})
    i = Serialization.deserialize(s)
    (i isa Int && 1 <= i <= length(s.arrays)) ||
        throw(ArgumentError(
            "stream refers to out-of-band array $(repr(i)); the frame has $(length(s.arrays))",
        ))
    a = s.arrays[i]
    Serialization.deserialize_cycle(s, a) # the slot REF_OBJECT_TAG reserved
    return a
end

# --- in-band stream: table of contents + body -------------------------------------------------

"""
    serialize_parts(obj; threshold=DEFAULT_THRESHOLD) -> (inband::Vector{UInt8}, arrays)

The in-band bytes (table of contents + body) and the out-of-band arrays of `obj`.
"""
function serialize_parts(obj; threshold::Integer = DEFAULT_THRESHOLD)
    body = IOBuffer()
    s = CDTSerializer(body; threshold = threshold)
    Serialization.writeheader(s)
    Serialization.serialize(s, obj)
    toc = Any[(eltype(a), size(a)) for a in s.arrays]
    out = IOBuffer()
    Serialization.serialize(out, toc) # plain Serializer, with header
    write(out, take!(body))
    return take!(out), s.arrays
end

const _STREAM_MAGIC = (
    0x37,
    UInt8('J'),
    UInt8('L'),
) # HEADER_TAG, "JL" (Serialization.writeheader)

function _is_julia_stream(b::AbstractVector{UInt8})
    return length(b) >= 8 &&
        b[1] == _STREAM_MAGIC[1] &&
        b[2] == _STREAM_MAGIC[2] &&
        b[3] == _STREAM_MAGIC[3]
end

"""
    read_toc(io) -> Vector{Tuple{DataType,Dims}}

Read and check the table of contents at the start of an in-band stream.
"""
function read_toc(io::IO)
    toc = Serialization.deserialize(io)
    toc isa Vector{Any} ||
        throw(ArgumentError(
            "in-band stream does not start with a CDTypes table of contents",
        ))
    out = Tuple{DataType, Tuple{Vararg{Int}}}[]
    for e in toc
        (
            e isa Tuple &&
                length(e) == 2 &&
                e[1] isa DataType &&
                isbitstype(e[1]) &&
                e[2] isa Tuple{Vararg{Int}} &&
                all(>=(0), e[2])
        ) ||
            throw(ArgumentError("malformed table of contents entry $(repr(e))"))
        push!(out, (e[1], e[2]))
    end
    return out
end

"Deserialize the body (after the table of contents) with the out-of-band `arrays`."
function deserialize_body(io::IO, arrays::Vector{Any})
    s = CDTSerializer(io; arrays = arrays)
    return Serialization.deserialize(s)
end

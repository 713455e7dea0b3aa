# CDTypes over MPI.jl: one MPI message per object, the protocol of python/cdtypes/mpi.py. The
# sender encodes the object and sends the frame's bytes as one message; the receiver matches
# it with MPI_Mprobe, allocates the byte count the status announces, receives it with
# MPI_Mrecv and decodes it (the frame header validates every length).
module CDTypesMPIExt

using CDTypes
using MPI

"""
    CDTypes.send(obj, comm::MPI.Comm; dest, tag=0)

Send `obj` to rank `dest` as one MPI message (blocking, like MPI_Send).
"""
function CDTypes.send(
    obj,
    comm::MPI.Comm;
    dest::Integer,
    tag::Integer = 0,
    threshold::Integer = CDTypes.DEFAULT_THRESHOLD,
)
    f = CDTypes.encode(obj; threshold = threshold)
    buf = try
        CDTypes.tobytes(f)
    finally
        close(f)
    end
    MPI.Send(buf, comm; dest = dest, tag = tag)
    return nothing
end

"""
    CDTypes.recv(comm::MPI.Comm; source=nothing, tag=nothing) -> obj

Receive one object sent by `CDTypes.send(obj, comm; ...)` (nothing: any source / any tag).
"""
function CDTypes.recv(
    comm::MPI.Comm;
    source::Union{Nothing, Integer} = nothing,
    tag::Union{Nothing, Integer} = nothing,
)
    kw = Pair{Symbol, Int}[]
    source === nothing || push!(kw, :source => Int(source))
    tag === nothing || push!(kw, :tag => Int(tag))
    msg, status = MPI.Mprobe(comm, MPI.Status; kw...)
    n = MPI.Get_count(status, UInt8)
    buf = Vector{UInt8}(undef, n)
    MPI.Mrecv!(buf, msg)
    return CDTypes.decode(buf)
end

# an Endpoint is not an object to send over MPI: keep the two `send` families apart
CDTypes.send(::CDTypes.Endpoint, ::MPI.Comm; kw...) = throw(ArgumentError(
    "send(ep, obj) sends over UCX, send(obj, comm) over MPI",
))

end # module

# CDTypes over MPI.jl: the protocol specified in docs/MPI.md (normative; the section numbers
# in this file's comments are that document's, and its section 13.2 lists where this binding
# departs from it), shared with python/cdtypes/mpi.py. The receiver matches ONE message per
# object (MPI_Mprobe, wildcards allowed) and learns every length from it: the head message
# holds a 16-byte prefix (magic "CDT2", u32 object id, u64 threshold), the frame header, the
# Julia stream and the arrays below THRESHOLD bytes. The larger arrays travel together as one
# more message, read where they lie on the sender and received straight into the arrays
# allocated for them, on a duplicate of the communicator (made by `CDTypes.mpi_attach(comm)`,
# collective) under a tag that is the object's id: no lock, and a user's receive never sees a
# part. On a communicator that is not attached the whole frame travels in the head message
# (one copy on each side); a receive there also accepts parts sent in line, the next message
# from the head's source under its tag (Python's pkl5 API, docs/MPI.md §2.3).
#
# The receiver enforces the rules of docs/MPI.md §7.3 and §8: the parts message is matched
# (Mprobe) under (the head's source, the head's id) and its byte count compared with the sum
# of the separate regions the head announced before a byte lands in the arrays (fewer or more:
# CDTypesError naming the peer, the message consumed unread); a failed receive drains at most
# one message under that id, unread, waiting at most PARTS_TIMEOUT seconds; an id a drain gave
# up on is owed, and the next object from that source under that id first consumes one message
# per owed part. This binding has no receive limits: its receives wait for the parts as
# MPI_Recv would (docs/MPI.md §8.2).
module CDTypesMPIExt

using CDTypes
using MPI
using CDTypes: CdtIov

const MAGIC = 0x32544443 # "CDT2", little-endian (docs/MPI.md §4.1, §11)
const PREFIX = 16
const THRESHOLD = 64 * 1024
const TAG_SPACE = 32767 # the tag upper bound every MPI guarantees (docs/MPI.md §3.2)
const MAX_BLOCK = 1 << 30 # MPI counts are Cint: a part is sent in blocks of at most this
const DUPS = Dict{Any, MPI.Comm}() # comm.val -> its duplicate for the parts messages
const DUPS_LOCK = ReentrantLock()
const NEXT_ID = Threads.Atomic{UInt32}(0)
# seconds a drain waits for the parts message it drops (docs/MPI.md §8.3)
const PARTS_TIMEOUT = Ref(10.0)
# the parts owed, per (duplicate's val, source): [id => count], at most OWED_MAX ids (oldest
# forgotten beyond; docs/MPI.md §8.4)
const OWED = Dict{Tuple{Any, Int}, Vector{Pair{Int, Int}}}()
const OWED_MAX = 1024
const OWED_LOCK = ReentrantLock()

"""
    CDTypes.mpi_attach(comm) -> MPI.Comm

Duplicate `comm` for the large arrays of CDTypes objects (collective over `comm`: every rank
calls it once; later calls return the same duplicate; docs/MPI.md §2.2). Without it, objects
sent on `comm` travel whole in one message (correct, one copy per side).
"""
function CDTypes.mpi_attach(comm::MPI.Comm)
    return lock(DUPS_LOCK) do
        get!(() -> MPI.Comm_dup(comm), DUPS, comm.val)
    end
end

_attached(comm::MPI.Comm) = lock(() -> get(DUPS, comm.val, nothing), DUPS_LOCK)

function _put!(h::Vector{UInt8}, at::Int, v::Integer, n::Int)
    for k in 0:(n - 1)
        h[at + k] = UInt8((UInt64(v) >> (8k)) & 0xff)
    end
end

_get(h::Vector{UInt8}, at::Int, n::Int) = reduce(
    (acc, k) -> acc | (UInt64(h[at + k]) << (8k)),
    0:(n - 1);
    init = UInt64(0),
)

_separate(len, threshold) = threshold > 0 && len >= threshold

# the one message of every separate part: (base pointer, count, datatype) over their memory
# (docs/MPI.md §5)
function _parts_buffer(ptrs::Vector{Ptr{UInt8}}, lens::Vector{Int})
    base = ptrs[1]
    blocks = Cint[]
    displs = Int[]
    for (p, len) in zip(ptrs, lens), start in 0:MAX_BLOCK:(len - 1)
        push!(blocks, Cint(min(MAX_BLOCK, len - start)))
        push!(displs, Int(p - base) + start)
    end
    length(blocks) == 1 && return MPI.Buffer(base, blocks[1], MPI.BYTE)
    dt = MPI.Types.create_struct(blocks, displs, fill(MPI.BYTE, length(blocks)))
    MPI.Types.commit!(dt)
    return MPI.Buffer(base, 1, dt)
end

# the one piece of region i of a frame (fn :frame) or of a decoder's destination (:decoder);
# two ccalls because each names its C function literally, as julia/tools/check_abi.py needs
function _region_ptr(fn::Symbol, h::Ptr{Cvoid}, i::Integer)
    iov = Ref(CdtIov(C_NULL, 0))
    got = Ref{Int64}(0)
    rc = if fn === :frame
        ccall(
            CDTypes.cfn(:cdt_frame_region_iov),
            Cint,
            (Ptr{Cvoid}, Int64, Int64, Int64, Ref{CdtIov}, Ref{Int64}),
            h,
            i,
            0,
            1,
            iov,
            got,
        )
    else
        ccall(
            CDTypes.cfn(:cdt_decoder_region_iov),
            Cint,
            (Ptr{Cvoid}, Int64, Int64, Int64, Ref{CdtIov}, Ref{Int64}),
            h,
            i,
            0,
            1,
            iov,
            got,
        )
    end
    CDTypes.check(rc, "cdt_$(fn)_region_iov")
    got[] == 1 || throw(CDTypesError(CDTypes.CDT_ERR_FRAME_MALFORMED, "a region in pieces"))
    return Ptr{UInt8}(iov[].base)
end

function _frame_region(f::CDTypes.Frame, i::Integer)
    len = Ref{Int64}(0)
    kind = Ref{Cint}(0)
    off = Ref{Int64}(0)
    CDTypes.check(
        ccall(
            CDTypes.cfn(:cdt_frame_region_info),
            Cint,
            (Ptr{Cvoid}, Int64, Ref{Int64}, Ref{Cint}, Ref{Int64}),
            CDTypes._handle(f),
            i,
            len,
            kind,
            off,
        ),
        "cdt_frame_region_info",
    )
    return (len = Int(len[]), offset = Int(off[]))
end

function _gather!(head::Vector{UInt8}, at::Int, f::CDTypes.Frame, offset::Int, len::Int)
    len == 0 && return
    GC.@preserve head CDTypes.check(
        ccall(
            CDTypes.cfn(:cdt_frame_gather),
            Cint,
            (Ptr{Cvoid}, Int64, Ptr{UInt8}, Int64),
            CDTypes._handle(f),
            offset,
            pointer(head, at),
            len,
        ),
        "cdt_frame_gather",
    )
end

"""
    CDTypes.send(obj, comm::MPI.Comm; dest, tag=0)

Send `obj` to rank `dest` (blocking, like MPI_Send): one head message on `comm`, plus, when
`comm` is attached (`CDTypes.mpi_attach`) and the object has arrays of 64 KiB or more, one
message of those arrays read in place (docs/MPI.md §6; the head §4, the id §3.2).
"""
function CDTypes.send(
    obj,
    comm::MPI.Comm;
    dest::Integer,
    tag::Integer = 0,
    threshold::Integer = CDTypes.DEFAULT_THRESHOLD,
)
    pc = _attached(comm)
    t = pc === nothing ? 0 : THRESHOLD
    oid = Int(Threads.atomic_add!(NEXT_ID, UInt32(1)) % UInt32(TAG_SPACE)) + 1
    f = CDTypes.encode(obj; threshold = threshold)
    try
        regions = [_frame_region(f, i) for i in 0:(CDTypes.nregions(f) - 1)]
        sep = [i for i in eachindex(regions) if _separate(regions[i].len, t)]
        sep_bytes = sum(regions[i].len for i in sep; init = 0)
        head = Vector{UInt8}(undef, PREFIX + f.size - sep_bytes)
        _put!(head, 1, MAGIC, 4)
        _put!(head, 5, oid, 4)
        _put!(head, 9, t, 8)
        at, pos = PREFIX + 1, 0
        for i in sep
            # the bytes between the separate regions, in frame order
            off = regions[i].offset
            _gather!(head, at, f, pos, off - pos)
            at += off - pos
            pos = off + regions[i].len
        end
        _gather!(head, at, f, pos, f.size - pos)
        if isempty(sep)
            MPI.Send(head, comm; dest = dest, tag = tag)
        else
            ptrs = [_region_ptr(:frame, CDTypes._handle(f), i - 1) for i in sep]
            lens = [regions[i].len for i in sep]
            GC.@preserve f head begin
                reqs = [
                    MPI.Isend(head, comm; dest = dest, tag = tag),
                    MPI.Isend(_parts_buffer(ptrs, lens), pc; dest = dest, tag = oid),
                ]
                MPI.Waitall(reqs)
            end
        end
    finally
        close(f)
    end
    return nothing
end

# n more parts under (source, oid) that may still arrive on the duplicate pc (docs/MPI.md §8.4)
function _owe!(pc, source::Integer, oid::Integer, n::Integer)
    lock(OWED_LOCK) do
        owed = get!(() -> Pair{Int, Int}[], OWED, (pc.val, Int(source)))
        i = findfirst(p -> p.first == oid, owed)
        i === nothing ? push!(owed, oid => n) : (owed[i] = oid => owed[i].second + n)
        length(owed) > OWED_MAX && popfirst!(owed)
    end
    return
end

# how many stale parts precede the next message under (source, oid); forgets them
function _take_owed!(pc, source::Integer, oid::Integer)
    return lock(OWED_LOCK) do
        key = (pc.val, Int(source))
        owed = get(OWED, key, nothing)
        owed === nothing && return 0
        i = findfirst(p -> p.first == oid, owed)
        i === nothing && return 0
        n = owed[i].second
        deleteat!(owed, i)
        isempty(owed) && delete!(OWED, key)
        return n
    end
end

function _error_class(code::Integer)
    class = Ref{Cint}(0)
    MPI.API.MPI_Error_class(code, class)
    return class[]
end

# consume a matched message unread: a zero-byte receive, which MPI ends with a truncation
# error when the message has bytes (docs/MPI.md §8.3)
function _discard(msg::MPI.Message)
    try
        MPI.Mrecv!(UInt8[], msg)
    catch e
        truncated = e isa MPI.MPIError && _error_class(e.code) == MPI.API.MPI_ERR_TRUNCATE[]
        truncated || rethrow()
    end
    return
end

# receive the parts message of an object into buf (nbytes in all): the late parts of earlier
# objects under this id first, then its byte count checked before anything is received
# (docs/MPI.md §7.3)
function _recv_parts(pc, src::Integer, oid::Integer, buf, nbytes::Integer)
    for _ in 1:_take_owed!(pc, src, oid)
        _discard(MPI.Mprobe(pc; source = src, tag = oid))
    end
    msg, status = MPI.Mprobe(pc, MPI.Status; source = src, tag = oid)
    _recv_matched(msg, status, src, oid, buf, nbytes)
    return
end

# the parts message in line on a communicator that is not attached (Python's pkl5 API sends
# so): the next message from src under the head's tag, posted right after the head
# (docs/MPI.md §2.3); nothing is ever owed there
function _recv_parts_inline(
    comm,
    src::Integer,
    tag::Integer,
    oid::Integer,
    buf,
    nbytes::Integer,
)
    msg, status = MPI.Mprobe(comm, MPI.Status; source = src, tag = tag)
    _recv_matched(msg, status, src, oid, buf, nbytes)
    return
end

# a matched parts message: its byte count checked before anything is received (§7.3 step 3)
function _recv_matched(msg, status, src::Integer, oid::Integer, buf, nbytes::Integer)
    n = MPI.Get_count(status, UInt8)
    if n != nbytes
        _discard(msg)
        throw(CDTypesError(
            n < nbytes ? CDTypes.CDT_ERR_FRAME_TRUNCATED : CDTypes.CDT_ERR_FRAME_MALFORMED,
            "rank $src sent a parts message of $n bytes for object $oid, its head announced $nbytes",
        ))
    end
    MPI.Mrecv!(buf, msg)
    return
end

# drop the parts of an object that will not be rebuilt, so its send completes: one message
# under (source, oid), consumed unread, waited for at most PARTS_TIMEOUT seconds (then owed;
# docs/MPI.md §8.3)
function _drain(pc, source::Integer, oid::Integer, nbytes::Integer)
    (pc === nothing || nbytes == 0) && return
    stale = _take_owed!(pc, source, oid)
    deadline = time() + PARTS_TIMEOUT[]
    while true
        found, msg = MPI.Improbe(pc; source = source, tag = oid)
        if found
            _discard(msg)
            stale == 0 && return
            stale -= 1
        elseif time() >= deadline
            _owe!(pc, source, oid, stale + 1)
            return
        else
            sleep(0.001)
        end
    end
end

"""
    CDTypes.recv(comm::MPI.Comm; source=nothing, tag=nothing) -> obj

Receive one object sent by `CDTypes.send(obj, comm; ...)` (nothing: any source / any tag).
Every array of the object is allocated from the head message's header and its bytes land in
it (the large ones straight from the parts message). Throws `CDTypesError` for a message
that is not such an object; its parts, if any, are received and dropped. The head is matched
as docs/MPI.md §7.1 says and checked in the order of §7.2.
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
    head = Vector{UInt8}(undef, n)
    MPI.Mrecv!(head, msg)
    (n >= PREFIX && UInt32(_get(head, 1, 4)) == MAGIC) ||
        throw(CDTypesError(
            -9,
            "not a CDTypes MPI message ($n bytes)",
        )) # CDT_ERR_FRAME_MAGIC
    oid = Int(_get(head, 5, 4))
    t = Int(min(_get(head, 9, 8), UInt64(typemax(Int))))
    return _receive(comm, head, status.source, oid, t, status.tag)
end

# the in-line parts of an object that will not be rebuilt (docs/MPI.md §2.3, §8.3): the next
# message from source under tag on comm, consumed unread, waited for at most PARTS_TIMEOUT
# seconds (nothing is recorded when it gives up: a late one meets the next receive under tag)
function _drain_inline(comm, source::Integer, tag::Integer, nbytes::Integer)
    nbytes == 0 && return
    deadline = time() + PARTS_TIMEOUT[]
    while true
        found, msg = MPI.Improbe(comm; source = source, tag = tag)
        if found
            _discard(msg)
            return
        elseif time() >= deadline
            return
        else
            sleep(0.001)
        end
    end
end

# docs/MPI.md §7.2 from step 4 on, then §7.3 and the finish; on a communicator that is not
# attached, parts are in line under the head's tag (§2.3)
function _receive(comm, head::Vector{UInt8}, src::Integer, oid::Int, t::Int, tag::Integer)
    pc = _attached(comm)
    nframe = length(head) - PREFIX
    nframe >= CDTypes.CDT_FRAME_FIXED_HEADER_SIZE ||
        throw(CDTypesError(
            CDTypes.CDT_ERR_FRAME_TRUNCATED,
            "$nframe bytes cannot hold a frame header",
        ))
    decref = Ref{Ptr{Cvoid}}(C_NULL)
    rc = GC.@preserve head ccall(
        CDTypes.cfn(:cdt_decoder_create),
        Cint,
        (Ptr{UInt8}, Int64, Ref{Ptr{Cvoid}}),
        pointer(head, PREFIX + 1),
        nframe,
        decref,
    )
    CDTypes.check(rc, "cdt_decoder_create") # no header: no parts can be found to drain
    dec = decref[]
    st = nothing
    sep = Int[]
    sep_bytes = 0
    posted = false
    try
        info = CDTypes._decoder_info(dec)
        regions = [CDTypes._region_info(dec, i) for i in 0:(info.region_count - 1)]
        sep = [i - 1 for i in eachindex(regions) if _separate(regions[i].len, t)]
        sep_bytes = sum(regions[i + 1].len for i in sep; init = 0)
        info.frame_size - sep_bytes == nframe ||
            throw(CDTypesError(
                nframe < info.frame_size - sep_bytes ?
                    CDTypes.CDT_ERR_FRAME_TRUNCATED :
                    CDTypes.CDT_ERR_FRAME_MALFORMED,
                "the head message has $nframe frame bytes, its header announces $(info.frame_size - sep_bytes)",
            ))
        # the stream lies before every region, so at its frame offset in the head
        hs, ps = Int(info.header_size), Int(info.packed_size)
        stream = head[(PREFIX + hs + 1):(PREFIX + hs + ps)]
        CDTypes._is_julia_stream(stream) ||
            throw(ArgumentError(
                "not a CDTypes.jl object: its packed stream is not a Julia serialization stream",
            ))
        toc = CDTypes.read_toc(IOBuffer(stream))
        length(toc) == length(regions) ||
            throw(CDTypesError(
                CDTypes.CDT_ERR_FRAME_MISMATCH,
                "the stream lists $(length(toc)) arrays, the frame has $(length(regions)) regions",
            ))
        arrays = Any[]
        for (i, (T, dims)) in enumerate(toc)
            nbytes = Base.checked_mul(reduce(Base.checked_mul, dims; init = 1), sizeof(T))
            nbytes == regions[i].len ||
                throw(CDTypesError(
                    CDTypes.CDT_ERR_FRAME_MISMATCH,
                    "array $i is $nbytes bytes, region $(i - 1) is $(regions[i].len)",
                ))
            push!(arrays, Array{T}(undef, dims))
        end
        st = CDTypes._RecvState(:arrays, arrays)
        GC.@preserve st head arrays begin
            CDTypes._raise(st, CDTypes._prepare_bind(st, dec), "cdt_sobj_recv_prepare")
            # the head's bytes at their frame offsets, then the parts straight into the arrays
            pos, hpos = 0, PREFIX
            for i in vcat(sep, [length(regions)])
                off = i < length(regions) ? regions[i + 1].offset : Int(info.frame_size)
                if off > pos
                    CDTypes.check(
                        ccall(
                            CDTypes.cfn(:cdt_decoder_write),
                            Cint,
                            (Ptr{Cvoid}, Int64, Ptr{UInt8}, Int64),
                            dec,
                            pos,
                            pointer(head, hpos + 1),
                            off - pos,
                        ),
                        "cdt_decoder_write",
                    )
                    hpos += off - pos
                end
                i < length(regions) && (pos = off + regions[i + 1].len)
            end
            if !isempty(sep)
                ptrs = [_region_ptr(:decoder, dec, i) for i in sep]
                lens = [regions[i + 1].len for i in sep]
                posted = true
                if pc === nothing
                    _recv_parts_inline(
                        comm,
                        src,
                        tag,
                        oid,
                        _parts_buffer(ptrs, lens),
                        sep_bytes,
                    )
                else
                    _recv_parts(pc, src, oid, _parts_buffer(ptrs, lens), sep_bytes)
                end
                for i in sep
                    CDTypes.check(
                        ccall(
                            CDTypes.cfn(:cdt_decoder_region_done),
                            Cint,
                            (Ptr{Cvoid}, Int64),
                            dec,
                            i,
                        ),
                        "cdt_decoder_region_done",
                    )
                end
            end
            CDTypes.check(
                ccall(CDTypes.cfn(:cdt_decoder_finish), Cint, (Ptr{Cvoid},), dec),
                "cdt_decoder_finish",
            )
        end
        io = IOBuffer(st.inband)
        CDTypes.read_toc(io)
        return CDTypes.deserialize_body(io, arrays)
    catch
        if !posted
            if pc === nothing
                _drain_inline(comm, src, tag, sep_bytes)
            else
                _drain(pc, src, oid, sep_bytes)
            end
        end
        rethrow()
    finally
        ccall(CDTypes.cfn(:cdt_decoder_free), Cint, (Ptr{Cvoid},), dec)
        st === nothing || CDTypes._release!(st)
    end
end

# an Endpoint is not an object to send over MPI: keep the two `send` families apart
CDTypes.send(::CDTypes.Endpoint, ::MPI.Comm; kw...) = throw(ArgumentError(
    "send(ep, obj) sends over UCX, send(obj, comm) over MPI",
))

end # module

# The Julia rank of the multi-language MPI job (tests/mpi/mpmd/run.sh, where julia exists; the
# C rank, tests/mpi/mpmd/mpmd_rank.c, says what the job checks). Usage, under mpiexec:
#   julia --project=julia julia/test/mpmd_rank.jl VECTOR_DIR
# Every object of the shared test vectors and the large one (mpmd_objects.h) goes to every
# other rank, and every object received is compared byte for byte (stream, regions, kinds).
# The objects are other languages' streams, which CDTypes.send / CDTypes.recv (Julia
# serialization) do not carry, so this rank writes and reads the protocol's two messages
# itself, as docs/MPI.md sections 4-7 say, on the duplicate CDTypes.mpi_attach made, and
# takes the frame apart with CDTypes.decode_frame.
using MPI
include(joinpath(@__DIR__, "use_build_tree.jl"))
using CDTypes
include(joinpath(@__DIR__, "json_min.jl"))

const NAMES = [
    "c_vector_int32",
    "python_buffers",
    "python_empty_region",
    "python_inband",
    "rust_u32_vec_f64",
    "rust_vec_string",
    "large",
]
const MAGIC = 0x32544443 # "CDT2"
const THRESHOLD = 64 * 1024

MPI.Init()
const comm = MPI.COMM_WORLD
# where the Python ranks import cdtypes.mpi: before any other communicator is made (§2.2)
const pc = CDTypes.mpi_attach(comm)
const rank = MPI.Comm_rank(comm)
const nranks = MPI.Comm_size(comm)

hexbytes(s::AbstractString) = [parse(UInt8, s[i:(i + 1)]; base = 16) for i in 1:2:length(s)]

function le(v::Integer, n::Int)
    return [UInt8((UInt64(v) >> (8 * k)) & 0xff) for k in 0:(n - 1)]
end

getle(b::Vector{UInt8}, at::Int, n::Int) = sum(
    UInt64(b[at + k]) << (8 * k)
    for k in 0:(n - 1)
)

# (stream, regions, kinds) of object `name`
function expected(dir::AbstractString, name::AbstractString)
    if name == "large"
        regions = [
            [UInt8((31 * i + 7) & 0xff) for i in 0:((1 << 20) - 1)],
            UInt8.(0:9),
            [UInt8((13 * i + 1) & 0xff) for i in 0:79_999],
        ]
        return UInt8.(0:15), regions, [7, 1, 12]
    end
    d = parse_json(read(joinpath(dir, name * ".json"), String))
    regions = [hexbytes(r["hex"]) for r in d["regions"]]
    kinds = [Int(r["kind"]) for r in d["regions"]]
    return hexbytes(d["stream_hex"]), regions, kinds
end

# the frame of a serialized object (docs/FORMAT.md) and each region's offset
function frame_of(stream, regions, kinds)
    header_size = 48 + 16 * length(regions)
    body = copy(stream)
    offsets = Int[]
    for r in regions
        append!(body, zeros(UInt8, mod(-(header_size + length(body)), 8)))
        push!(offsets, header_size + length(body))
        append!(body, r)
    end
    out = UInt8[0x43, 0x44, 0x54, 0x46] # "CDTF"
    append!(out, le(1, 2), le(0, 2), le(header_size, 8), le(length(stream), 8))
    append!(out, le(length(regions), 8), le(header_size + length(body), 8), le(0, 8))
    for (r, k) in zip(regions, kinds)
        append!(out, le(length(r), 8), le(k, 4), le(0, 4))
    end
    return vcat(out, body), offsets
end

const next_id = Ref(0)

# §4-6: the head (prefix + the frame without its separate regions) on comm, the separate
# regions as one parts message on pc under the object's id
function send_object(stream, regions, kinds, dest::Integer, tag::Integer)
    data, offsets = frame_of(stream, regions, kinds)
    next_id[] = next_id[] % 32767 + 1
    oid = next_id[]
    head = vcat(le(MAGIC, 4), le(oid, 4), le(THRESHOLD, 8))
    parts = UInt8[]
    pos = 0
    for (r, off) in zip(regions, offsets)
        length(r) >= THRESHOLD || continue
        append!(head, data[(pos + 1):off])
        append!(parts, r)
        pos = off + length(r)
    end
    append!(head, data[(pos + 1):end])
    reqs = [MPI.Isend(head, comm; dest = dest, tag = tag)]
    isempty(parts) || push!(reqs, MPI.Isend(parts, pc; dest = dest, tag = oid))
    MPI.Waitall(reqs)
    return nothing
end

# §7: the head by matched probe, the parts by (source, id) on pc with their count checked
# first, the frame put back together (§4.3) and taken apart by decode_frame
function receive_object(source::Integer, tag::Integer)
    msg, status = MPI.Mprobe(comm, MPI.Status; source = source, tag = tag)
    head = Vector{UInt8}(undef, MPI.Get_count(status, UInt8))
    MPI.Mrecv!(head, msg)
    length(head) >= 16 + 48 && getle(head, 1, 4) == MAGIC || error("not a CDT2 head")
    oid = Int(getle(head, 5, 4))
    t = getle(head, 9, 8)
    f = head[17:end]
    nreg = Int(getle(f, 25, 8))
    frame_size = Int(getle(f, 33, 8))
    lens = [Int(getle(f, 49 + 16 * i, 8)) for i in 0:(nreg - 1)]
    sep = [i for i in 1:nreg if t > 0 && lens[i] >= t]
    parts = UInt8[]
    if !isempty(sep)
        pmsg, pst = MPI.Mprobe(pc, MPI.Status; source = source, tag = oid)
        MPI.Get_count(pst, UInt8) == sum(lens[sep]) || error("parts count differs")
        parts = Vector{UInt8}(undef, sum(lens[sep]))
        MPI.Mrecv!(parts, pmsg)
    end
    # walk the regions in order: the head's bytes up to each separate one, then its bytes
    frame = UInt8[]
    p, pos = 1, 48 + 16 * nreg + Int(getle(f, 17, 8))
    append!(frame, f[1:pos])
    h = pos + 1
    for i in 1:nreg
        off = pos + mod(-pos, 8)
        if i in sep
            append!(frame, f[h:(h + off - pos - 1)])
            h += off - pos
            append!(frame, parts[p:(p + lens[i] - 1)])
            p += lens[i]
        else
            append!(frame, f[h:(h + off - pos + lens[i] - 1)])
            h += off - pos + lens[i]
        end
        pos = off + lens[i]
    end
    length(frame) == frame_size && h == length(f) + 1 || error("the head's length differs")
    return CDTypes.decode_frame(frame)
end

function main(dir)
    received = 0
    for (k, name) in enumerate(NAMES)
        stream, regions, kinds = expected(dir, name)
        for from in 0:(nranks - 1)
            if from == rank
                for to in 0:(nranks - 1)
                    to == rank || send_object(stream, regions, kinds, to, k - 1)
                end
                continue
            end
            got = receive_object(from, k - 1)
            if got.stream != stream || got.regions != regions || got.kinds != kinds
                println(
                    stderr,
                    "mpmd Julia rank $rank: object $name from rank $from differs",
                )
                MPI.Abort(comm, 1)
            end
            received += 1
        end
    end
    MPI.Barrier(comm)
    println("mpmd rank $rank (Julia): $received objects received, byte for byte ok")
    return nothing
end

main(ARGS[1])

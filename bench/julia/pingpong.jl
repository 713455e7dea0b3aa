# CDTypes.jl against what a Julia user does today, two processes over libcdt's UCX transport
# (shared memory, as the other benchmarks run), methods side by side in one run:
#   cdtypes    CDTypes.send / CDTypes.recv of the object (large arrays out of band, no copy)
#   serialize  Serialization.serialize into bytes, one raw UCX message, deserialize from the
#              received bytes (the receiver reuses one buffer large enough for every message)
#   raw        one contiguous UCX message of the object's payload bytes into a reused buffer:
#              the roofline (no object at all)
# Cases: one_array (one Vector{Float64} of the size), many_arrays (Vector{Float64}s of 128 KiB
# each, from 128 KiB). Ping-pong: the server sends back what it received (rebuilt, for the
# object methods); latency = half a round trip, bandwidth = payload bytes / latency (MB = 10^6).
#
#   julia --project=julia bench/julia/pingpong.jl [--quick|--smoke] --csv OUT.csv
#
# CDTYPES_BENCH_SHIM names the raw-UCX shim library (bench/rust/shim.c), built by bench/julia/run.
using CDTypes
using Printf
using Serialization

const SHIM = get(ENV, "CDTYPES_BENCH_SHIM", "")
const WAIT_S = 120.0
const TAG_PING = 1
const TAG_PONG = 2
const RAW_PING = 101
const RAW_PONG = 102
const KiB = 1024
const MiB = 1024 * KiB
const CHUNK = 128 * KiB

struct Plan
    case::String
    method::String
    size::Int
    iters::Int
    warmup::Int
end

# --smoke (the test command): two tiny sizes, a few iterations, nothing judged
const SMOKE = "--smoke" in ARGS

function sizes(quick)
    SMOKE && return [16, CHUNK]
    quick && return [16, 4 * KiB, 128 * KiB, 1 * MiB, 16 * MiB]
    return [16, 256, 4 * KiB, 64 * KiB, 128 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB]
end

# the same list in both processes: the server echoes plan by plan
function plans(quick)
    budget = SMOKE ? 1 * MiB : quick ? 64 * MiB : 512 * MiB
    out = Plan[]
    for case in ("one_array", "many_arrays"), size in sizes(quick)
        case == "many_arrays" && size < CHUNK && continue
        iters = clamp(budget ÷ size, 5, quick ? 500 : 2000)
        for method in ("raw", "serialize", "cdtypes")
            push!(out, Plan(case, method, size, iters, max(2, iters ÷ 10)))
        end
    end
    return out
end

make_object(case, size) = case == "one_array" ?
    collect(Float64, 1:max(1, size ÷ 8)) :
    [fill(Float64(i), CHUNK ÷ 8) for i in 1:(size ÷ CHUNK)]

# --- raw UCX messages on the libcdt worker and endpoint (the shim) -------------------------

function raw_wait(w::CDTypes.Worker, req::Ptr{Cvoid})
    rc = ccall(
        (:bench_raw_wait, SHIM),
        Cint,
        (Ptr{Cvoid}, Ptr{Cvoid}, Cdouble),
        CDTypes._handle(w),
        req,
        WAIT_S,
    )
    rc == 0 || error("raw UCX request failed: ucs_status_t $rc")
    return nothing
end

function raw_send(ep::CDTypes.Endpoint, buf::Vector{UInt8}, n::Integer, tag::Integer)
    GC.@preserve buf begin
        req = ccall(
            (:bench_raw_isend, SHIM),
            Ptr{Cvoid},
            (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, UInt64),
            CDTypes._handle(ep),
            buf,
            n,
            tag,
        )
        raw_wait(ep.worker, req)
    end
end

function raw_recv(w::CDTypes.Worker, buf::Vector{UInt8}, n::Integer, tag::Integer)
    GC.@preserve buf begin
        req = ccall(
            (:bench_raw_irecv, SHIM),
            Ptr{Cvoid},
            (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, UInt64),
            CDTypes._handle(w),
            buf,
            n,
            tag,
        )
        raw_wait(w, req)
    end
end

function to_bytes(obj)
    io = IOBuffer()
    serialize(io, obj)
    return take!(io)
end

# --- one message each way ------------------------------------------------------------------

struct Peer
    w::CDTypes.Worker
    ep::CDTypes.Endpoint
    sbuf::Vector{UInt8} # raw: written once before any send
    rbuf::Vector{UInt8} # raw and serialize: reused for every receive
end

function send_obj(p::Peer, method, obj, n, tag)
    if method == "raw"
        raw_send(p.ep, p.sbuf, n, tag + RAW_PING - TAG_PING)
    elseif method == "serialize"
        bytes = to_bytes(obj)
        raw_send(p.ep, bytes, length(bytes), tag + RAW_PING - TAG_PING)
    else
        CDTypes.send(p.ep, obj; tag = tag, timeout = WAIT_S)
    end
end

function recv_obj(p::Peer, method, n, tag)
    if method == "raw"
        raw_recv(p.w, p.rbuf, n, tag + RAW_PING - TAG_PING)
        return nothing
    elseif method == "serialize"
        raw_recv(p.w, p.rbuf, length(p.rbuf), tag + RAW_PING - TAG_PING)
        return deserialize(IOBuffer(p.rbuf))
    else
        return CDTypes.recv(p.w; tag = tag, timeout = WAIT_S)
    end
end

function client_plan(p::Peer, plan::Plan)
    obj = plan.method == "raw" ? nothing : make_object(plan.case, plan.size)
    back = nothing
    t0 = UInt64(0)
    for i in 1:(plan.warmup + plan.iters)
        i == plan.warmup + 1 && (t0 = time_ns())
        send_obj(p, plan.method, obj, plan.size, TAG_PING)
        back = recv_obj(p, plan.method, plan.size, TAG_PONG)
    end
    secs = (time_ns() - t0) / 1.0e9
    plan.method == "raw" ||
        isequal(back, obj) ||
        error("$(plan.case) $(plan.method) $(plan.size): the object came back different")
    return secs / plan.iters / 2
end

function server_plan(p::Peer, plan::Plan)
    for _ in 1:(plan.warmup + plan.iters)
        obj = recv_obj(p, plan.method, plan.size, TAG_PING)
        send_obj(p, plan.method, obj, plan.size, TAG_PONG)
    end
end

# --- the two processes ---------------------------------------------------------------------

function peer_buffers(quick)
    biggest = maximum(sizes(quick))
    # room for the serialization stream's own bytes (type tags, lengths) around the payload
    return ones(UInt8, biggest), zeros(UInt8, biggest + MiB)
end

function server(quick)
    w = CDTypes.Worker()
    println(stdout, bytes2hex(CDTypes.address(w)))
    flush(stdout)
    ep = CDTypes.connect_address(w, hex2bytes(readline(stdin)))
    p = Peer(w, ep, peer_buffers(quick)...)
    for plan in plans(quick)
        server_plan(p, plan)
    end
    close(ep; timeout = 5.0)
    close(w)
end

function client(quick, csv_path)
    isfile(SHIM) ||
        error(
            "CDTYPES_BENCH_SHIM does not name the shim library (bench/julia/run builds it)",
        )
    args = SMOKE ? ["--server", "--smoke"] : quick ? ["--server", "--quick"] : ["--server"]
    cmd = `$(Base.julia_cmd()) --project=$(Base.active_project()) $(@__FILE__) $args`
    cpu = get(ENV, "BENCH_SERVER_CPU", "")
    if !isempty(cpu) && Sys.which("taskset") !== nothing
        cmd = `taskset -c $cpu $cmd`
    end
    proc = open(cmd, "r+") # its stdout: its address; its stdin: ours
    w = CDTypes.Worker()
    server_addr = hex2bytes(readline(proc))
    println(proc, bytes2hex(CDTypes.address(w)))
    flush(proc)
    ep = CDTypes.connect_address(w, server_addr)
    p = Peer(w, ep, peer_buffers(quick)...)
    rows = String[]
    first_plan = true
    for plan in plans(quick)
        half = client_plan(p, plan)
        if first_plan
            # the lanes are final once a message went both ways
            println("# transports (client endpoint): ", CDTypes.transports(ep))
            println("# case method size_bytes latency_us bandwidth_MB/s iterations")
            first_plan = false
        end
        lat_us = half * 1.0e6
        mbs = plan.size / half / 1.0e6
        @printf(
            "%-12s %-10s %10d %12.2f %10.1f %6d\n",
            plan.case,
            plan.method,
            plan.size,
            lat_us,
            mbs,
            plan.iters,
        )
        flush(stdout)
        push!(
            rows,
            "$(plan.case),$(plan.method),$(plan.size),latency_us,$(round(lat_us; digits = 3)),us",
        )
        push!(
            rows,
            "$(plan.case),$(plan.method),$(plan.size),bandwidth_mbs,$(round(mbs; digits = 3)),MB/s",
        )
    end
    wait(proc)
    success(proc) || error("the server process failed")
    close(ep; timeout = 5.0)
    close(w)
    open(csv_path, "w") do io
        println(io, "case,method,size_bytes,metric,value,unit")
        foreach(r -> println(io, r), rows)
    end
    println("# wrote $csv_path")
end

function main(argv)
    quick = "--quick" in argv || SMOKE
    if "--server" in argv
        server(quick)
        return
    end
    i = findfirst(==("--csv"), argv)
    (i === nothing || i == length(argv)) &&
        error("usage: pingpong.jl [--quick|--smoke] --csv OUT.csv")
    client(quick, argv[i + 1])
end

main(ARGS)

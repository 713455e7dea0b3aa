# Objects over libcdt's UCX transport (libcdt/include/cdt_ucx.h): one object = one matched
# message; out-of-band arrays of at least the worker's zcopy threshold move zero-copy.
# Mirrors the Python API (python/cdtypes/ucx.py). Timeouts are in seconds (nothing: no bound).

const CDT_UCX_TAG_MAX = UInt64(0x7fffffffffffffff)
const CDT_UCX_TAG_MASK_FULL = CDT_UCX_TAG_MAX
const CDT_UCX_TAG_MASK_ANY = UInt64(0)
const CDT_UCX_INFINITE = Int64(-1)
const CDT_UCX_CONTEXT_PARAM_WAKEUP = UInt64(1) << 2
const CDT_UCX_WORKER_PARAM_SENDER_ID = UInt64(1) << 0
const CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD = UInt64(1) << 1
const CDT_UCX_WORKER_PARAM_BUFFER_CACHE = UInt64(1) << 2
const CDT_UCX_WORKER_PARAM_PROTOCOL = UInt64(1) << 3
# cdt_ucx_protocol
const _PROTOCOLS = Dict(
    :auto => Cint(0),
    :split => Cint(1),
    :single => Cint(2),
    :auto_single => Cint(3),
)
const CDT_UCX_LISTENER_PARAM_HOST = UInt64(1) << 0
const CDT_UCX_LISTENER_PARAM_PORT = UInt64(1) << 1
const CDT_UCX_RECV_PARAM_PREPARE = UInt64(1) << 0

_ms(::Nothing) = CDT_UCX_INFINITE
_ms(t::Real) = Int64(max(0, round(Int64, t * 1000)))

function _tag(tag::Integer)
    0 <= tag <= CDT_UCX_TAG_MAX || throw(ArgumentError("tags are 0 .. 2^63 - 1"))
    return UInt64(tag)
end

"The UCX library version libcdt uses."
ucx_version() = unsafe_string(ccall(cfn(:cdt_ucx_version_string), Cstring, ()))

function _need_ucx()
    has_ucx() || error("this libcdt was built without the UCX transport")
end

"""
    Worker(; sender_id=nothing, zcopy_threshold=nothing, buffer_cache_bytes=nothing,
           protocol=nothing, wakeup=nothing)

A UCX context and worker: the progress engine of its listeners and endpoints. `sender_id`
must differ among the workers that send to one receiver (default: random); arrays of at
least `zcopy_threshold` bytes (default 64 KiB) move as their own zero-copy message in split
mode. `protocol` is `:auto` (the default: one message per object over shared memory unless
large messages move by cross-memory attach and it has arrays of `zcopy_threshold` bytes or
more, split mode over TCP), `:split`, `:single`
or `:auto_single` (as `:auto`, but one message per object over shared memory whatever its
arrays: for receivers that reuse their receive memory) (docs/TRANSPORT.md).
`wakeup=true` lets waits sleep on the worker's event fd instead of spinning (`worker_fd`,
`arm` for an event loop; UCX then leaves out its shared-memory transports); default: the
environment variable `CDT_UCX_WAKEUP`, else off.
"""
mutable struct Worker
    ctx::Ptr{Cvoid}
    w::Ptr{Cvoid}
    children::Vector{Any}
end

function Worker(;
    sender_id = nothing,
    zcopy_threshold = nothing,
    buffer_cache_bytes = nothing,
    protocol = nothing,
    wakeup = nothing,
)
    _need_ucx()
    protocol === nothing ||
        haskey(_PROTOCOLS, protocol) ||
        throw(ArgumentError("protocol is :auto, :split, :single or :auto_single"))
    ctx = Ref{Ptr{Cvoid}}(C_NULL)
    cp = Ref(CdtUcxContextParams(
        wakeup === nothing ? UInt64(0) : CDT_UCX_CONTEXT_PARAM_WAKEUP,
        Csize_t(0),
        Cint(0),
        Cint(wakeup === true ? 1 : 0),
    ))
    check(
        ccall(
            cfn(:cdt_ucx_context_create),
            Cint,
            (Ref{CdtUcxContextParams}, Ref{Ptr{Cvoid}}),
            cp,
            ctx,
        ),
        "cdt_ucx_context_create",
    )
    mask = UInt64(0)
    sender_id === nothing || (mask |= CDT_UCX_WORKER_PARAM_SENDER_ID)
    zcopy_threshold === nothing || (mask |= CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD)
    buffer_cache_bytes === nothing || (mask |= CDT_UCX_WORKER_PARAM_BUFFER_CACHE)
    protocol === nothing || (mask |= CDT_UCX_WORKER_PARAM_PROTOCOL)
    p = Ref(CdtUcxWorkerParams(
        mask,
        UInt32(something(sender_id, 0)),
        Int64(something(zcopy_threshold, 0)),
        Csize_t(something(buffer_cache_bytes, 0)),
        protocol === nothing ? Cint(0) : _PROTOCOLS[protocol],
        Int64(0), # fifo_stall_timeout_ms: not in the mask, the library's default
        Cint(0),  # lane: not in the mask, the library's default (CDT_UCX_LANE)
    ))
    w = Ref{Ptr{Cvoid}}(C_NULL)
    rc = ccall(
        cfn(:cdt_ucx_worker_create),
        Cint,
        (Ptr{Cvoid}, Ref{CdtUcxWorkerParams}, Ref{Ptr{Cvoid}}),
        ctx[],
        p,
        w,
    )
    if rc < 0
        ccall(cfn(:cdt_ucx_context_destroy), Cvoid, (Ptr{Cvoid},), ctx[])
        check(rc, "cdt_ucx_worker_create")
    end
    cfn(
        :cdt_ucx_worker_destroy,
    ) # resolved now: the finalizer must not take the library lock
    worker = Worker(ctx[], w[], Any[])
    finalizer(close, worker)
    return worker
end

function _handle(w::Worker)
    w.w == C_NULL && throw(ArgumentError("operation on a closed Worker"))
    return w.w
end

"""
    close(worker)

Close the worker's endpoints and listeners (by force: close endpoints first for a clean
flush), destroy the worker and its context.
"""
function Base.close(w::Worker)
    h, ctx = w.w, w.ctx
    w.w = C_NULL
    w.ctx = C_NULL
    for c in w.children
        _forget!(c)
    end
    empty!(w.children)
    h == C_NULL || ccall(cfn(:cdt_ucx_worker_destroy), Cvoid, (Ptr{Cvoid},), h)
    ctx == C_NULL || ccall(cfn(:cdt_ucx_context_destroy), Cvoid, (Ptr{Cvoid},), ctx)
    return nothing
end

Base.isopen(w::Worker) = w.w != C_NULL

"This worker's sender id (given or drawn at random)."
sender_id(w::Worker) = Int(ccall(
    cfn(:cdt_ucx_worker_sender_id),
    UInt32,
    (Ptr{Cvoid},),
    _handle(w),
))

"Run completions once; returns the number of UCX events."
progress(w::Worker) = Int(ccall(
    cfn(:cdt_ucx_worker_progress),
    Cint,
    (Ptr{Cvoid},),
    _handle(w),
))

"""
    worker_fd(worker) -> RawFD

The worker's event fd (a worker made with `wakeup=true`): readable when there is something
to progress, e.g. `FileWatching.poll_fd(worker_fd(w); readable=true)`. Wait on it only after
`arm(worker)` returned true. It also becomes readable at every request's completion (from any
thread, a cancel included) and when a receive's deadline is due, so waiting on it without a
timeout misses nothing (`cdt_ucx_worker_fd`).
"""
function worker_fd(w::Worker)
    fd = Ref{Cint}(-1)
    check(
        ccall(cfn(:cdt_ucx_worker_fd), Cint, (Ptr{Cvoid}, Ref{Cint}), _handle(w), fd),
        "cdt_ucx_worker_fd",
    )
    return RawFD(fd[])
end

"""
    arm(worker) -> Bool

Before waiting on `worker_fd`: true when nothing is pending (wait now), false when events are
pending (progress, then arm again).
"""
function arm(w::Worker)
    rc = ccall(cfn(:cdt_ucx_worker_arm), Cint, (Ptr{Cvoid},), _handle(w))
    rc == CDT_ERR_BUSY && return false
    check(rc, "cdt_ucx_worker_arm")
    return true
end

"This worker's address, for `connect_address` in the peer."
function address(w::Worker)
    a = Ref{Ptr{Cvoid}}(C_NULL)
    n = Ref{Csize_t}(0)
    h = _handle(w)
    check(
        ccall(
            cfn(:cdt_ucx_worker_address),
            Cint,
            (Ptr{Cvoid}, Ref{Ptr{Cvoid}}, Ref{Csize_t}),
            h,
            a,
            n,
        ),
        "cdt_ucx_worker_address",
    )
    try
        return copy(unsafe_wrap(Array, Ptr{UInt8}(a[]), Int(n[])))
    finally
        ccall(cfn(:cdt_ucx_worker_address_free), Cvoid, (Ptr{Cvoid}, Ptr{Cvoid}), h, a[])
    end
end

"A listener on host:port; its accepted endpoints share the worker."
mutable struct Listener
    worker::Worker
    h::Ptr{Cvoid}
    own::Bool
end

"A connection to one peer worker."
mutable struct Endpoint
    worker::Worker
    h::Ptr{Cvoid}
    own::Bool
end

_forget!(l::Listener) = (l.h = C_NULL; nothing)
_forget!(e::Endpoint) = (e.h = C_NULL; nothing)

function _adopt!(w::Worker, c)
    push!(w.children, c)
    return c
end

"""
    listen(worker; host=nothing, port=0) -> Listener

Listen on host:port (default: all interfaces, any free port: see `port(listener)`).
"""
function listen(
    w::Worker;
    host::Union{Nothing, AbstractString} = nothing,
    port::Integer = 0,
)
    hs = host === nothing ? "" : String(host)
    mask = CDT_UCX_LISTENER_PARAM_PORT |
        (host === nothing ? UInt64(0) : CDT_UCX_LISTENER_PARAM_HOST)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve hs begin
        p = Ref(CdtUcxListenerParams(
            mask,
            host === nothing ? Ptr{UInt8}(C_NULL) : pointer(hs),
            UInt16(port),
        ))
        check(
            ccall(
                cfn(:cdt_ucx_listener_create),
                Cint,
                (Ptr{Cvoid}, Ref{CdtUcxListenerParams}, Ref{Ptr{Cvoid}}),
                _handle(w),
                p,
                out,
            ),
            "listen on $(host === nothing ? "*" : host):$port",
        )
    end
    return _adopt!(w, Listener(w, out[], false))
end

"""
    CDTypes.listen(; host=nothing, port=0, worker options...) -> Listener

A listener on its own worker (closed with the listener; close accepted endpoints first).
"""
function listen(; host::Union{Nothing, AbstractString} = nothing, port::Integer = 0, kw...)
    w = Worker(; kw...)
    try
        l = listen(w; host = host, port = port)
        l.own = true
        return l
    catch
        close(w)
        rethrow()
    end
end

function _handle(l::Listener)
    l.h == C_NULL && throw(ArgumentError("operation on a closed Listener"))
    return l.h
end

"The port the listener is bound to."
function port(l::Listener)
    p = Ref{UInt16}(0)
    check(
        ccall(cfn(:cdt_ucx_listener_port), Cint, (Ptr{Cvoid}, Ref{UInt16}), _handle(l), p),
        "cdt_ucx_listener_port",
    )
    return Int(p[])
end

"""
    accept(listener; timeout=nothing) -> Endpoint

Wait for a connection (at most `timeout` seconds: `CDTypesError` CDT_ERR_TIMEOUT after).
"""
function accept(l::Listener; timeout::Union{Nothing, Real} = nothing)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(
        ccall(
            cfn(:cdt_ucx_listener_accept),
            Cint,
            (Ptr{Cvoid}, Int64, Ref{Ptr{Cvoid}}),
            _handle(l),
            _ms(timeout),
            out,
        ),
        "accept",
    )
    return _adopt!(l.worker, Endpoint(l.worker, out[], false))
end

function Base.close(l::Listener)
    h = l.h
    l.h = C_NULL
    h == C_NULL || ccall(cfn(:cdt_ucx_listener_destroy), Cvoid, (Ptr{Cvoid},), h)
    filter!(c -> c !== l, l.worker.children)
    l.own && close(l.worker)
    return nothing
end

"""
    connect(worker, host, port; timeout=nothing) -> Endpoint

An endpoint connected to the listener at host:port.
"""
function connect(
    w::Worker,
    host::AbstractString,
    port::Integer;
    timeout::Union{Nothing, Real} = nothing,
)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(
        ccall(
            cfn(:cdt_ucx_ep_connect),
            Cint,
            (Ptr{Cvoid}, Cstring, UInt16, Int64, Ref{Ptr{Cvoid}}),
            _handle(w),
            host,
            UInt16(port),
            _ms(timeout),
            out,
        ),
        "connect to $host:$port",
    )
    return _adopt!(w, Endpoint(w, out[], false))
end

"""
    CDTypes.connect(host, port; timeout=nothing, worker options...) -> Endpoint

An endpoint on its own worker (closed with the endpoint).
"""
function connect(
    host::AbstractString,
    port::Integer;
    timeout::Union{Nothing, Real} = nothing,
    kw...,
)
    w = Worker(; kw...)
    try
        ep = connect(w, host, port; timeout = timeout)
        ep.own = true
        return ep
    catch
        close(w)
        rethrow()
    end
end

"An endpoint to the worker whose `address` was exchanged out of band."
function connect_address(w::Worker, addr::Vector{UInt8})
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(
        ccall(
            cfn(:cdt_ucx_ep_create_from_address),
            Cint,
            (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, Ref{Ptr{Cvoid}}),
            _handle(w),
            addr,
            length(addr),
            out,
        ),
        "cdt_ucx_ep_create_from_address",
    )
    return _adopt!(w, Endpoint(w, out[], false))
end

function _handle(e::Endpoint)
    e.h == C_NULL && throw(ArgumentError("operation on a closed Endpoint"))
    return e.h
end

"""
    transports(ep) -> String

The UCX transports the endpoint's lanes use now (`cdt_ucx_ep_transports`), e.g.
`"am=tcp/lo rma=cma/memory"` between two processes of one machine (libcdt's default: messages
over loopback TCP, large ones by cross-memory attach), `"am=tcp/eth0"` to another machine,
`"am=sysv/memory rma=tcp/lo"` over shared segments (`CDT_UCX_SHARED_MEMORY=copy`) or
`"am=sysv/memory rma=cma/memory"` with cross-memory attach (`full`), each followed by libcdt's
lane (on by default between local processes): `" lane=memfd"` (`" lane=memfd+heads"` once its
small objects go through the lane's head ring too, the default) or `" lane=none/<why>"`. An
endpoint made from an address may still be wiring up:
send one message first for the final lanes.
"""
function transports(e::Endpoint)
    buf = zeros(UInt8, 1024)
    check(
        ccall(
            cfn(:cdt_ucx_ep_transports),
            Cint,
            (Ptr{Cvoid}, Ptr{UInt8}, Csize_t),
            _handle(e),
            buf,
            length(buf),
        ),
        "cdt_ucx_ep_transports",
    )
    n = something(findfirst(==(0x00), buf), length(buf) + 1) - 1
    return String(buf[1:n])
end

"True while the endpoint is usable (false after its peer failed)."
isok(e::Endpoint) = e.h != C_NULL &&
    ccall(cfn(:cdt_ucx_ep_status), Cint, (Ptr{Cvoid},), e.h) == CDT_SUCCESS

"""
    close(ep; timeout=1.0) -> Bool

Flush what was sent (at most `timeout` seconds) and close; true for a clean close. Closes the
endpoint's own worker when it came from `CDTypes.connect(host, port)`.
"""
function Base.close(e::Endpoint; timeout::Union{Nothing, Real} = 1.0)
    h = e.h
    e.h = C_NULL
    clean = true
    if h != C_NULL
        clean = ccall(cfn(:cdt_ucx_ep_close), Cint, (Ptr{Cvoid}, Int64), h, _ms(timeout)) ==
            0
        filter!(c -> c !== e, e.worker.children)
    end
    e.own && close(e.worker)
    return clean
end

"""
    send(ep, obj; tag=0, timeout=nothing, threshold=CDTypes.DEFAULT_THRESHOLD)

Send `obj` as one message (blocking until sent; `CDTypesError` CDT_ERR_TIMEOUT after
`timeout` seconds, after which the endpoint should be closed).
"""
function send(
    e::Endpoint,
    obj;
    tag::Integer = 0,
    timeout::Union{Nothing, Real} = nothing,
    threshold::Integer = DEFAULT_THRESHOLD,
)
    inband, arrays = serialize_parts(obj; threshold = threshold)
    so, bufs = _outgoing(inband, arrays)
    rc = GC.@preserve inband arrays bufs so begin
        ccall(
            cfn(:cdt_ucx_send),
            Cint,
            (Ptr{Cvoid}, Ptr{Cvoid}, Int64, Ptr{Cvoid}, UInt64, Int64),
            _handle(e),
            so,
            1,
            _sobj_type(),
            _tag(tag),
            _ms(timeout),
        )
    end
    check(rc, "send")
    return nothing
end

# cdt_ucx_recv_prepare_func_t: the header was validated; size the object and bind
function _prepare_cb(arg::Ptr{Cvoid}, decoder::Ptr{Cvoid})::Cint
    st = unsafe_pointer_to_objref(arg)::_RecvState
    try
        return _prepare_bind(st, decoder)
    catch e
        st.exc = e
        return CDT_ERR_JULIA_EXCEPTION
    end
end

_prepare_cfunc() = @cfunction(_prepare_cb, Cint, (Ptr{Cvoid}, Ptr{Cvoid}))

"""
    recv(ep_or_worker; tag=nothing, tag_mask=nothing, timeout=nothing) -> obj

Receive one object (tag `nothing`: any tag). Receives match on the worker: `recv(ep)` takes
the next matching message from any peer of the endpoint's worker. Out-of-band arrays are
received straight into memory allocated from the frame header and become the arrays of the
object (no copy). After `timeout` seconds: `CDTypesError` CDT_ERR_TIMEOUT (the receive is
canceled when it had not matched yet).
"""
recv(e::Endpoint; kw...) = recv(e.worker; kw...)

function recv(
    w::Worker;
    tag::Union{Nothing, Integer} = nothing,
    tag_mask::Union{Nothing, Integer} = nothing,
    timeout::Union{Nothing, Real} = nothing,
)
    t, mask = tag === nothing ?
        (UInt64(0), CDT_UCX_TAG_MASK_ANY) :
        (_tag(tag), tag_mask === nothing ? CDT_UCX_TAG_MASK_FULL : UInt64(tag_mask))
    st = _RecvState(:malloc)
    info = Ref(CdtUcxRecvInfo())
    rc = Cint(0)
    GC.@preserve st begin
        params = Ref(CdtUcxRecvParams(
            CDT_UCX_RECV_PARAM_PREPARE,
            _prepare_cfunc(),
            pointer_from_objref(st),
            0,
            0,
            0,
        ))
        try
            rc = ccall(
                cfn(:cdt_ucx_recv),
                Cint,
                (
                    Ptr{Cvoid},
                    Ptr{Cvoid},
                    Int64,
                    Ptr{Cvoid},
                    UInt64,
                    UInt64,
                    Ref{CdtUcxRecvParams},
                    Ref{CdtUcxRecvInfo},
                    Int64,
                ),
                _handle(w),
                C_NULL,
                0,
                C_NULL,
                t,
                mask,
                params,
                info,
                _ms(timeout),
            )
        finally
            _release!(st)
        end
    end
    if rc < 0
        _free_ptrs!(st)
        _raise(st, rc, "recv")
    end
    return _build_received(st)
end

# after a receive into malloc'd memory: arrays over that memory (Julia frees it), then the body
function _build_received(st::_RecvState)
    arrays = Any[]
    try
        io = IOBuffer(st.inband)
        _is_julia_stream(st.inband) ||
            throw(ArgumentError(
                "not a CDTypes.jl message: its packed stream is not a Julia serialization stream",
            ))
        toc = read_toc(io)
        length(toc) == length(st.ptrs) ||
            throw(CDTypesError(
                CDT_ERR_FRAME_MISMATCH,
                "the stream lists $(length(toc)) arrays, the message has $(length(st.ptrs)) regions",
            ))
        for (i, (T, dims)) in enumerate(toc)
            nbytes = Base.checked_mul(reduce(Base.checked_mul, dims; init = 1), sizeof(T))
            nbytes == st.lens[i] ||
                throw(CDTypesError(
                    CDT_ERR_FRAME_MISMATCH,
                    "array $i is $nbytes bytes, region $(i - 1) is $(st.lens[i])",
                ))
        end
        for (i, (T, dims)) in enumerate(toc)
            p = st.ptrs[i]
            if p == C_NULL
                push!(arrays, Array{T}(undef, dims))
            else
                push!(arrays, unsafe_wrap(Array, Ptr{T}(p), dims; own = true))
                st.ptrs[i] = C_NULL # the array owns it now
            end
        end
        return deserialize_body(io, arrays)
    finally
        _free_ptrs!(st)
    end
end

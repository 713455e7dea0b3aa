"""Python objects over libcdt's UCX transport (libcdt/include/cdt_ucx.h): one object = one
matched message; out-of-band buffers of at least the worker's zcopy threshold move zero-copy on
both ends (the receiver allocates them from the frame header before they arrive)::

    from cdtypes import ucx
    with ucx.listen(port=13337) as listener:         # process A
        with listener.accept() as ep:
            obj = ep.recv(tag=1)
            ep.send(obj, tag=2)

    with ucx.connect("host", 13337) as ep:            # process B
        ep.send({"x": numpy.arange(10**6)}, tag=1)
        back = ep.recv(tag=2)

Timeouts are in seconds (None: wait without bound). Errors are cdtypes.CdtError subclasses:
CdtTimeoutError, PeerError (the peer went away), TransportError, FrameError...
Receives are matched on the worker: ep.recv() takes the next matching message from any peer of
the same worker (give each peer its own tags, or its own worker, to keep them apart).

SECURITY: a receive rebuilds the object with pickle, which runs code the sender chose. Receive
from peers you do not trust with allowed=True (an allow-list of classes) and max_bytes= /
max_regions= (checked before the buffers are allocated); see docs/SECURITY.md.
"""

import ctypes
import os

from . import _backend, _core, _lib
from ._backend import impl as _b
from ._lib import check

CDT_ERR_PY_EXCEPTION = _b.ERR_PY_EXCEPTION

# The transport library, and with it UCX, is loaded here: `import cdtypes` and cdtypes.mpi load
# the core only (ImportError when libcdt was built without the transport).
lib = _backend.load_ucx()

__all__ = ["Worker", "Listener", "Endpoint", "Request", "listen", "connect", "version"]

_INPROGRESS = 1
_ERR_CANCELED = -22
_ERR_TIMEOUT = -23
_ERR_BUSY = -24
_TAG_ANY = 0
_TAG_FULL = _lib.CDT_UCX_TAG_MAX


def version():
    """The UCX library version in use."""
    return lib.cdt_ucx_version_string().decode()


def _lanes(handle):
    """The transports an endpoint's lanes use ("am=tcp/lo rma=cma/memory lane=memfd+heads"), for
    messages."""
    if handle is None:
        return "none (no connection)"
    buf = ctypes.create_string_buffer(512)
    if lib.cdt_ucx_ep_transports(handle, buf, len(buf)) != 0:
        return "unknown"
    return buf.value.decode() or "none yet (not wired up)"


def _last_error():
    """What the transport said about this thread's last failed connect, accept or send."""
    buf = ctypes.create_string_buffer(512)
    lib.cdt_ucx_last_error(buf, len(buf))
    return buf.value.decode(errors="replace")


def _where(what, peer, handle=None, seen=None):
    """What failed, with whom, over which lanes and with which UCX: enough to tell a dead peer
    from a configuration problem (two UCX versions that do not talk, no common transport).
    `seen`: the lanes the endpoint had when a send last went through (a failed endpoint's
    lanes are UCX's placeholders)."""
    lanes = _lanes(handle)
    if seen and ("=" not in lanes):
        lanes = seen
    elif seen and seen != lanes:
        lanes = "%s (were %s)" % (lanes, seen)
    text = "%s %s (UCX %s; lanes: %s)" % (what, peer, version(), lanes)
    if handle is None:  # no connection came up: also what two UCX release lines get
        text += " [a peer on another UCX release line cannot connect: docs/TRANSPORT.md §1]"
    return text


def _ms(timeout):
    if timeout is None:
        return _lib.CDT_UCX_INFINITE
    return max(0, int(timeout * 1000))


def _tag(tag):
    if not 0 <= tag <= _lib.CDT_UCX_TAG_MAX:
        raise ValueError("tags are 0 .. 2**63 - 1")
    return tag


class Worker:
    """A UCX context and worker (the progress engine of its listeners and endpoints).

    sender_id: reported by sender_id (e.g. the rank; default random); messages are not keyed by it,
    so equal ids are harmless (docs/TRANSPORT.md);
    zcopy_threshold: buffers of at least this many bytes move zero-copy in split mode (default
    64 KiB);
    protocol: "auto-single" (the default: one message per object over shared memory, split mode
    over TCP), "auto" (as auto-single, except that objects with buffers of zcopy_threshold
    bytes or more go split where large messages move by cross-memory attach,
    CDT_UCX_SHARED_MEMORY=full: for receivers that allocate fresh memory for every object),
    "split" or "single" (docs/TRANSPORT.md; Endpoint.protocol says which an
    endpoint uses). The environment variable CDT_UCX_PROTOCOL, when set, is the default
    instead. cdtypes receivers reuse their receive memory (the receive cache), where one
    message per object is the fastest: 512 buffers of 128 KiB, alternating runs, 1.2-1.9x as
    fast as "auto" at 64 MiB and 1.2-1.6x at 4 MiB.
    wakeup: True to let waits sleep instead of spinning: blocking calls sleep on the worker's
    event fd after a short spin, and fileno()/arm() and Request.wait_async() serve an event
    loop (asyncio). UCX then leaves out transports that cannot wake a sleeper (UCX 1.13: its
    shared-memory transports). Default: the environment variable CDT_UCX_WAKEUP, else off
    (spinning: the lowest latency, one core per waiting thread)."""

    def __init__(self, sender_id=None, zcopy_threshold=None, protocol=None, wakeup=None):
        self._ctx = self._w = None
        self._children = []
        if protocol is None and not os.environ.get("CDT_UCX_PROTOCOL"):
            protocol = "auto-single"
        if protocol is not None and protocol not in _lib.CDT_UCX_PROTOCOLS:
            raise ValueError("protocol is 'auto-single', 'auto', 'split' or 'single'")
        ctx = ctypes.c_void_p()
        cp = None
        if wakeup is not None:
            cp = _lib.cdt_ucx_context_params(field_mask=_lib.CDT_UCX_CONTEXT_PARAM_WAKEUP,
                                             wakeup=1 if wakeup else 0)
            cp = ctypes.byref(cp)
        check(lib.cdt_ucx_context_create(cp, ctypes.byref(ctx)), "cdt_ucx_context_create")
        self._ctx = ctx.value
        p = _lib.cdt_ucx_worker_params()
        if sender_id is not None:
            p.field_mask |= _lib.CDT_UCX_WORKER_PARAM_SENDER_ID
            p.sender_id = sender_id
        if zcopy_threshold is not None:
            p.field_mask |= _lib.CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD
            p.zcopy_threshold = zcopy_threshold
        if protocol is not None:
            p.field_mask |= _lib.CDT_UCX_WORKER_PARAM_PROTOCOL
            p.protocol = _lib.CDT_UCX_PROTOCOLS[protocol]
        w = ctypes.c_void_p()
        try:
            check(lib.cdt_ucx_worker_create(self._ctx, ctypes.byref(p), ctypes.byref(w)),
                  "cdt_ucx_worker_create")
        except BaseException:
            lib.cdt_ucx_context_destroy(self._ctx)
            self._ctx = None
            raise
        self._w = w.value

    def _handle(self):
        if self._w is None:
            raise ValueError("operation on a closed Worker")
        return self._w

    @property
    def sender_id(self):
        """The id this worker's messages carry (the sender_id given, else a random one)."""
        return lib.cdt_ucx_worker_sender_id(self._handle())

    def stats(self):
        """The worker's counters (cdt_ucx_worker_stats_get) as a dict: lane_sent and
        lane_received, the objects whose stream this worker packed into / unpacked from an
        endpoint's lane whole (docs/TRANSPORT.md §10: they say whether objects go through it);
        lane_split_sent and lane_split_received, those of them whose large regions both
        processes copied (docs/TRANSPORT.md §10.3, Regions moved by both cores); quarantined, quarantine_released and quarantine_dropped, the head buffers of sends
        over cross-memory attach kept while a peer may still read them."""
        s = _lib.cdt_ucx_worker_stats(field_mask=_lib.CDT_UCX_WORKER_STATS_ALL)
        check(lib.cdt_ucx_worker_stats_get(self._handle(), ctypes.byref(s)),
              "cdt_ucx_worker_stats_get")
        return {name: int(getattr(s, name)) for name, _ in s._fields_ if name != "field_mask"}

    def progress(self):
        """Run completions once; returns the number of UCX events."""
        return lib.cdt_ucx_worker_progress(self._handle())

    def fileno(self):
        """The worker's event fd (for select/poll/asyncio add_reader): readable when there is
        something to progress. Needs a worker made with wakeup=True (else UnsupportedError).
        Only wait on it after arm() returned True. The fd also becomes readable at every
        request's completion (from any thread, a cancel included) and when a receive's deadline
        is due, so waiting on it without a timeout misses nothing (cdt_ucx_worker_fd)."""
        fd = ctypes.c_int()
        check(lib.cdt_ucx_worker_fd(self._handle(), ctypes.byref(fd)), "cdt_ucx_worker_fd")
        return fd.value

    def arm(self):
        """Before waiting on fileno(): True when nothing is pending (wait now), False when
        events are pending (progress, then arm again)."""
        rc = lib.cdt_ucx_worker_arm(self._handle())
        if rc == _ERR_BUSY:
            return False
        check(rc, "cdt_ucx_worker_arm")
        return True

    def address(self):
        """This worker's address (bytes), for Worker.connect_address() in the peer."""
        a, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib.cdt_ucx_worker_address(self._handle(), ctypes.byref(a), ctypes.byref(n)))
        try:
            return ctypes.string_at(a.value, n.value)
        finally:
            lib.cdt_ucx_worker_address_free(self._w, a)

    def listen(self, host=None, port=0):
        """A Listener on host:port (default all interfaces, any free port: see .port)."""
        return Listener(self, host, port)

    def connect(self, host, port, timeout=None):
        """An Endpoint connected to the listener at host:port."""
        ep = ctypes.c_void_p()
        peer = "%s:%d" % (host, port)
        check(lib.cdt_ucx_ep_connect(self._handle(), host.encode(), port, _ms(timeout),
                                     ctypes.byref(ep)), _where("connect to", peer))
        return self._adopt(Endpoint(self, ep.value, peer=peer))

    def connect_address(self, address):
        """An Endpoint to the worker whose address() was exchanged out of band."""
        ep = ctypes.c_void_p()
        check(lib.cdt_ucx_ep_create_from_address(self._handle(), address, len(address),
                                                 ctypes.byref(ep)),
              _where("connect to", "a worker by its address"))
        return self._adopt(Endpoint(self, ep.value, peer="a worker by its address"))

    def _adopt(self, child):
        self._children.append(child)
        return child

    def irecv(self, tag=None, tag_mask=None, alloc=None, *, max_bytes=None, max_regions=None,
              allowed=None):
        """Post a receive of one object (tag None: any tag); returns a Request whose wait()
        returns the object. alloc(nbytes) -> writable buffer as in cdtypes.loads.

        WARNING: without ``allowed`` the object is rebuilt by pickle, which runs code the
        sender chose: receive only from peers you trust. ``max_bytes`` / ``max_regions`` refuse
        (LimitError) a frame over those limits from its header, before any memory is allocated
        for its buffers; ``allowed`` (True, or a cdtypes.Restricted) unpickles with an
        allow-list of globals (ForbiddenError otherwise), as in cdtypes.loads."""
        return _RecvRequest(self, tag, tag_mask, alloc, max_bytes, max_regions, allowed)

    def recv(self, tag=None, tag_mask=None, timeout=None, alloc=None, *, max_bytes=None,
             max_regions=None, allowed=None):
        """Receive one object from any peer of this worker (see irecv for the limits and
        ``allowed``; without ``allowed`` only receive from peers you trust)."""
        req = self.irecv(tag, tag_mask, alloc, max_bytes=max_bytes, max_regions=max_regions,
                         allowed=allowed)
        return req.wait(timeout, cancel_on_timeout=True)

    def close(self):
        """Close listeners and endpoints (forcefully), then the worker and its context."""
        for c in reversed(self._children):
            c._forget()
        self._children = []
        w, self._w = self._w, None
        if w is not None:
            lib.cdt_ucx_worker_destroy(w)
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            lib.cdt_ucx_context_destroy(ctx)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Listener:
    """Accepts connections; each accept() gives an Endpoint on the listener's worker."""

    def __init__(self, worker, host=None, port=0, _own_worker=False):
        self.worker = worker
        self._own = _own_worker
        p = _lib.cdt_ucx_listener_params()
        if host is not None:
            p.field_mask |= _lib.CDT_UCX_LISTENER_PARAM_HOST
            p.host = host.encode()
        p.field_mask |= _lib.CDT_UCX_LISTENER_PARAM_PORT
        p.port = port
        h = ctypes.c_void_p()
        check(lib.cdt_ucx_listener_create(worker._handle(), ctypes.byref(p), ctypes.byref(h)),
              "listen on %s:%d" % (host or "0.0.0.0", port))
        self._l = h.value
        worker._adopt(self)

    def _handle(self):
        if self._l is None:
            raise ValueError("operation on a closed Listener")
        return self._l

    @property
    def port(self):
        """The port the listener listens on (the one chosen when port 0 was asked for)."""
        port = ctypes.c_uint16()
        check(lib.cdt_ucx_listener_port(self._handle(), ctypes.byref(port)))
        return port.value

    def accept(self, timeout=None):
        """Wait for a connection and return its Endpoint."""
        ep = ctypes.c_void_p()
        where = "on port %d" % self.port if self._l is not None else "on a closed listener"
        rc = lib.cdt_ucx_listener_accept(self._handle(), _ms(timeout), ctypes.byref(ep))
        if rc != 0:
            # a peer on another UCX release line is refused with both versions named
            detail = _last_error()
            check(rc, detail if "refused: the peer runs UCX" in detail else _where("accept", where))
        peer = "a peer accepted %s" % where
        return self.worker._adopt(Endpoint(self.worker, ep.value, peer=peer))

    def _forget(self):
        self._l = None

    def close(self):
        """Stop listening (and close the worker when listen() made one for it)."""
        h, self._l = self._l, None
        if self._own:
            # the worker's destroy destroys the listener last, after its own waits: a
            # connection request that comes after the listener was destroyed crashes UCX's
            # async thread (docs/TRANSPORT.md §8, Listeners)
            self.worker.close()
        elif h is not None and self.worker._w is not None:
            lib.cdt_ucx_listener_destroy(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Endpoint:
    """A connection to one peer: send(obj, tag), recv(tag) -> obj, and their non-blocking
    variants isend/irecv returning a Request."""

    def __init__(self, worker, handle, _own_worker=False, peer="a peer"):
        self.worker = worker
        self._ep = handle
        self._own = _own_worker
        self._peer = peer
        self._lanes_seen = None  # after the first send that went through (for messages)

    def _handle(self):
        if self._ep is None:
            raise ValueError("operation on a closed Endpoint")
        return self._ep

    def isend(self, obj, tag=0):
        """Start sending ``obj``; returns a Request (do not modify the object's arrays before
        it completes)."""
        return _SendRequest(self, obj, _tag(tag))

    def send(self, obj, tag=0, timeout=None):
        """Send ``obj`` as one message and wait until it is sent."""
        self.isend(obj, tag).wait(timeout)

    def irecv(self, tag=None, tag_mask=None, alloc=None, **untrusted):
        """Worker.irecv (max_bytes=, max_regions=, allowed= for untrusted peers)."""
        return self.worker.irecv(tag, tag_mask, alloc, **untrusted)

    def recv(self, tag=None, tag_mask=None, timeout=None, alloc=None, **untrusted):
        """Receive one object (matched on this endpoint's worker). WARNING: pickle runs code
        the sender chose; pass allowed= (and max_bytes=, max_regions=) for peers you do not
        trust (see Worker.irecv)."""
        return self.worker.recv(tag, tag_mask, timeout, alloc, **untrusted)

    @property
    def ok(self):
        """False once the peer failed or went away."""
        return self._ep is not None and lib.cdt_ucx_ep_status(self._ep) == 0

    @property
    def protocol(self):
        """How objects sent on this endpoint travel: "single" (one message per object) or
        "split" (head, then large buffers as their own messages); docs/TRANSPORT.md."""
        v = ctypes.c_int()
        check(lib.cdt_ucx_ep_protocol(self._handle(), ctypes.byref(v)), "cdt_ucx_ep_protocol")
        return {1: "split", 2: "single"}[v.value]

    def _forget(self):
        self._ep = None

    def close(self, timeout=1.0):
        """Flush what was sent (at most ``timeout`` seconds) and close. Returns True for a
        clean close, False when it was forced (timeout, or the peer was gone); never raises,
        so that it is safe in __exit__."""
        h, self._ep = self._ep, None
        rc = 0
        try:
            if h is not None and self.worker._w is not None:
                rc = lib.cdt_ucx_ep_close(h, _ms(timeout))
        finally:
            if self._own:
                self.worker.close()
        return rc == 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Request:
    """A send or receive in flight: test() -> bool, wait(timeout) -> result, cancel()."""

    _r = None  # the backend's request until it completed

    def _complete(self, status, r):
        raise NotImplementedError

    def test(self):
        """Progress once; True when complete (wait() then returns at once)."""
        r = self._r
        if r is None:
            return True
        rc = r.test()
        if rc == _INPROGRESS:
            return False
        self._finish(rc)
        return True

    def wait(self, timeout=None, cancel_on_timeout=False):
        """Wait for completion and return the result (the object for receives). On timeout
        CdtTimeoutError is raised and the request stays pending (wait again, or cancel), or,
        with cancel_on_timeout, a receive that has not matched is canceled first."""
        r = self._r
        if r is not None:
            rc = r.wait(-1 if timeout is None else _ms(timeout))
            if rc == _ERR_TIMEOUT:
                if not cancel_on_timeout:
                    check(rc, "wait")
                r.cancel()
                rc = r.wait(-1)
                if rc == _ERR_CANCELED:
                    rc = _ERR_TIMEOUT
            self._finish(rc)
        if self._error is not None:
            raise self._error
        return self._result

    async def wait_async(self, timeout=None):
        """wait() for asyncio: the event loop runs while the request is pending. The worker
        must have been made with wakeup=True: the coroutine sleeps on its fd (add_reader)
        and wakes at least every 100 ms to run the worker's timers."""
        import asyncio

        loop = asyncio.get_running_loop()
        w = self._worker
        fd = w.fileno()
        deadline = None if timeout is None else loop.time() + timeout
        while not self.test():
            while w.progress() > 0:
                pass
            if self.test():
                break
            if deadline is not None and loop.time() >= deadline:
                raise _lib.error(_ERR_TIMEOUT, "wait_async")
            if not w.arm():
                await asyncio.sleep(0)  # events pending: progress again, letting others run
                continue
            ready = loop.create_future()
            loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
            try:
                step = 0.1 if deadline is None else max(0.0, min(0.1, deadline - loop.time()))
                await asyncio.wait([ready], timeout=step)
            finally:
                loop.remove_reader(fd)
        return self.wait(0)

    def cancel(self):
        """Cancel a receive that has not matched yet (it then fails with CanceledError)."""
        if self._r is not None:
            rc = self._r.cancel()
            if rc not in (0, _ERR_BUSY):
                check(rc, "cdt_ucx_request_cancel")

    def _finish(self, rc):
        """The request completed with status rc: collect the result."""
        r, self._r = self._r, None
        try:
            self._result = self._complete(rc, r)
        except BaseException as e:
            self._error = e

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._r is not None:  # leaving the block: cancel a receive, finish a send
            if isinstance(self, _RecvRequest):
                self.cancel()
            try:
                self.wait()
            except _lib.CdtError:
                pass


class _SendRequest(Request):
    def __init__(self, ep, obj, tag):
        self._result = self._error = None
        try:
            self._r = _b.ucx_isend(ep._handle(), obj, tag)
        except (_lib.TransportError, _lib.CdtTimeoutError) as e:  # PeerError: the peer failed
            raise type(e)(e.code, _where("send to", ep._peer, ep._ep, ep._lanes_seen)) from None
        self._worker = ep.worker
        self._ep = ep

    def _complete(self, rc, r):
        ep = self._ep
        if rc < 0:
            check(rc, _where("send to", ep._peer, ep._ep, ep._lanes_seen))
        elif ep._lanes_seen is None and ep._ep is not None:
            ep._lanes_seen = _lanes(ep._ep)  # once: the lanes a failure will name


class _RecvRequest(Request):
    def __init__(self, worker, tag, tag_mask, alloc, max_bytes=None, max_regions=None,
                 allowed=None):
        self._result = self._error = None
        if max_bytes is None and max_regions is None and allowed is None:
            self._limits = self._policy = None
            codes = (-1, -1)
        else:
            self._limits = _core.Limits(max_bytes, max_regions)
            self._policy = _core._policy(allowed)
            codes = self._limits.codes()
        if tag is None:
            tag, mask = 0, _TAG_ANY
        else:
            mask = _TAG_FULL if tag_mask is None else tag_mask
        # the transport checks the limits on the head, before it sizes anything from it (the
        # prepare callback checks them again)
        self._r = _b.ucx_irecv(worker._handle(), _tag(tag), mask, alloc, *codes)
        self._worker = worker

    def _complete(self, rc, r):
        if rc == _lib.CDT_ERR_LIMIT:
            # refused by the transport from the head, or by the prepare callback
            seen = r.refused
            if seen is not None:
                info = _Seen(*seen)
                raise _lib.error(rc, self._limits.describe(info))
            raise _lib.error(rc, self._limits.describe_set())
        if rc == _ERR_TIMEOUT or (rc != 0 and rc != CDT_ERR_PY_EXCEPTION):
            check(rc, "recv")
        stream, buffers, self.tag = r.result()  # raises the allocator's failure
        if self._limits is None:
            return _core._unpickle(stream, buffers)
        return _core._unpickle(stream, buffers, self._policy, True)


class _Seen:
    __slots__ = ("frame_size", "region_count")

    def __init__(self, frame_size, region_count):
        self.frame_size, self.region_count = frame_size, region_count


def listen(host=None, port=0, **worker_args):
    """A Listener on its own Worker (closed with the listener). Endpoints it accepts share
    that worker: close them before the listener."""
    w = Worker(**worker_args)
    try:
        return Listener(w, host, port, _own_worker=True)
    except BaseException:
        w.close()
        raise


def connect(host, port, timeout=None, **worker_args):
    """An Endpoint connected to host:port on its own Worker (closed with the endpoint)."""
    w = Worker(**worker_args)
    try:
        ep = w.connect(host, port, timeout)
    except BaseException:
        w.close()
        raise
    ep._own = True
    return ep

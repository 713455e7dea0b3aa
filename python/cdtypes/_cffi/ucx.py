"""UCX requests: ucx_isend, ucx_irecv (as _ext/ucx.c)."""
import itertools
import weakref

from .._cffi_ext import ffi, lib
from . import module
from .module import _INPROGRESS, _NULL, ERR_PY_EXCEPTION, _int, _raise
from .receive import _Rx, _limit_arg, _prepare
from .send import _Out

# ---- UCX requests -----------------------------------------------------------------------------

_requests = weakref.WeakValueDictionary()  # prepare_arg -> receive request
# the prepare_arg of each receive; next() is atomic, where a read and an increment by two
# threads posting receives at once gave both the same key (one receive then found the other's
# request, or none: CanceledError)
_next_key = itertools.count(1)
_kept = []  # sends dropped while the transport still reads their buffers: kept for good


def _no_ucx():
    return ImportError("the UCX transport library is not loaded (import cdtypes.ucx, which "
                       "loads it)")


class UcxRequest:
    """A UCX send or receive in flight (the Python layer wraps it)."""

    __slots__ = ("_req", "_done", "_status", "_recv", "_out", "_rx", "_so", "_prepared", "_tag",
                 "_key", "__weakref__")

    def __init__(self, recv):
        self._req = None
        self._done, self._status, self._recv = False, 0, recv
        self._out = self._rx = self._so = None
        self._prepared, self._tag, self._key = False, 0, 0

    def _complete(self, rc):
        self._done, self._status = True, rc
        if self._recv:
            if rc == 0:
                info = ffi.new("cdt_ucx_recv_info *")
                info.field_mask = lib.CDT_UCX_RECV_INFO_ALL
                lib.cdt_ucx_request_recv_info(self._req, info)
                self._tag = info.tag
            if self._prepared:
                lib.cdt_sobj_release(self._so)
            self._prepared = False
            self._rx.unpin()
            _requests.pop(self._key, None)
        else:
            self._out.release()
        lib.cdt_ucx_request_free(self._req)
        self._req = None

    def test(self):
        """Progress once; CDT_INPROGRESS or the final status."""
        if not self._done:
            rc = lib.cdt_ucx_request_test(self._req)
            if rc == _INPROGRESS:
                return rc
            self._complete(rc)
        return self._status

    def wait(self, timeout_ms=-1):
        """wait(timeout_ms=-1): the final status, or CDT_ERR_TIMEOUT while pending."""
        timeout_ms = _limit_arg(timeout_ms, "timeout_ms")
        if not self._done:
            rc = lib.cdt_ucx_request_wait(self._req, timeout_ms)
            if rc == lib.CDT_ERR_TIMEOUT:
                return rc
            self._complete(rc)
        return self._status

    def cancel(self):
        """Cancel a receive; the status of the call."""
        if self._done:
            return 0
        return lib.cdt_ucx_request_cancel(self._req)

    def result(self):
        """A completed receive's (stream, buffers, tag); raises for a failed request."""
        if not self._done:
            raise RuntimeError("the request has not completed")
        if self._status != 0:
            if not self._recv:
                _raise(self._status, "send")
            self._rx.stream = self._rx.buffers = None
            self._rx.fail(self._status, "recv")
        if not self._recv:
            return None
        stream, bufs = self._rx.result()
        return stream, bufs, self._tag

    @property
    def refused(self):
        """(frame_size, region_count) a receive limit refused."""
        return self._rx.seen if self._rx is not None else None

    def __del__(self):
        if self._done or self._req is None:
            return
        if self._recv:  # the transport may still write: cancel and wait for the end
            lib.cdt_ucx_request_cancel(self._req)
            self._complete(lib.cdt_ucx_request_wait(self._req, lib.CDT_UCX_INFINITE))
        else:  # a send still reads its buffers: keep them (and the request) for good
            _kept.append((self._req, self._out))


@ffi.def_extern()
def cdtpy_prepare_hook(arg, decoder):
    r = _requests.get(int(ffi.cast("uintptr_t", arg)))
    if r is None:
        return lib.CDT_ERR_CANCELED  # dropped while the transport matched it
    rx = r._rx
    try:
        if rx.max_bytes >= 0 or rx.max_regions >= 0:  # before anything is allocated
            info = ffi.new("cdt_frame_info *")
            info.field_mask = lib.CDT_FRAME_INFO_ALL
            rc = lib.cdt_decoder_info(decoder, info)
            if rc != 0:
                return rc
            if ((rx.max_bytes >= 0 and info.frame_size > rx.max_bytes)
                    or (rx.max_regions >= 0 and info.region_count > rx.max_regions)):
                rx.seen = (info.frame_size, info.region_count)
                return lib.CDT_ERR_LIMIT
        rx.decoder = decoder
        r._so = ffi.new("cdt_sobj *")
        rc = _prepare(rx, r._so)
        r._prepared = rc == 0
        rx.decoder = None
        return rc
    except BaseException as e:
        rx.exc = e
        return ERR_PY_EXCEPTION


def ucx_isend(ep, obj, tag):
    """ucx_isend(ep, obj, tag) -> request"""
    ep, tag = _u64(ep, "ep"), _u64(tag, "tag")
    if not module._have_ucx:
        raise _no_ucx()
    r = UcxRequest(False)
    r._done = True  # until the transport holds it
    r._out = _Out(obj, 5)
    req = ffi.new("cdt_ucx_request *")
    rc = lib.cdt_ucx_isend(ffi.cast("cdt_ucx_ep", ep), r._out.so, 1, module._sobj_type, tag, req)
    if rc < 0:
        r._out.release()
        _raise(rc, "cdt_ucx_isend")
    r._req, r._done = req[0], False
    return r


def _u64(v, what):
    v = _int(v, what)
    if not 0 <= v < 1 << 64:
        raise OverflowError("%s does not fit an unsigned 64-bit integer" % what)
    return v


def ucx_irecv(worker, tag, mask, alloc, max_bytes, max_regions):
    """ucx_irecv(worker, tag, mask, alloc, max_bytes, max_regions) -> request"""
    worker, tag, mask = _u64(worker, "worker"), _u64(tag, "tag"), _u64(mask, "mask")
    max_bytes = _limit_arg(max_bytes, "max_bytes")
    max_regions = _limit_arg(max_regions, "max_regions")
    if not module._have_ucx:
        raise _no_ucx()
    r = UcxRequest(True)
    r._rx = _Rx(alloc, max_bytes, max_regions)
    key = r._key = next(_next_key)
    _requests[key] = r
    p = ffi.new("cdt_ucx_recv_params *")
    p.field_mask = lib.CDT_UCX_RECV_PARAM_PREPARE
    p.prepare = lib.cdtpy_prepare_hook
    p.prepare_arg = ffi.cast("void *", key)
    # the transport checks these on the head, before it sizes anything from it
    if max_bytes >= 0:
        p.field_mask |= lib.CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES
        p.max_frame_bytes = max_bytes
    if max_regions >= 0:
        p.field_mask |= lib.CDT_UCX_RECV_PARAM_MAX_REGIONS
        p.max_regions = max_regions
    req = ffi.new("cdt_ucx_request *")
    rc = lib.cdt_ucx_irecv(ffi.cast("cdt_ucx_worker", worker), _NULL, 0, _NULL, tag, mask, p, req)
    if rc < 0:
        r._done = True
        _requests.pop(key, None)
        _raise(rc, "cdt_ucx_irecv")
    r._req = req[0]
    return r

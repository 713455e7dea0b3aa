"""pickle protocol 5 onto the serialized-object adapter (bindings/cdt_sobj.h).

Send: pickle.dumps(obj, protocol=5, buffer_callback=...) gives the in-band stream and the
out-of-band PickleBuffers; they fill one cdt_sobj, and cdt_frame_encode() makes the frame (the
stream is copied into the frame's head, the buffers are referenced, not copied).

Receive: cdt_decoder_create() validates the header; cdt_sobj_recv_prepare() asks our allocator
for the in-band bytes and for every buffer (the header announced all lengths); the decoder
writes the frame's bytes there; pickle.loads(inband, buffers=[...]) rebuilds the object, NumPy
arrays directly on the memory the allocator gave.
"""

import ctypes
import pickle

from . import _lib, _restricted, _stream
from ._lib import (
    CDT_ERR_PY_EXCEPTION,
    CDT_KIND_BYTE,
    CdtError,
    check,
    lib,
)

__all__ = ["Frame", "dumps", "loads", "safe_loads", "Limits", "default_alloc", "ALIGN"]

ALIGN = 64  # receive buffers start on this boundary (cache line; enough for every dtype)
_SOBJ_TYPE = lib.cdt_sobj_type()  # lives for the whole program
if not _SOBJ_TYPE:
    raise _lib.error(-2, "cdt_sobj_type")

try:  # NumPy gives uninitialised memory; bytearray(n) would zero it first
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without NumPy
    _np = None


def _alloc_aligned(nbytes):
    """(buffer, address): ``nbytes`` writable bytes on an ALIGN-byte boundary, owned by
    Python (a NumPy uint8 array when NumPy is present, a memoryview of a bytearray
    otherwise); uninitialised with NumPy."""
    raw = _np.empty(nbytes + ALIGN, dtype=_np.uint8) if _np is not None else bytearray(nbytes + ALIGN)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(raw))
    skip = -addr % ALIGN
    if _np is None:
        raw = memoryview(raw)
    return raw[skip : skip + nbytes], addr + skip


def default_alloc(nbytes):
    """A writable buffer of ``nbytes`` starting on an ALIGN-byte boundary, owned by Python
    (a NumPy uint8 array when NumPy is present, a memoryview of a bytearray otherwise)."""
    return _alloc_aligned(nbytes)[0]


class Frame:
    """One object as one message: header + pickle stream (``head``) + out-of-band buffers,
    which are referenced, not copied. Keep the Frame (or use it as a context manager) while
    the pieces are in flight; views from ``iov()`` are valid until ``close()``."""

    __slots__ = ("_frame", "_pins", "_buffers", "_size", "__weakref__")

    def __init__(self, handle, pins, buffers):
        self._frame = handle
        self._pins = pins
        self._buffers = buffers
        n = _lib.cdt_count()
        check(lib.cdt_frame_size(handle, ctypes.byref(n)), "cdt_frame_size")
        self._size = n.value

    def _handle(self):
        if self._frame is None:
            raise ValueError("operation on a closed Frame")
        return self._frame

    @property
    def size(self):
        """Total bytes of the frame."""
        return self._size

    def __len__(self):
        return self._size

    @property
    def nbuffers(self):
        """Number of out-of-band buffers (regions) in the frame."""
        n = _lib.cdt_count()
        check(lib.cdt_frame_region_count(self._handle(), ctypes.byref(n)))
        return n.value

    @property
    def head(self):
        """Header + pickle stream: a read-only memoryview of the frame's first piece."""
        data = ctypes.c_void_p()
        n = _lib.cdt_count()
        check(lib.cdt_frame_head(self._handle(), ctypes.byref(data), ctypes.byref(n)))
        return _lib.view_of(data.value or 0, n.value, self)

    def iov_raw(self):
        """The frame as (address, length) pairs in order; their concatenation is the frame."""
        h = self._handle()
        n = _lib.cdt_count()
        check(lib.cdt_frame_iov_count(h, ctypes.byref(n)), "cdt_frame_iov_count")
        arr = (_lib.cdt_iov * max(n.value, 1))()
        got = _lib.cdt_count()
        check(lib.cdt_frame_iov(h, 0, n.value, arr, ctypes.byref(got)), "cdt_frame_iov")
        return [(arr[i].base or 0, arr[i].len) for i in range(got.value)]

    def iov(self):
        """The frame as a list of read-only memoryviews over its pieces (zero-copy)."""
        return [_lib.view_of(a, n, self) for a, n in self.iov_raw()]

    def gather_into(self, dst, offset=0):
        """Copy frame bytes [offset, offset + len(dst)) into the writable buffer ``dst``."""
        keeper, addr, n = _lib.pin(dst, writable=True)
        try:
            check(lib.cdt_frame_gather(self._handle(), offset, addr, n), "cdt_frame_gather")
        finally:
            _lib.release(keeper)

    def tobytes(self):
        """The whole frame in one bytes object (a copy)."""
        out = bytearray(self._size)
        self.gather_into(out)
        return bytes(out)

    def close(self):
        """Free the frame and release the buffers it referenced. Idempotent."""
        h, self._frame = self._frame, None
        if h is not None:
            lib.cdt_frame_free(h)
        for p in self._pins:
            _lib.release(p)
        for b in self._buffers:
            b.release()
        self._pins = self._buffers = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        state = "closed" if self._frame is None else "%d bytes" % self._size
        return "<cdtypes.Frame %s>" % state


class _Outgoing:
    """One object as a filled cdt_sobj: the pickle stream and the pinned out-of-band buffers,
    alive until release() (the frame or the transport reads them in place)."""

    __slots__ = ("sobj", "inband", "pins", "buffers", "_sbufs")

    def __init__(self, obj, protocol=5):
        if protocol < 5:
            raise ValueError("cdtypes needs pickle protocol 5 or later")
        buffers = []
        self.inband = pickle.dumps(obj, protocol=protocol, buffer_callback=buffers.append)
        self.buffers = buffers
        self.pins = []
        try:
            sbufs = (_lib.cdt_sobj_buffer * max(len(buffers), 1))()
            for i, pb in enumerate(buffers):
                # raw(): a contiguous byte view (BufferError otherwise); bytes travel as
                # bytes: the pickle stream records the element type and byte order itself
                keeper, addr, n = _lib.pin(pb.raw())
                self.pins.append(keeper)
                b = sbufs[i]
                b.base, b.len, b.kind = addr, n, CDT_KIND_BYTE
        except BaseException:
            self.release()
            raise
        self._sbufs = sbufs
        so = self.sobj = _lib.cdt_sobj()
        so.inband = ctypes.cast(self.inband, ctypes.c_void_p)
        so.inband_len = len(self.inband)
        so.buffers = sbufs
        so.nbuffers = len(buffers)

    def release(self):
        for p in self.pins:
            _lib.release(p)
        for b in self.buffers:
            b.release()
        self.pins = self.buffers = ()
        self.inband = None


def dumps(obj, *, protocol=5):
    """Serialize ``obj`` into a Frame: the pickle stream travels packed, every PickleBuffer
    (NumPy arrays, bytearray wrapped in PickleBuffer, ...) as a zero-copy region."""
    out = _Outgoing(obj, protocol)
    handle = ctypes.c_void_p()
    try:
        check(
            lib.cdt_frame_encode(ctypes.byref(out.sobj), 1, _SOBJ_TYPE, None, ctypes.byref(handle)),
            "cdt_frame_encode",
        )
    except BaseException:
        out.release()
        raise
    pins, buffers = out.pins, out.buffers
    out.pins = out.buffers = ()  # now the frame's
    return Frame(handle.value, pins, buffers)


class _Receiver:
    """Allocator hook state for one receive: Python objects for the in-band bytes and each
    buffer, pinned while the decoder writes into them."""

    def __init__(self, alloc, inplace_base=None, decoder=None):
        self.alloc = alloc
        self.inplace_base = inplace_base
        self.decoder = decoder
        self.inband = None
        self.inband_keeper = None
        self.buffers = []
        self.pins = []
        self.exc = None
        self.cfunc = _lib.cdt_sobj_alloc_func_t(self._hook)

    def _hook(self, user, index, nbytes, kind, base_out):
        try:
            if index < 0:  # the pickle stream: small, copied by the decoder
                mem = bytearray(nbytes)
                keeper, addr, _ = _lib.pin(mem, writable=True) if nbytes else (None, 0, 0)
                self.inband = mem
                self.inband_keeper = keeper
            else:
                if self.inplace_base is not None:
                    # the region's bytes already lie in the received frame: point at them
                    off, ln, kd = _lib.cdt_count(), _lib.cdt_count(), _lib.cdt_kind()
                    check(
                        lib.cdt_decoder_region_info(
                            self.decoder, index, ctypes.byref(ln), ctypes.byref(kd), ctypes.byref(off)
                        )
                    )
                    mem = self.inplace_view[off.value : off.value + nbytes]
                    if off.value < 0 or len(mem) != nbytes:
                        raise ValueError("region %d lies outside the frame" % index)
                    addr = self.inplace_base + off.value
                elif self.alloc is None:
                    mem, addr = _alloc_aligned(nbytes)
                else:
                    mem = self.alloc(nbytes)
                    keeper, addr, n = _lib.pin(mem, writable=True)
                    self.pins.append(keeper)
                    if n != nbytes:
                        raise ValueError("allocator gave %d bytes, %d were asked" % (n, nbytes))
                self.buffers.append(mem)
            base_out[0] = addr if nbytes else None
            return 0
        except BaseException as e:  # never let an exception cross the C frame
            self.exc = e
            return CDT_ERR_PY_EXCEPTION

    def release(self):
        for p in self.pins:
            _lib.release(p)
        self.pins = []
        self.inband_keeper = None  # the decoder is done writing the stream

    def prepare(self, dec, so):
        """Size ``so`` from the decoder's header through the allocator hook, then bind.
        Returns a status (callers raise with raise_status())."""
        so.alloc = self.cfunc
        rc = lib.cdt_sobj_recv_prepare(ctypes.byref(so), dec)
        if rc == 0:
            rc = lib.cdt_decoder_bind(dec, ctypes.byref(so), 1, _SOBJ_TYPE)
            if rc != 0:
                lib.cdt_sobj_release(ctypes.byref(so))
        return rc

    def raise_status(self, code, what):
        _raise(code, what, self)

    def unpickle(self, allowed=None, strict=False):
        """Rebuild the object. The stream is checked first without running it (``strict``,
        for untrusted input: every length and memo index; otherwise what would make pickle
        fail inside an allocation: a BYTEARRAY8 longer than the stream, where CPython frees a
        half-made bytearray and prints "deallocated bytearray object has exported buffers"),
        then unpickled, with only the globals of ``allowed`` (a Restricted) when given."""
        stream, buffers = self.inband, self.buffers
        self.inband, self.buffers = None, []
        if stream is None:
            stream = b""
        try:
            _stream.check_stream(stream, strict)
            if allowed is None:
                return pickle.loads(stream, buffers=buffers)
            return allowed.loads(stream, buffers)
        except _restricted.Refused as e:
            raise _lib.ForbiddenError(None, "refused by the allow-list: %s" % (e,)) from e
        except _stream.StreamError as e:
            raise _lib.UnpicklingFailed(None, "malformed pickle stream: %s" % (e,)) from e
        except Exception as e:
            raise _lib.UnpicklingFailed(None, "pickle could not rebuild the object: %r" % (e,)) from e


def _raise(code, what, rx):
    if code == CDT_ERR_PY_EXCEPTION and rx is not None and rx.exc is not None:
        raise CdtError(None, "receive allocator failed: %r" % (rx.exc,)) from rx.exc
    check(code, what)


def _policy(allowed):
    """None (plain pickle) or a Restricted from what ``allowed=`` was given."""
    if allowed is None or isinstance(allowed, _restricted.Restricted):
        return allowed
    if allowed is True:
        return _restricted.DEFAULT
    if isinstance(allowed, (str, bytes)) or not hasattr(allowed, "__iter__"):
        raise TypeError("allowed= takes a cdtypes.Restricted, True, or an iterable of globals")
    return _restricted.Restricted(allowed)


def _limit(value, what):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("%s must be a non-negative int or None" % what)
    return value


class Limits:
    """Receiver limits for frames from untrusted peers: ``max_bytes`` (the whole frame:
    header, pickle stream, padding and buffers) and ``max_regions`` (out-of-band buffers).
    None: no limit."""

    __slots__ = ("max_bytes", "max_regions")

    def __init__(self, max_bytes=None, max_regions=None):
        self.max_bytes = _limit(max_bytes, "max_bytes")
        self.max_regions = _limit(max_regions, "max_regions")

    @property
    def any(self):
        return self.max_bytes is not None or self.max_regions is not None

    def describe_set(self):
        """The limits in force, for a refusal whose frame header the caller never saw."""
        set_ = ["%s=%d" % (k, v) for k, v in
                (("max_bytes", self.max_bytes), ("max_regions", self.max_regions)) if v is not None]
        return "the frame exceeds the receiver's limits (%s)" % ", ".join(set_)

    def params(self):
        """The cdt_decoder_params of these limits (None when there are none)."""
        if not self.any:
            return None
        p = _lib.cdt_decoder_params()
        if self.max_bytes is not None:
            p.field_mask |= _lib.CDT_DECODER_PARAM_MAX_FRAME_BYTES
            p.max_frame_bytes = self.max_bytes
        if self.max_regions is not None:
            p.field_mask |= _lib.CDT_DECODER_PARAM_MAX_REGIONS
            p.max_regions = self.max_regions
        return p

    def check_size(self, nbytes, what="the message"):
        """Raise LimitError when a message of ``nbytes`` is over max_bytes."""
        if self.max_bytes is not None and nbytes > self.max_bytes:
            raise _lib.error(
                _lib.CDT_ERR_LIMIT,
                "%s has %d bytes, max_bytes is %d" % (what, nbytes, self.max_bytes),
            )

    def check_info(self, info):
        """Status for a validated header (cdt_frame_info): 0, or CDT_ERR_LIMIT."""
        if self.max_bytes is not None and info.frame_size > self.max_bytes:
            return _lib.CDT_ERR_LIMIT
        if self.max_regions is not None and info.region_count > self.max_regions:
            return _lib.CDT_ERR_LIMIT
        return 0

    def __str__(self):
        return " and ".join(
            "%s=%d" % (k, getattr(self, k)) for k in self.__slots__ if getattr(self, k) is not None
        ) or "no limits"

    def describe(self, info):
        if self.max_bytes is not None and info.frame_size > self.max_bytes:
            return "the frame announces %d bytes, max_bytes is %d" % (
                info.frame_size, self.max_bytes)
        return "the frame announces %d buffers, max_regions is %d" % (
            info.region_count, self.max_regions)


def loads(data, *, alloc=None, inplace=False, max_bytes=None, max_regions=None, allowed=None):
    """Rebuild the object from one whole frame ``data`` (any bytes-like object).

    WARNING: without ``allowed``, this is pickle.loads: the frame's sender can run arbitrary
    code in this process (a ``__reduce__`` that names os.system is enough). Only load frames
    from peers you trust, or pass ``allowed`` (see below and docs/SECURITY.md).

    alloc(nbytes) -> writable buffer gives the memory of each out-of-band buffer (default:
    64-byte aligned, uninitialised, owned by Python); NumPy arrays of the object live there.
    inplace=True: ``data`` must be writable and the arrays are views of it (no copy at all;
    used by the MPI path, whose receive buffer is allocated once per message).

    Untrusted input:
    max_bytes / max_regions: refuse (LimitError) a frame larger than max_bytes or with more
    out-of-band buffers than max_regions, from its header, before anything is allocated.
    allowed: unpickle with an allow-list of globals (a cdtypes.Restricted; True for the
    default list; or an iterable of extra classes / "module.name" strings added to the
    defaults). A global outside it raises ForbiddenError before it is imported or called.
    With any of the three, the pickle stream is also checked statically first (lengths and
    memo indices within the stream).

    Raises a CdtError subclass for anything that is not a complete, valid frame."""
    limits = Limits(max_bytes, max_regions)
    policy = _policy(allowed)
    strict = policy is not None or limits.any
    src_keeper, src_addr, n = _lib.pin(data, writable=inplace)
    dec = ctypes.c_void_p()
    rx = None
    so = _lib.cdt_sobj()
    prepared = False
    try:
        if n < _lib.CDT_FRAME_FIXED_HEADER_SIZE:
            raise _lib.error(-12, "%d bytes cannot hold a frame header" % n)
        limits.check_size(n, "the data")
        params = limits.params()
        if params is None:
            check(lib.cdt_decoder_create(src_addr, n, ctypes.byref(dec)), "cdt_decoder_create")
        else:
            rc = lib.cdt_decoder_create_advanced(
                src_addr, n, ctypes.byref(params), ctypes.byref(dec))
            if rc == _lib.CDT_ERR_LIMIT:
                raise _lib.error(rc, "the frame header announces more than %s" % limits)
            check(rc, "cdt_decoder_create_advanced")
        info = _lib.cdt_frame_info()
        check(lib.cdt_decoder_info(dec, ctypes.byref(info)), "cdt_decoder_info")
        if limits.check_info(info):  # also checked by the decoder; never allocate past it
            raise _lib.error(_lib.CDT_ERR_LIMIT, limits.describe(info))
        if info.frame_size > n:  # check before allocating what the header announces
            raise _lib.error(
                -12, "the header announces %d bytes, %d were given" % (info.frame_size, n)
            )
        if info.frame_size < n:
            raise _lib.error(
                -11, "%d bytes after the end of the frame" % (n - info.frame_size)
            )
        rx = _Receiver(alloc, src_addr if inplace else None, dec)
        if inplace:
            rx.inplace_view = memoryview(data).cast("B")
        _raise(rx.prepare(dec, so), "cdt_sobj_recv_prepare", rx)
        prepared = True
        if inplace:
            # the regions already lie in data: the decoder checks the header, takes the stream,
            # and checks the padding between the parts; the regions are only marked done
            pos = info.header_size + info.packed_size
            check(lib.cdt_decoder_write(dec, 0, src_addr, pos), "cdt_decoder_write")
            off, ln, kd = _lib.cdt_count(), _lib.cdt_count(), _lib.cdt_kind()
            for i in range(info.region_count):
                check(
                    lib.cdt_decoder_region_info(
                        dec, i, ctypes.byref(ln), ctypes.byref(kd), ctypes.byref(off)),
                    "cdt_decoder_region_info",
                )
                if off.value > pos:  # padding: must be zero
                    check(lib.cdt_decoder_write(dec, pos, src_addr + pos, off.value - pos),
                          "cdt_decoder_write")
                check(lib.cdt_decoder_region_done(dec, i), "cdt_decoder_region_done")
                pos = max(pos, off.value + ln.value)
        else:
            check(lib.cdt_decoder_write(dec, 0, src_addr, n), "cdt_decoder_write")
        check(lib.cdt_decoder_finish(dec), "cdt_decoder_finish")
    except BaseException:
        if rx is not None:
            rx.inband = None
            rx.buffers = []
        raise
    finally:
        if dec.value:
            lib.cdt_decoder_free(dec)
        if prepared:
            lib.cdt_sobj_release(ctypes.byref(so))
        if rx is not None:
            rx.release()
        _lib.release(src_keeper)
    return rx.unpickle(policy, strict)


def safe_loads(data, *, allowed=True, **kwargs):
    """``loads`` for frames from peers that are not trusted: unpickles with an allow-list
    (default: cdtypes.Restricted(), builtins values, standard containers, NumPy arrays). Pass
    ``max_bytes`` / ``max_regions`` as well to bound what a frame may make this process
    allocate. See docs/SECURITY.md."""
    if allowed is None:
        raise ValueError("safe_loads needs an allow-list (allowed=None would run plain pickle)")
    return loads(data, allowed=allowed, **kwargs)

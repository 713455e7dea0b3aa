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

from . import _lib
from ._lib import (
    CDT_ERR_PY_EXCEPTION,
    CDT_KIND_BYTE,
    CdtError,
    Pinned,
    check,
    lib,
)

__all__ = ["Frame", "dumps", "loads", "default_alloc", "ALIGN"]

ALIGN = 64  # receive buffers start on this boundary (cache line; enough for every dtype)

try:  # NumPy gives uninitialised memory; bytearray(n) would zero it first
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without NumPy
    _np = None


def default_alloc(nbytes):
    """A writable buffer of ``nbytes`` starting on an ALIGN-byte boundary, owned by Python
    (a NumPy uint8 array when NumPy is present, a memoryview of a bytearray otherwise)."""
    if _np is not None:
        raw = _np.empty(nbytes + ALIGN, dtype=_np.uint8)
        skip = -raw.ctypes.data % ALIGN
        return raw[skip : skip + nbytes]
    raw = bytearray(nbytes + ALIGN)
    mv = memoryview(raw)
    p = Pinned(mv)
    skip = -p.address % ALIGN
    p.release()
    return mv[skip : skip + nbytes]


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
        p = Pinned(dst, writable=True)
        try:
            check(lib.cdt_frame_gather(self._handle(), offset, p.address, p.nbytes), "gather")
        finally:
            p.release()

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
            p.release()
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


def dumps(obj, *, protocol=5):
    """Serialize ``obj`` into a Frame: the pickle stream travels packed, every PickleBuffer
    (NumPy arrays, bytearray wrapped in PickleBuffer, ...) as a zero-copy region."""
    if protocol < 5:
        raise ValueError("cdtypes needs pickle protocol 5 or later")
    buffers = []
    inband = pickle.dumps(obj, protocol=protocol, buffer_callback=buffers.append)
    pins = []
    try:
        sbufs = (_lib.cdt_sobj_buffer * max(len(buffers), 1))()
        for i, pb in enumerate(buffers):
            p = Pinned(pb.raw())  # raw(): a contiguous byte view; BufferError otherwise
            pins.append(p)
            sbufs[i].base = p.address
            sbufs[i].len = p.nbytes
            # bytes: the pickle stream records the element type and byte order itself
            sbufs[i].kind = CDT_KIND_BYTE
        ip = Pinned(inband)
        pins.append(ip)
        so = _lib.cdt_sobj()
        so.inband = ip.address
        so.inband_len = ip.nbytes
        so.buffers = sbufs
        so.nbuffers = len(buffers)
        handle = ctypes.c_void_p()
        check(
            lib.cdt_frame_encode(ctypes.byref(so), 1, lib.cdt_sobj_type(), None, ctypes.byref(handle)),
            "cdt_frame_encode",
        )
    except BaseException:
        for p in pins:
            p.release()
        for b in buffers:
            b.release()
        raise
    ip.release()  # the stream was copied into the frame's head
    pins.pop()
    return Frame(handle.value, pins, buffers)


class _Receiver:
    """Allocator hook state for one receive: Python objects for the in-band bytes and each
    buffer, pinned while the decoder writes into them."""

    def __init__(self, alloc, inplace_base=None, decoder=None):
        self.alloc = alloc or default_alloc
        self.inplace_base = inplace_base
        self.decoder = decoder
        self.inband = None
        self.buffers = []
        self.pins = []
        self.exc = None
        self.cfunc = _lib.cdt_sobj_alloc_func_t(self._hook)

    def _hook(self, user, index, nbytes, kind, base_out):
        try:
            if index >= 0 and self.inplace_base is not None:
                # the region's bytes already lie in the received frame: point at them
                off, ln, kd = _lib.cdt_count(), _lib.cdt_count(), _lib.cdt_kind()
                check(
                    lib.cdt_decoder_region_info(
                        self.decoder, index, ctypes.byref(ln), ctypes.byref(kd), ctypes.byref(off)
                    )
                )
                mem = self.inplace_view[off.value : off.value + nbytes]
            elif index < 0:
                mem = bytearray(nbytes)
            else:
                mem = self.alloc(nbytes)
            p = Pinned(mem, writable=True)
            self.pins.append(p)
            if p.nbytes != nbytes:
                raise ValueError("allocator gave %d bytes, %d were asked" % (p.nbytes, nbytes))
            if index < 0:
                self.inband = mem
            else:
                self.buffers.append(mem)
            base_out[0] = p.address if nbytes else None
            return 0
        except BaseException as e:  # never let an exception cross the C frame
            self.exc = e
            return CDT_ERR_PY_EXCEPTION

    def release(self):
        for p in self.pins:
            p.release()
        self.pins = []


def _raise(code, what, rx):
    if code == CDT_ERR_PY_EXCEPTION and rx is not None and rx.exc is not None:
        raise CdtError(None, "receive allocator failed: %r" % (rx.exc,)) from rx.exc
    check(code, what)


def loads(data, *, alloc=None, inplace=False):
    """Rebuild the object from one whole frame ``data`` (any bytes-like object).

    alloc(nbytes) -> writable buffer gives the memory of each out-of-band buffer (default:
    64-byte aligned, uninitialised, owned by Python); NumPy arrays of the object live there.
    inplace=True: ``data`` must be writable and the arrays are views of it (no copy at all;
    used by the MPI path, whose receive buffer is allocated once per message).
    Raises a CdtError subclass for anything that is not a complete, valid frame."""
    src = Pinned(data, writable=inplace)
    dec = ctypes.c_void_p()
    rx = None
    so = _lib.cdt_sobj()
    prepared = False
    try:
        n = src.nbytes
        if n < _lib.CDT_FRAME_FIXED_HEADER_SIZE:
            raise _lib.error(-12, "%d bytes cannot hold a frame header" % n)
        check(lib.cdt_decoder_create(src.address, n, ctypes.byref(dec)), "cdt_decoder_create")
        info = _lib.cdt_frame_info()
        check(lib.cdt_decoder_info(dec, ctypes.byref(info)), "cdt_decoder_info")
        if info.frame_size > n:  # check before allocating what the header announces
            raise _lib.error(
                -12, "the header announces %d bytes, %d were given" % (info.frame_size, n)
            )
        if info.frame_size < n:
            raise _lib.error(
                -11, "%d bytes after the end of the frame" % (n - info.frame_size)
            )
        rx = _Receiver(alloc, src.address if inplace else None, dec)
        if inplace:
            rx.inplace_view = memoryview(data).cast("B")
        so.alloc = rx.cfunc
        code = lib.cdt_sobj_recv_prepare(ctypes.byref(so), dec)
        _raise(code, "cdt_sobj_recv_prepare", rx)
        prepared = True
        check(lib.cdt_decoder_bind(dec, ctypes.byref(so), 1, lib.cdt_sobj_type()), "cdt_decoder_bind")
        if inplace:
            head = info.header_size + info.packed_size
            check(lib.cdt_decoder_write(dec, 0, src.address, head), "cdt_decoder_write")
            for i in range(info.region_count):
                check(lib.cdt_decoder_region_done(dec, i), "cdt_decoder_region_done")
        else:
            check(lib.cdt_decoder_write(dec, 0, src.address, n), "cdt_decoder_write")
        check(lib.cdt_decoder_finish(dec), "cdt_decoder_finish")
    finally:
        if dec.value:
            lib.cdt_decoder_free(dec)
        if prepared:
            lib.cdt_sobj_release(ctypes.byref(so))
        if rx is not None:
            rx.release()
        src.release()
    try:
        return pickle.loads(rx.inband, buffers=rx.buffers)
    except Exception as e:
        raise _lib.UnpicklingFailed(None, "pickle could not rebuild the object: %r" % (e,)) from e

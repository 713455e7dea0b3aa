"""Frame, and dumps (as _ext/frame.c)."""
import sys

from .._cffi_ext import ffi, lib
from . import module
from .buffer import _FrameMemory, _new, _window, _writable
from .module import _NULL, _int, _raise
from .send import _Out

_CPYTHON = sys.implementation.name == "cpython"


# ---- Frame ------------------------------------------------------------------------------------


def _release_all(adopted):
    for seq in adopted:
        try:
            for x in seq if seq is not None else ():
                r = getattr(x, "release", None)
                if r is not None:
                    r()
        except Exception:
            pass


def _free_frame(h, out, adopted):
    lib.cdt_frame_free(h)
    if out is not None:
        out.release()
    if adopted is not None:
        _release_all(adopted)


class Frame:
    """One object as one message: header + pickle stream (head) + out-of-band buffers, which
    are referenced, not copied. Keep the Frame (or use it as a context manager) while the
    pieces are in flight. Views from head and iov() keep the frame's memory alive: close()
    frees it once the last view is gone (addresses from iov_raw() are valid until then, or
    until close() when there is none).

    Frame(handle, pins=(), buffers=()) adopts a frame encoded elsewhere (cdt_frame address)."""

    __slots__ = ("_h", "_mem", "_size", "__weakref__")

    def __init__(self, handle, pins=None, buffers=None):
        if isinstance(handle, bool) or not isinstance(handle, int):
            raise TypeError("Frame: the handle must be an int (a cdt_frame address)")
        if module._sobj_type is None:
            raise RuntimeError("cdtypes' cffi backend was not initialised")
        if handle == 0:
            raise ValueError("Frame: a null frame handle")
        if not 0 < handle < 1 << 64:
            raise OverflowError("Frame: the handle does not fit a pointer")
        self._adopt(ffi.cast("cdt_frame", handle), None, (pins, buffers))

    def _adopt(self, h, out, adopted):
        size = ffi.new("cdt_count *")
        rc = lib.cdt_frame_size(h, size)
        if rc < 0:
            _raise(rc, "cdt_frame_size")
        self._size = size[0]
        self._h = ffi.gc(h, lambda p, o=out, a=adopted: _free_frame(p, o, a))
        self._mem = _FrameMemory(self._h)

    def _handle(self):
        h = self._h
        if h is None:
            raise ValueError("operation on a closed Frame")
        return h

    @property
    def size(self):
        """Total bytes of the frame."""
        return self._size

    def __len__(self):
        return self._size

    @property
    def nbuffers(self):
        """Number of out-of-band buffers (regions)."""
        n = ffi.new("cdt_count *")
        rc = lib.cdt_frame_region_count(self._handle(), n)
        if rc < 0:
            _raise(rc, "cdt_frame_region_count")
        return n[0]

    @property
    def head(self):
        """Header + pickle stream: a read-only memoryview of the frame's first piece."""
        data = ffi.new("void **")
        n = ffi.new("cdt_count *")
        rc = lib.cdt_frame_head(self._handle(), data, n)
        if rc < 0:
            _raise(rc, "cdt_frame_head")
        return _window(data[0], n[0], self._mem)

    def _pieces(self):
        h = self._handle()
        n = ffi.new("cdt_count *")
        rc = lib.cdt_frame_iov_count(h, n)
        if rc < 0:
            _raise(rc, "cdt_frame_iov_count")
        iov = ffi.new("cdt_iov[]", max(n[0], 1))
        rc = lib.cdt_frame_iov(h, 0, n[0], iov, n)
        if rc < 0:
            _raise(rc, "cdt_frame_iov")
        return [(iov[i].base, iov[i].len) for i in range(n[0])]

    def iov_raw(self):
        """The frame as (address, length) pairs in order; their concatenation is the frame."""
        return [(int(ffi.cast("uintptr_t", b)), n) for b, n in self._pieces()]

    def iov(self):
        """The frame as a list of read-only memoryviews over its pieces (zero-copy); they keep
        the frame's memory alive after close()."""
        return [_window(b, n, self._mem) for b, n in self._pieces()]

    def _gather(self, offset, dst, n):
        rc = lib.cdt_frame_gather(self._handle(), offset, dst, n)
        if rc < 0:
            _raise(rc, "cdt_frame_gather")

    def gather_into(self, dst, offset=0):
        """gather_into(dst, offset=0): copy frame bytes [offset, offset + len(dst)) into dst."""
        h = self._handle()
        c = _writable(dst)
        try:
            rc = lib.cdt_frame_gather(h, offset, c, len(c))
        finally:
            ffi.release(c)
        if rc < 0:
            _raise(rc, "cdt_frame_gather")

    def tobytes(self):
        """The whole frame in one bytes object (a copy)."""
        h = self._handle()
        if _CPYTHON:
            # gathered straight into a new bytes object, before anything else can see it (as
            # the C extension fills PyBytes_FromStringAndSize(NULL, n)); bytes(n) is calloc'd
            out = bytes(self._size)
            dst = ffi.from_buffer(out)
        else:  # PyPy may hand ffi.from_buffer(bytes) a copy: gather, then copy once
            out = None
            dst = _new("char[]", self._size)
        try:
            rc = lib.cdt_frame_gather(h, 0, dst, self._size)
        finally:
            if out is not None:
                ffi.release(dst)
        if rc < 0:
            _raise(rc, "cdt_frame_gather")
        return out if out is not None else ffi.buffer(dst)[:]

    def close(self):
        """Free the frame and release the buffers it referenced (once no view from head, iov()
        or the MPI parts is left). Idempotent."""
        if self._h is not None:
            self._h = None
            self._mem.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._h is None:
            return "<cdtypes.Frame closed>"
        return "<cdtypes.Frame %d bytes>" % self._size


Frame.__module__ = "cdtypes"


def _encode(obj, protocol, pickled=None):
    out = _Out(obj, protocol, pickled)
    hp = ffi.new("cdt_frame *")
    rc = lib.cdt_frame_encode(out.so, 1, module._sobj_type, _NULL, hp)
    if rc < 0:
        out.release()
        _raise(rc, "cdt_frame_encode")
    out.drop_stream()  # copied into the frame's head
    f = Frame.__new__(Frame)
    try:
        f._adopt(hp[0], out, None)
    except BaseException:
        lib.cdt_frame_free(hp[0])
        out.release()
        raise
    return f


def _encode_pickled(stream, pbufs):
    """The Frame of an object pickled already (protocol 5): its stream and PickleBuffers."""
    return _encode(None, 5, (stream, pbufs))


def dumps(obj, protocol=5):
    """dumps(obj, protocol=5) -> Frame"""
    return _encode(obj, _int(protocol, "protocol"))

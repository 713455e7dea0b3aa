"""The cffi backend of cdtypes: the interface of the C extension (see the top of _ext.c) over
cdtypes._cffi_ext, a cffi module compiled against libcdt's headers (API mode, see
_cffi_build.py). The backend of PyPy, where the CPython C API is emulated and slow; on CPython
it is chosen with CDTYPES_BACKEND=cffi.

The same calls in the same order as _ext.c, with the same checks, messages and exceptions:
  dumps        pickle (protocol 5, buffer_callback, NumPy arrays through cdtypes._arrays)
               -> cdt_sobj -> cdt_frame_encode
  decode       decoder with limits -> buffers allocated from the header -> decoder_write
  ucx_isend    the same cdt_sobj handed to cdt_ucx_isend
  ucx_irecv    cdt_ucx_irecv whose prepare callback allocates the buffers
  mpi_pack     the frame split into a head message and the large buffers (one more message)
  mpi_unpack   the head message decoded, the large buffers' destinations given back

Memory: received buffers come from cdtpy_alloc (64-byte aligned, uninitialised, reused by size
like the C extension's); a Python object's bytes are passed to C through ffi.from_buffer, which
holds the object's buffer export until ffi.release (or its collection). cffi releases the GIL
around every libcdt call; the allocator and prepare callbacks take it back.
"""
import itertools
import os
import pickle
import struct
import sys
import weakref

from . import _arrays
from ._cffi_build import CORE_CALLS, UCX_CALLS
from ._cffi_ext import ffi, lib

__all__ = ["Frame", "Buffer", "dumps", "decode", "stream_needs_check", "ucx_isend", "ucx_irecv",
           "mpi_pack", "mpi_unpack", "mpi_parts", "CALLS", "UCX_CALLS", "ERR_PY_EXCEPTION",
           "MPI_PREFIX"]

CALLS = CORE_CALLS
ERR_PY_EXCEPTION = lib.CDT_ERR_USER_BASE - 1
MPI_PREFIX = 16
_MPI_MAGIC = 0x32544443  # "CDT2" little-endian (the protocol of one parts message)
_HEADER = lib.CDT_FRAME_FIXED_HEADER_SIZE
_INPROGRESS = lib.CDT_INPROGRESS
_NULL = ffi.NULL

_error = None  # error(code, detail) -> exception instance
_alloc_error = None  # alloc_error(exc) -> exception instance
_sobj_type = None
_have_ucx = False
_dumps = _arrays.dumps  # pickle.dumps, NumPy arrays through cdtypes._arrays once imported
_CPYTHON = sys.implementation.name == "cpython"
_ALLOC_DEFAULT = ffi.addressof(lib, "cdtpy_alloc_default")  # a function pointer on every interpreter

# receive memory: uninitialised, 64-byte aligned, reused by size (cdtpy_alloc / cdtpy_free)
_new = ffi.new_allocator(lib.cdtpy_alloc, lib.cdtpy_free, should_clear_after_alloc=False)
Buffer = ffi.buffer  # the type of a received out-of-band buffer (buffer protocol, writable)


def _init(path, error, alloc_error):
    """Resolve libcdt's functions in the library the package loaded (its file ``path``), and
    take the functions that build exceptions. Returns whether the UCX transport is there."""
    global _error, _alloc_error, _sobj_type, _have_ucx
    have = ffi.new("int *")
    missing = lib.cdtpy_resolve(os.fsencode(path), have)
    if missing != _NULL:
        raise ImportError("libcdt has no function %s" % ffi.string(missing).decode())
    env = os.environ.get("CDTYPES_BUFFER_CACHE")
    if env:
        lib.cdtpy_cache_limit(int(env))
    t = lib.cdt_sobj_type()
    if t == _NULL:
        raise ImportError("cdt_sobj_type() failed")
    _sobj_type, _have_ucx = t, bool(have[0])
    _error, _alloc_error = error, alloc_error
    return _have_ucx


def _raise(code, what=None):
    if _error is None:
        raise RuntimeError("cdtypes' cffi backend was not initialised")
    raise _error(code, what)


def _writable(obj):
    """ffi.from_buffer(obj) for writing: BufferError for a read-only object on every
    interpreter, as the C API's PyObject_GetBuffer(PyBUF_WRITABLE) raises."""
    try:
        return ffi.from_buffer(obj, require_writable=True)
    except TypeError:
        if memoryview(obj).readonly:  # TypeError still for objects without the buffer protocol
            raise BufferError("Object is not writable.") from None
        raise


def _window(ptr, n, owner, readonly=True):
    """A buffer of n bytes at ptr that keeps ``owner`` alive (read-only: a memoryview); a
    _FrameMemory owner counts it among its views until it is collected."""
    if n == 0:
        keep = ffi.new("char[]", 1)
    elif type(owner) is _FrameMemory:
        token = owner.view_made()
        keep = ffi.gc(ffi.cast("char *", ptr), lambda _p, m=owner, t=token: m.view_gone(t))
    else:
        keep = ffi.gc(ffi.cast("char *", ptr), lambda _p, _o=owner: None)
    buf = ffi.buffer(keep, n)
    return memoryview(buf).toreadonly() if readonly else buf


# ---- send side: an object as a filled cdt_sobj ----------------------------------------------


class _Out:
    """What a frame (or a send) references: the pickle buffers, their exports, the cdt_sobj."""

    __slots__ = ("pbufs", "raws", "views", "so", "sbufs", "stream", "inband")

    def __init__(self, obj, protocol):
        self.pbufs, self.raws, self.views = [], [], []
        self.stream = self.inband = self.sbufs = None
        if _sobj_type is None:
            raise RuntimeError("cdtypes' cffi backend was not initialised")
        if protocol < 5:
            raise ValueError("cdtypes needs pickle protocol 5 or later")
        try:
            stream = _dumps(obj, protocol, self.pbufs.append)
            if type(stream) is not bytes:
                raise TypeError("pickle.dumps did not return bytes")
            self.stream = stream
            so = self.so = ffi.new("cdt_sobj *")
            n = len(self.pbufs)
            if n:
                sb = self.sbufs = ffi.new("cdt_sobj_buffer[]", n)
                for i, pb in enumerate(self.pbufs):
                    # a contiguous byte view (C or Fortran order; BufferError otherwise)
                    raw = pb.raw()
                    self.raws.append(raw)
                    c = ffi.from_buffer(raw)
                    self.views.append(c)
                    b = sb[i]
                    b.base = c
                    b.len = len(c)
                    b.kind = lib.CDT_KIND_BYTE
                so.buffers = sb
            so.nbuffers = n
            self.inband = ffi.from_buffer(stream)
            so.inband = self.inband
            so.inband_len = len(stream)
        except BaseException:
            self.release()
            raise

    def drop_stream(self):
        """The stream was copied into the frame's head."""
        if self.inband is not None:
            ffi.release(self.inband)
        self.inband = self.stream = None

    def release(self):
        """Release the exports, then the PickleBuffers (the objects may be resized again)."""
        self.drop_stream()
        for c in self.views:
            ffi.release(c)
        for m in self.raws:
            m.release()
        for pb in self.pbufs:
            try:
                pb.release()
            except Exception:
                pass
        self.views, self.raws, self.pbufs = [], [], []
        self.so = self.sbufs = None


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


_view_tokens = itertools.count()  # next() is atomic: no lock


class _FrameMemory:
    """A Frame's memory (the encoded frame, and the buffers it references), which outlives
    close() while windows on it are alive (head, iov(), mpi_pack's parts: _window): close()
    frees it when no view is left, at once or when the last view is collected, so that a view
    never reads freed memory. As the C extension's Frame, which says why this and not
    mmap.close()'s BufferError. Views come and go in any thread (a view goes when the collector
    runs its ffi.gc destructor), hence a set of tokens and a box taken by one atomic pop instead
    of counters."""

    __slots__ = ("box", "views", "closed")

    def __init__(self, h):
        self.box = [h]  # the ffi.gc'd frame handle until freed
        self.views = set()
        self.closed = False

    def view_made(self):
        token = next(_view_tokens)
        self.views.add(token)
        return token

    def view_gone(self, token):
        self.views.discard(token)
        if self.closed and not self.views:
            self._free()

    def close(self):
        self.closed = True
        if not self.views:
            self._free()

    def _free(self):
        try:
            h = self.box.pop()
        except IndexError:  # freed already (close and the last view raced)
            return
        ffi.release(h)


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
        if _sobj_type is None:
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


def _encode(obj, protocol):
    out = _Out(obj, protocol)
    hp = ffi.new("cdt_frame *")
    rc = lib.cdt_frame_encode(out.so, 1, _sobj_type, _NULL, hp)
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


def dumps(obj, protocol=5):
    """dumps(obj, protocol=5) -> Frame"""
    return _encode(obj, _int(protocol, "protocol"))


def _int(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        if hasattr(v, "__index__"):
            return v.__index__()
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__))
    return v


# ---- receive side: memory from the header, then the decoder ---------------------------------


class _Rx:
    """One receive: the allocator, what it gave, and the limits to check first."""

    __slots__ = ("alloc", "stream", "nstream", "buffers", "pins", "inplace", "inplace_mv",
                 "inplace_len", "decoder", "exc", "max_bytes", "max_regions", "seen")

    def __init__(self, alloc, max_bytes=-1, max_regions=-1):
        self.alloc = alloc
        self.stream = self.inplace = self.inplace_mv = self.decoder = self.exc = None
        self.seen = None
        self.nstream = self.inplace_len = 0
        self.buffers, self.pins = [], []
        self.max_bytes, self.max_regions = max_bytes, max_regions

    def part(self, index, nbytes):
        """One part's memory: its address."""
        if index < 0:  # the pickle stream: small, copied by the decoder
            self.stream = _new("char[]", nbytes)
            self.nstream = nbytes
            return self.stream
        if self.inplace is not None:  # the region's bytes already lie in the frame
            ln, kind, off = ffi.new("cdt_count *"), ffi.new("cdt_kind *"), ffi.new("cdt_count *")
            rc = lib.cdt_decoder_region_info(self.decoder, index, ln, kind, off)
            if rc < 0:
                _raise(rc, "cdt_decoder_region_info")
            off = off[0]
            if off < 0 or off > self.inplace_len or nbytes > self.inplace_len - off:
                raise ValueError("region %d lies outside the frame" % index)
            self.buffers.append(self.inplace_mv[off:off + nbytes])
            return self.inplace + off
        if self.alloc is None:
            c = _new("char[]", nbytes)
            self.buffers.append(ffi.buffer(c))
            return c
        mem = self.alloc(nbytes)
        c = _writable(mem)
        self.pins.append(c)
        if len(c) != nbytes:
            raise ValueError("allocator gave %d bytes, %d were asked" % (len(c), nbytes))
        self.buffers.append(mem)
        return c

    def unpin(self):
        for c in self.pins:
            ffi.release(c)
        self.pins = []

    def clear(self):
        self.unpin()
        self.stream = self.buffers = self.exc = self.inplace_mv = self.alloc = None

    def fail(self, code, what):
        """Raise for a failed receive status (the allocator's exception when it was that)."""
        if code == ERR_PY_EXCEPTION and self.exc is not None and _alloc_error is not None:
            exc, self.exc = self.exc, None
            raise _alloc_error(exc)
        _raise(code, what)

    def result(self):
        stream = ffi.unpack(self.stream, self.nstream) if self.stream is not None else b""
        bufs = self.buffers if self.buffers is not None else []
        self.stream = self.buffers = None
        return stream, bufs


@ffi.def_extern()
def cdtpy_alloc_hook(user, index, length, kind, base):
    rx = ffi.from_handle(user)
    try:
        p = rx.part(index, length)
        base[0] = p if length > 0 else _NULL
        return 0
    except BaseException as e:  # given back to the caller by fail()
        rx.exc = e
        return ERR_PY_EXCEPTION


def _prepare(rx, so):
    """Size the object from the decoder's header and bind: a status."""
    if rx.alloc is None and rx.inplace is None:
        return _prepare_default(rx, so)
    so.field_mask |= lib.CDT_SOBJ_FIELD_ALLOC
    so.alloc = lib.cdtpy_alloc_hook
    handle = ffi.new_handle(rx)  # the allocator runs inside cdt_sobj_recv_prepare only
    so.alloc_user = handle
    rc = lib.cdt_sobj_recv_prepare(so, rx.decoder)
    if rc == 0:
        rc = lib.cdt_decoder_bind(rx.decoder, so, 1, _sobj_type)
        if rc != 0:
            lib.cdt_sobj_release(so)
    so.alloc_user = _NULL
    return rc


def _prepare_default(rx, so):
    """_prepare with the default memory: allocated in C (cdtpy_alloc_default), no callback;
    each part then owned by a Python buffer that gives it back to cdtpy_free."""
    info = ffi.new("cdt_frame_info *")
    info.field_mask = lib.CDT_FRAME_INFO_ALL
    rc = lib.cdt_decoder_info(rx.decoder, info)
    if rc != 0:
        return rc
    nreg = info.region_count
    slots = ffi.new("void *[]", nreg + 1)
    so.field_mask |= lib.CDT_SOBJ_FIELD_ALLOC
    so.alloc = _ALLOC_DEFAULT
    so.alloc_user = slots
    rc = lib.cdt_sobj_recv_prepare(so, rx.decoder)
    so.alloc_user = _NULL
    # the parts allocated belong to us from here, whether the prepare step succeeded or not;
    # their sizes tell PyPy's collector how much memory it keeps alive (the cache reuses it
    # only once collected)
    if rc != 0:
        for i in range(nreg + 1):
            if slots[i] != _NULL:
                lib.cdtpy_free(slots[i])
        return rc
    rx.stream, rx.nstream = (ffi.gc(ffi.cast("char *", slots[0]), lib.cdtpy_free, so.inband_len),
                             so.inband_len)
    bufs = so.buffers
    rx.buffers = [ffi.buffer(ffi.gc(ffi.cast("char *", slots[i + 1]), lib.cdtpy_free, bufs[i].len),
                             bufs[i].len) for i in range(so.nbuffers)]
    rc = lib.cdt_decoder_bind(rx.decoder, so, 1, _sobj_type)
    if rc != 0:
        lib.cdt_sobj_release(so)
    return rc


def _limits_text(max_bytes, max_regions):
    if max_bytes >= 0 and max_regions >= 0:
        return "max_bytes=%d and max_regions=%d" % (max_bytes, max_regions)
    if max_bytes >= 0:
        return "max_bytes=%d" % max_bytes
    return "max_regions=%d" % max_regions


def _open_decoder(ptr, n, max_bytes, max_regions):
    """A decoder on a complete header, with limits: (decoder, info)."""
    params = _NULL
    if max_bytes >= 0 or max_regions >= 0:
        params = ffi.new("cdt_decoder_params *")
        if max_bytes >= 0:
            params.field_mask |= lib.CDT_DECODER_PARAM_MAX_FRAME_BYTES
            params.max_frame_bytes = max_bytes
        if max_regions >= 0:
            params.field_mask |= lib.CDT_DECODER_PARAM_MAX_REGIONS
            params.max_regions = max_regions
    dp = ffi.new("cdt_decoder *")
    rc = lib.cdt_decoder_create_advanced(ptr, n, params, dp)
    if rc == lib.CDT_ERR_LIMIT:
        _raise(rc, "the frame header announces more than %s" % _limits_text(max_bytes, max_regions))
    if rc < 0:
        _raise(rc, "cdt_decoder_create_advanced")
    dec = dp[0]
    info = ffi.new("cdt_frame_info *")
    info.field_mask = lib.CDT_FRAME_INFO_ALL
    rc = lib.cdt_decoder_info(dec, info)
    if rc < 0:
        lib.cdt_decoder_free(dec)
        _raise(rc, "cdt_decoder_info")
    # a validated header over a limit: never allocate past it
    if max_bytes >= 0 and info.frame_size > max_bytes:
        lib.cdt_decoder_free(dec)
        _raise(lib.CDT_ERR_LIMIT, "the frame announces %d bytes, max_bytes is %d"
               % (info.frame_size, max_bytes))
    if max_regions >= 0 and info.region_count > max_regions:
        lib.cdt_decoder_free(dec)
        _raise(lib.CDT_ERR_LIMIT, "the frame announces %d buffers, max_regions is %d"
               % (info.region_count, max_regions))
    return dec, info


def _limit_arg(v, what):
    v = _int(v, what)
    if not -(1 << 63) <= v < 1 << 63:
        raise OverflowError("%s does not fit a 64-bit integer" % what)
    return v


def decode(data, alloc=None, inplace=False, max_bytes=-1, max_regions=-1):
    """decode(data, alloc=None, inplace=False, max_bytes=-1, max_regions=-1) -> (stream,
    buffers)"""
    if _sobj_type is None:
        raise RuntimeError("cdtypes' cffi backend was not initialised")
    inplace = bool(inplace)
    max_bytes = _limit_arg(max_bytes, "max_bytes")
    max_regions = _limit_arg(max_regions, "max_regions")
    src = _writable(data) if inplace else ffi.from_buffer(data)
    rx = _Rx(alloc)
    dec = None
    so = None
    try:
        n = len(src)
        if n < _HEADER:
            _raise(lib.CDT_ERR_FRAME_TRUNCATED, "%d bytes cannot hold a frame header" % n)
        if max_bytes >= 0 and n > max_bytes:
            _raise(lib.CDT_ERR_LIMIT, "the data has %d bytes, max_bytes is %d" % (n, max_bytes))
        dec, info = _open_decoder(src, n, max_bytes, max_regions)
        if info.frame_size > n:  # check before allocating what the header announces
            _raise(lib.CDT_ERR_FRAME_TRUNCATED, "the header announces %d bytes, %d were given"
                   % (info.frame_size, n))
        if info.frame_size < n:
            _raise(lib.CDT_ERR_FRAME_MALFORMED, "%d bytes after the end of the frame"
                   % (n - info.frame_size))
        rx.decoder = dec
        if inplace:
            mv = memoryview(data)
            if mv.ndim != 1 or mv.itemsize != 1 or mv.format not in ("B", "b", "c"):
                mv = mv.cast("B")
            rx.inplace, rx.inplace_mv, rx.inplace_len = src, mv, n
        so = ffi.new("cdt_sobj *")
        rc = _prepare(rx, so)
        if rc != 0:
            so = None
            rx.fail(rc, "cdt_sobj_recv_prepare")
        if inplace:
            # the regions already lie in data: the decoder checks the header, takes the
            # stream, and checks the padding between the parts; the regions are only marked
            rc = lib.cdtpy_decode_inplace(dec, src, info.header_size + info.packed_size,
                                          info.region_count)
        else:
            rc = lib.cdt_decoder_write(dec, 0, src, n)
        if rc == 0:
            rc = lib.cdt_decoder_finish(dec)
        if rc != 0:
            _raise(rc, "cdt_decoder_write")
        return rx.result()
    finally:
        if dec is not None:
            lib.cdt_decoder_free(dec)
        if so is not None:
            lib.cdt_sobj_release(so)
        rx.clear()
        ffi.release(src)


def stream_needs_check(stream):
    """Whether the stream could hold an over-long BYTEARRAY8 (then check it before loading)."""
    c = ffi.from_buffer(stream)
    try:
        return bool(lib.cdtpy_stream_needs_check(c, len(c)))
    finally:
        ffi.release(c)


# ---- UCX requests -----------------------------------------------------------------------------

_requests = weakref.WeakValueDictionary()  # prepare_arg -> receive request
# the prepare_arg of each receive; next() is atomic, where a read and an increment by two
# threads posting receives at once gave both the same key (one receive then found the other's
# request, or none: CanceledError)
_next_key = itertools.count(1)
_kept = []  # sends dropped while the transport still reads their buffers: kept for good


def _no_ucx():
    return ImportError("this libcdt was built without the UCX transport (UCX not found at build "
                       "time)")


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
    if not _have_ucx:
        raise _no_ucx()
    r = UcxRequest(False)
    r._done = True  # until the transport holds it
    r._out = _Out(obj, 5)
    req = ffi.new("cdt_ucx_request *")
    rc = lib.cdt_ucx_isend(ffi.cast("cdt_ucx_ep", ep), r._out.so, 1, _sobj_type, tag, req)
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
    if not _have_ucx:
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


# ---- MPI: a head message plus one message of the large buffers ------------------------------
#
# head = prefix (16 bytes: magic "CDT2", u32 object id, u64 threshold) + the frame's bytes
# without the regions of at least `threshold` bytes; those regions travel together as one more
# message, in frame order (cdtypes/mpi.py sends it). threshold 0: every region travels in the
# head.

_prefix = struct.Struct("<IIQ")


def _separate(n, threshold):
    return threshold > 0 and n >= threshold


def _layout(iovs):
    """(lengths, addresses) of two or more parts, from their (base, len) pairs (cdtypes/mpi.py
    makes the datatype of their one message from them), else None"""
    if len(iovs) < 2:
        return None
    return [n for _, n in iovs], [int(ffi.cast("uintptr_t", b)) for b, _ in iovs]


def mpi_pack(obj, oid, threshold):
    """mpi_pack(obj, oid, threshold) -> (frame, head, parts, layout)"""
    oid = _int(oid, "oid")
    if not 0 <= oid < 1 << 32:
        raise OverflowError("oid does not fit an unsigned 32-bit integer")
    threshold = _limit_arg(threshold, "threshold")
    f = _encode(obj, 5)
    hc = None
    try:
        h = f._h
        size = f._size
        nreg = ffi.new("cdt_count *")
        rc = lib.cdt_frame_region_count(h, nreg)
        if rc < 0:
            _raise(rc, "cdt_frame_head")
        nreg = nreg[0]
        ln, kind, off = ffi.new("cdt_count *"), ffi.new("cdt_kind *"), ffi.new("cdt_count *")
        regions = []
        sep_bytes = 0
        for i in range(nreg):
            rc = lib.cdt_frame_region_info(h, i, ln, kind, off)
            if rc < 0:
                _raise(rc, "cdt_frame_region_info")
            regions.append((ln[0], off[0]))
            if _separate(ln[0], threshold):
                sep_bytes += ln[0]
        head = bytearray(MPI_PREFIX + size - sep_bytes)
        _prefix.pack_into(head, 0, _MPI_MAGIC, oid, threshold if threshold > 0 else 0)
        parts = []
        hc = ffi.from_buffer(head, require_writable=True)
        if sep_bytes == 0:
            f._gather(0, hc + MPI_PREFIX, size)
            return f, head, parts, None
        w = MPI_PREFIX
        iovs = []
        pos = 0  # frame offset copied up to
        iov = ffi.new("cdt_iov *")
        got = ffi.new("cdt_count *")
        for i in range(nreg + 1):
            if i < nreg:
                n, o = regions[i]
                if not _separate(n, threshold):
                    continue  # gathered with what lies before the next separate region
            else:
                n, o = 0, size
            if o > pos:
                f._gather(pos, hc + w, o - pos)
                w += o - pos
            pos = o + n
            if i == nreg:
                break
            rc = lib.cdt_frame_region_iov(h, i, 0, 1, iov, got)
            if rc < 0 or got[0] != 1:
                _raise(rc if rc < 0 else lib.CDT_ERR_UNSUPPORTED, "cdt_frame_region_iov")
            parts.append(_window(iov.base, iov.len, f._mem))
            iovs.append((iov.base, iov.len))
        return f, head, parts, _layout(iovs)
    except BaseException:
        f.close()
        raise
    finally:
        if hc is not None:
            ffi.release(hc)


def _mpi_open(c, n, max_bytes, max_regions):
    """Parse the prefix and open the decoder on the head's frame header:
    (oid, threshold, decoder, info)."""
    if n < MPI_PREFIX or _prefix.unpack_from(ffi.buffer(c, MPI_PREFIX))[0] != _MPI_MAGIC:
        _raise(lib.CDT_ERR_FRAME_MAGIC, "not a cdtypes.mpi message (%d bytes)" % n)
    _, oid, t = _prefix.unpack_from(ffi.buffer(c, MPI_PREFIX))
    threshold = min(t, (1 << 63) - 1)
    if n - MPI_PREFIX < _HEADER:
        _raise(lib.CDT_ERR_FRAME_TRUNCATED, "%d bytes cannot hold a frame header" % (n - MPI_PREFIX))
    dec, info = _open_decoder(c + MPI_PREFIX, n - MPI_PREFIX, max_bytes, max_regions)
    return oid, threshold, dec, info


def mpi_parts(head):
    """mpi_parts(head) -> (oid, [part lengths])"""
    c = ffi.from_buffer(head)
    dec = None
    try:
        oid, threshold, dec, info = _mpi_open(c, len(c), -1, -1)
        lens = []
        ln, kind, off = ffi.new("cdt_count *"), ffi.new("cdt_kind *"), ffi.new("cdt_count *")
        for i in range(info.region_count):
            if lib.cdt_decoder_region_info(dec, i, ln, kind, off) == 0 and _separate(ln[0],
                                                                                 threshold):
                lens.append(ln[0])
        return oid, lens
    finally:
        if dec is not None:
            lib.cdt_decoder_free(dec)
        ffi.release(c)


class MpiIncoming:
    """An object whose head message arrived (cdtypes.mpi)."""

    __slots__ = ("_rx", "_dec", "_so", "_prepared", "_sep")

    def __init__(self, alloc):
        self._rx = _Rx(alloc)
        self._dec = self._so = None
        self._prepared = False
        self._sep = []

    def _free(self):
        if self._dec is not None:
            lib.cdt_decoder_free(self._dec)
        self._dec = None
        if self._prepared:
            lib.cdt_sobj_release(self._so)
        self._prepared = False
        self._rx.unpin()

    def __del__(self):
        self._free()

    def finish(self):
        """Every separate part arrived: check the frame and give (stream, buffers)."""
        if self._dec is None:
            raise ValueError("the object was finished already")
        rc = 0
        for k in self._sep:
            rc = lib.cdt_decoder_region_done(self._dec, k)
            if rc != 0:
                break
        if rc == 0:
            rc = lib.cdt_decoder_finish(self._dec)
        self._free()
        if rc != 0:
            self._rx.stream = self._rx.buffers = None
            _raise(rc, "cdt_decoder_finish")
        return self._rx.result()


def mpi_unpack(head, alloc, max_bytes, max_regions):
    """mpi_unpack(head, alloc, max_bytes, max_regions) -> (incoming, oid, destinations,
    layout)"""
    max_bytes = _limit_arg(max_bytes, "max_bytes")
    max_regions = _limit_arg(max_regions, "max_regions")
    c = ffi.from_buffer(head)
    inc = MpiIncoming(alloc)
    try:
        nc = len(c)
        oid, threshold, inc._dec, info = _mpi_open(c, nc, max_bytes, max_regions)
        dec = inc._dec
        frame = c + MPI_PREFIX
        n = nc - MPI_PREFIX
        ln, kind, off = ffi.new("cdt_count *"), ffi.new("cdt_kind *"), ffi.new("cdt_count *")
        regions = []
        sep_bytes = 0
        for i in range(info.region_count):
            rc = lib.cdt_decoder_region_info(dec, i, ln, kind, off)
            if rc < 0:
                _raise(rc, "cdt_decoder_region_info")
            regions.append((ln[0], off[0]))
            if _separate(ln[0], threshold):
                sep_bytes += ln[0]
                inc._sep.append(i)
        want = info.frame_size - sep_bytes
        if want != n:
            _raise(lib.CDT_ERR_FRAME_TRUNCATED if n < want else lib.CDT_ERR_FRAME_MALFORMED,
                   "the head message has %d frame bytes, its header announces %d" % (n, want))
        rx = inc._rx
        rx.decoder = dec
        so = ffi.new("cdt_sobj *")
        rc = _prepare(rx, so)
        if rc != 0:
            rx.fail(rc, "cdt_sobj_recv_prepare")
        inc._so, inc._prepared = so, True
        dests, iovs = [], []
        # deliver the head's bytes at their frame offsets; name where the separate parts go
        pos = hpos = 0
        iov = ffi.new("cdt_iov *")
        got = ffi.new("cdt_count *")
        nreg = info.region_count
        for i in range(nreg + 1):
            if i < nreg:
                ln_i, o = regions[i]
                if not _separate(ln_i, threshold):
                    continue
            else:
                ln_i, o = 0, info.frame_size
            if o > pos:
                rc = lib.cdt_decoder_write(dec, pos, frame + hpos, o - pos)
                if rc != 0:
                    _raise(rc, "cdt_decoder_write")
                hpos += o - pos
            pos = o + ln_i
            if i == nreg:
                break
            rc = lib.cdt_decoder_region_iov(dec, i, 0, 1, iov, got)
            if rc < 0 or got[0] != 1:
                _raise(rc if rc < 0 else lib.CDT_ERR_UNSUPPORTED, "cdt_decoder_region_iov")
            # the window keeps its memory valid by an export of it (a bytearray from an
            # allocator cannot be resized under it once the receive's own export is released)
            dests.append(_window(iov.base, iov.len, memoryview(rx.buffers[i]), readonly=False))
            iovs.append((iov.base, iov.len))
        return inc, oid, dests, _layout(iovs)
    except BaseException:
        inc._free()
        raise
    finally:
        ffi.release(c)

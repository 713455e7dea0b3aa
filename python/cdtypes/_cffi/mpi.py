"""MPI: a head message plus one message of the large buffers (as _ext/mpi.c)."""
import struct
from pickle import PickleBuffer

from .._cffi_ext import ffi, lib
from .buffer import _PYPY, _window, gc_alloc
from . import module
from .frame import Frame, _encode_pickled
from .module import _HEADER, _MPI_MAGIC, MPI_PREFIX, _int, _raise
from .send import _dumps
from .receive import _Rx, _limit_arg, _open_decoder, _prepare, stream_plain

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


# bytes a head needs beyond its stream when the object has no out-of-band buffer (prefix and
# frame header, with room to spare; a larger head is asked for again at its size)
_INBAND_SPARE = MPI_PREFIX + _HEADER + 64


def _pack_inband(stream, oid, threshold):
    """The head of an object whose stream has no out-of-band buffer, in one C call
    (cdtpy_mpi_pack_inband says why)."""
    n = len(stream)
    head = bytearray(n + _INBAND_SPARE)
    c = ffi.from_buffer(head)  # released at once (no with: its two calls cost 0.2 us here)
    size = lib.cdtpy_mpi_pack_inband(stream, n, oid, threshold, c, n + _INBAND_SPARE)
    ffi.release(c)
    if size > n + _INBAND_SPARE:
        head = bytearray(size)
        with ffi.from_buffer(head) as c:
            size = lib.cdtpy_mpi_pack_inband(stream, n, oid, threshold, c, size)
    if size < 0:
        _raise(size, "cdt_frame_encode")
    del head[size:]
    return head


def _copied_frame(size):
    """The Frame mpi_pack returns for a head that holds the whole object: closed already (the
    head is a copy; nothing else to keep), its size the frame's."""
    f = Frame.__new__(Frame)
    f._h = f._mem = None
    f._size = size
    return f


def _own_part(pbufs, i, iov):
    """PyPy: region i as a read-only view of its own pickle buffer when it is that buffer's
    memory (it is: the frame references the buffers), else None. The view keeps the object
    alive by itself; a _window would keep it alive through ffi.gc destructors, which PyPy runs
    only after a major collection, so that an array received and sent on (a worker's
    result) lived until the second one (gc_alloc says why that matters)."""
    if not _PYPY or i >= len(pbufs):
        return None
    raw = pbufs[i].raw()
    with ffi.from_buffer(raw) as c:
        same = c == ffi.cast("char *", iov.base) and len(c) == iov.len
    return raw.toreadonly() if same else None


def mpi_pack(obj, oid, threshold):
    """mpi_pack(obj, oid, threshold) -> (frame, head, parts, layout). An object that pickles
    without an out-of-band buffer is packed in one C call, its frame returned closed."""
    return _pack(obj, oid, threshold)[:4]


def mpi_pack_own(obj, oid, threshold):
    """mpi_pack_own(obj, oid, threshold) -> mpi_pack's four + (stream, buffers) for
    pickle.loads to make the sender's own copy from (as _ext/mpi.c's): the stream it pickled
    (no second decoding of its head), the pickle buffers copied into memory of their own as a
    receive allocates it (None: none); (None, None) when the object has parts. The frame of
    an object without parts is returned closed (the head, the stream and the buffers are
    copies; closing it again does nothing)."""
    f, head, parts, layout, stream, pbufs = _pack(obj, oid, threshold)
    if parts:
        return f, head, parts, layout, None, None
    if not pbufs:
        return f, head, parts, layout, stream, None
    try:
        rx = _Rx(gc_alloc())
        for i, pb in enumerate(pbufs):
            raw = pb.raw() if isinstance(pb, PickleBuffer) else memoryview(pb).cast("B")
            n = raw.nbytes
            dest = rx.part(i, n)
            if n:
                ffi.memmove(dest, raw, n)
        rx.unpin()
    finally:
        f.close()
    return f, head, parts, layout, stream, rx.buffers


def _pack(obj, oid, threshold):
    """mpi_pack's four, the stream and the pickle buffers"""
    if type(oid) is not int:  # plain ints (every caller's) skip the conversions' calls
        oid = _int(oid, "oid")
    if not 0 <= oid < 1 << 32:
        raise OverflowError("oid does not fit an unsigned 32-bit integer")
    if type(threshold) is not int or not -(1 << 63) <= threshold < 1 << 63:
        threshold = _limit_arg(threshold, "threshold")
    if module._sobj_type is None:
        raise RuntimeError("cdtypes' cffi backend was not initialised")
    pbufs = []
    stream = _dumps(obj, 5, pbufs.append)
    if not pbufs and type(stream) is bytes:
        head = _pack_inband(stream, oid, threshold)
        return _copied_frame(len(head) - MPI_PREFIX), head, [], None, stream, pbufs
    f = _encode_pickled(stream, pbufs)
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
            return f, head, parts, None, stream, pbufs
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
            parts.append(_own_part(pbufs, i, iov) or _window(iov.base, iov.len, f._mem))
            iovs.append((iov.base, iov.len))
        return f, head, parts, _layout(iovs), stream, pbufs
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
    if lib.cdtpy_mpi_head_regions(c, len(c)) == 0:  # no regions: one C call
        ffi.release(c)
        return _prefix.unpack_from(head)[1], []
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

    def finish_plain(self):
        """finish() and stream_plain(stream, len(buffers)) -> (stream, buffers, plain)."""
        stream, buffers = self.finish()
        return stream, buffers, stream_plain(stream, len(buffers))


class _Whole:
    """An object whose head held it whole (no out-of-band buffer): decoded and checked
    already; finish() gives its stream, once, as MpiIncoming.finish does; finish_plain() with
    whether it is plain, scanned in the C call that decoded it."""

    __slots__ = ("_stream", "_plain")

    def __init__(self, stream, plain):
        self._stream = stream
        self._plain = plain

    def finish(self):
        stream, self._stream = self._stream, None
        if stream is None:
            raise ValueError("the object was finished already")
        return stream, []

    def finish_plain(self):
        stream, buffers = self.finish()
        return stream, buffers, self._plain


def mpi_unpack(head, alloc, max_bytes, max_regions):
    """mpi_unpack(head, alloc, max_bytes, max_regions) -> (incoming, oid, destinations,
    layout)"""
    if type(max_bytes) is not int or not -(1 << 63) <= max_bytes < 1 << 63:
        max_bytes = _limit_arg(max_bytes, "max_bytes")
    if type(max_regions) is not int or not -(1 << 63) <= max_regions < 1 << 63:
        max_regions = _limit_arg(max_regions, "max_regions")
    c = ffi.from_buffer(head)
    nc = len(c)
    # a head without out-of-band buffers: checked, decoded and scanned in one C call, which
    # returns the stream's length, whether it is plain and the id as one int; the stream is the
    # head's last bytes, copied from there (no struct to make, no memory handed back to free)
    r = lib.cdtpy_mpi_unpack_inband(c, nc, max_bytes, max_regions)
    if r >= 0:
        try:
            stream = ffi.buffer(c)[nc - (r >> 33):]  # bytes
        finally:
            ffi.release(c)
        return _Whole(stream, bool(r >> 32 & 1)), r & 0xFFFFFFFF, [], None
    own = gc_alloc() if alloc is None else None  # PyPy: memory freed with its array
    inc = MpiIncoming(own or alloc)
    try:
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
            # (gc_alloc's buffers are kept valid by the rebuilt object, and cannot be resized)
            dests.append(rx.buffers[i] if own else
                         _window(iov.base, iov.len, memoryview(rx.buffers[i]), readonly=False))
            iovs.append((iov.base, iov.len))
        return inc, oid, dests, _layout(iovs)
    except BaseException:
        inc._free()
        raise
    finally:
        ffi.release(c)

"""The receive side: memory from the header, then the decoder; decode (as _ext/receive.c)."""
import sys

from .._cffi_ext import ffi, lib
from . import module
from .buffer import _new, _writable
from .module import _HEADER, _NULL, ERR_PY_EXCEPTION, _int, _raise

_ALLOC_DEFAULT = ffi.addressof(lib, "cdtpy_alloc_default")  # a function pointer on every interpreter

# A stream of at least this many bytes is received into a bytearray, handed to pickle as it is
# (no copy into a bytes object first); on CPython the last one is kept and handed out again
# when nothing else holds it, so a run of large objects does not fault fresh pages in every
# time (as _ext/receive.c's rx_stream_new, which says why). Smaller streams are bytes objects.
_STREAM_REUSE_MIN = 65536
_spare = [None]
_getrefcount = getattr(sys, "getrefcount", None)  # CPython; PyPy has no reference counts


def _unheld_refs():
    """What sys.getrefcount says of an object that only a list slot and a local hold."""
    box = [bytearray(1)]
    held = box[0]
    return _getrefcount(held)


_UNHELD = _unheld_refs() if _getrefcount is not None else None


def _stream_bytearray(nbytes):
    """A bytearray of nbytes for a large stream: the spare one when nothing else holds it."""
    held = _spare[0]
    if held is not None and len(held) == nbytes and _getrefcount(held) == _UNHELD:
        return held
    held = bytearray(nbytes)
    if _UNHELD is not None:
        _spare[0] = held
    return held


# ---- receive side: memory from the header, then the decoder ---------------------------------


class _Rx:
    """One receive: the allocator, what it gave, and the limits to check first."""

    __slots__ = ("alloc", "stream", "nstream", "buffers", "pins", "inplace", "inplace_mv",
                 "inplace_len", "decoder", "exc", "max_bytes", "max_regions", "seen")
    # stream: a char[] (copied into bytes by result()) or, from _STREAM_REUSE_MIN bytes, the
    # bytearray the decoder writes into (pinned in pins until the receive ends)

    def __init__(self, alloc, max_bytes=-1, max_regions=-1):
        self.alloc = alloc
        self.stream = self.inplace = self.inplace_mv = self.decoder = self.exc = None
        self.seen = None
        self.nstream = self.inplace_len = 0
        self.buffers, self.pins = [], []
        self.max_bytes, self.max_regions = max_bytes, max_regions

    def part(self, index, nbytes):
        """One part's memory: its address."""
        if index < 0:  # the pickle stream, copied by the decoder
            self.nstream = nbytes
            if nbytes >= _STREAM_REUSE_MIN:
                return self.stream_into(_stream_bytearray(nbytes))
            self.stream = _new("char[]", nbytes)
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

    def stream_into(self, held):
        """The stream goes into the bytearray ``held``: its address (pinned until unpin)."""
        c = _writable(held)
        self.pins.append(c)
        self.stream = held
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
        if code == ERR_PY_EXCEPTION and self.exc is not None and module._alloc_error is not None:
            exc, self.exc = self.exc, None
            raise module._alloc_error(exc)
        _raise(code, what)

    def result(self):
        stream = self.stream
        if stream is None:
            stream = b""
        elif type(stream) is not bytearray:
            stream = ffi.unpack(stream, self.nstream)
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
        rc = lib.cdt_decoder_bind(rx.decoder, so, 1, module._sobj_type)
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
    if so.inband_len >= _STREAM_REUSE_MIN:
        # every part is owned above, so a failure here leaks nothing; the decoder then writes
        # the stream into a bytearray (the adapter frees none of the parts), and the C block
        # goes back to the cache at once (ffi.release runs its destructor)
        block = rx.stream
        so.inband = rx.stream_into(_stream_bytearray(so.inband_len))
        ffi.release(block)
    rc = lib.cdt_decoder_bind(rx.decoder, so, 1, module._sobj_type)
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
    if module._sobj_type is None:
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
    if type(stream) is bytes:  # passed as it is: no export to make and release (about 0.6 us)
        return bool(lib.cdtpy_stream_needs_check(stream, len(stream)))
    c = ffi.from_buffer(stream)
    try:
        return bool(lib.cdtpy_stream_needs_check(c, len(c)))
    finally:
        ffi.release(c)


def stream_plain(stream, nbuf):
    """Whether pickle loads the stream, given nbuf out-of-band buffers, without running code
    and without raising (docs/MPI.md §14.5; the C walk of _ext/pickle_plain.h)."""
    if nbuf < 0:
        return False
    if type(stream) is bytes:  # as stream_needs_check
        return bool(lib.cdtpy_pickle_plain(stream, len(stream), nbuf))
    c = ffi.from_buffer(stream)
    try:
        return bool(lib.cdtpy_pickle_plain(c, len(c), nbuf))
    finally:
        ffi.release(c)

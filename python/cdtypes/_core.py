"""pickle protocol 5 onto the serialized-object adapter (libcdt/include/cdt_sobj.h): the Python
layer; the work per object runs in the backend (cdtypes._backend: the C extension), a constant
number of calls per object.

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
from ._backend import impl as _b
from ._lib import lib

__all__ = ["Frame", "Buffer", "dumps", "loads", "safe_loads", "Limits", "default_alloc", "ALIGN"]

_decode = _b.decode

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


Frame = _b.Frame  # Frame(handle, pins, buffers) adopts a frame cdt_frame_encode made elsewhere
Buffer = _b.Buffer


def dumps(obj, *, protocol=5):
    """Serialize ``obj`` into a Frame: the pickle stream travels packed, every PickleBuffer
    (NumPy arrays, bytearray wrapped in PickleBuffer, ...) as a zero-copy region."""
    return _b.dumps(obj, protocol)


_pickle_loads = pickle.loads
_needs_check = _b.stream_needs_check


def foreign_writer(stream):
    """None when ``stream`` (a frame's packed stream) starts as cdtypes' pickle streams do
    (PROTO 2-5: 80 0x); else what wrote it, as far as its first bytes say. Only called once
    pickle has failed, so it costs the fast path nothing."""
    head = bytes(memoryview(stream)[:16])
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return None
    if head[:3] == b"7JL":
        who = "Julia's CDTypes.jl (its stream is a Julia Serialization stream, header 37 4a 4c)"
    elif len(head) >= 8:
        who = ("a C custom type or Rust's cdtypes (a Rust stream starts with its type's 64-bit "
               "fingerprint, here 0x%016x: receive it as the Rust type whose Schema has it)"
               % int.from_bytes(head[:8], "little"))
    else:
        who = "a C custom type or another binding"
    return ("the frame was not written by cdtypes' Python side: its packed stream (%d bytes, "
            "starting %s) is not a pickle stream (cdtypes writes protocol 5: 80 05); it comes "
            "from %s, and only a receiver with the writer's type can read it"
            % (len(memoryview(stream)), head[:8].hex(" ") or "empty", who))


def _unpickle(stream, buffers, policy=None, strict=False, raw=False):
    """Rebuild the object. The stream is checked first without running it (``strict``, for
    untrusted input: every length and memo index; otherwise what would make pickle fail inside
    an allocation: a BYTEARRAY8 longer than the stream, where CPython frees a half-made
    bytearray and prints "deallocated bytearray object has exported buffers"), then
    unpickled, with only the globals of ``policy`` (a Restricted) when given. What pickle
    raises while rebuilding (a ``__setstate__`` that raises, ...) becomes UnpicklingFailed
    with the original as ``__cause__``; with ``raw`` (mpi4py.util.pkl5's API, which raises
    what pickle raises) it propagates itself, with its own traceback."""
    try:
        if strict:
            _stream.check_stream(stream, True)
        elif _needs_check(stream):
            _stream.check_stream(stream, False)
        if policy is None:
            return _pickle_loads(stream, buffers=buffers)
        return policy.loads(stream, buffers)
    except _restricted.Refused as e:
        raise _lib.ForbiddenError(None, "refused by the allow-list: %s" % (e,)) from e
    except _stream.StreamError as e:
        foreign = foreign_writer(stream)
        if foreign is not None:
            raise _lib.ForeignFrameError(None, foreign) from e
        raise _lib.UnpicklingFailed(None, "malformed pickle stream: %s" % (e,)) from e
    except Exception as e:
        if raw:
            raise
        foreign = foreign_writer(stream)
        if foreign is not None:
            raise _lib.ForeignFrameError(None, foreign) from e
        raise _lib.UnpicklingFailed(None, "pickle could not rebuild the object: %r" % (e,)) from e


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

    __slots__ = {
        "max_bytes": "Largest frame accepted, in bytes (header, stream, padding, buffers); "
        "None: any.",
        "max_regions": "Most out-of-band buffers a frame may have; None: any.",
    }

    def __init__(self, max_bytes=None, max_regions=None):
        self.max_bytes = _limit(max_bytes, "max_bytes")
        self.max_regions = _limit(max_regions, "max_regions")

    @property
    def any(self):
        """True when a limit is set."""
        return self.max_bytes is not None or self.max_regions is not None

    def describe_set(self):
        """The limits in force, for a refusal whose frame header the caller never saw."""
        set_ = ["%s=%d" % (k, v) for k, v in
                (("max_bytes", self.max_bytes), ("max_regions", self.max_regions)) if v is not None]
        return "the frame exceeds the receiver's limits (%s)" % ", ".join(set_)

    def codes(self):
        """(max_bytes, max_regions) for the backend, -1 where there is no limit."""
        return (-1 if self.max_bytes is None else self.max_bytes,
                -1 if self.max_regions is None else self.max_regions)

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
        """Why a validated header (cdt_frame_info) is over the limits, in words."""
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
    if allowed is None and max_bytes is None and max_regions is None:  # trusted: the fast path
        stream, buffers = _decode(data, alloc, inplace)
        return _unpickle(stream, buffers)
    limits = Limits(max_bytes, max_regions)
    policy = _policy(allowed)
    stream, buffers = _decode(data, alloc, inplace, *limits.codes())
    return _unpickle(stream, buffers, policy, True)


def safe_loads(data, *, allowed=True, **kwargs):
    """``loads`` for frames from peers that are not trusted: unpickles with an allow-list
    (default: cdtypes.Restricted(), builtins values, standard containers, NumPy arrays). Pass
    ``max_bytes`` / ``max_regions`` as well to bound what a frame may make this process
    allocate. See docs/SECURITY.md."""
    if allowed is None:
        raise ValueError("safe_loads needs an allow-list (allowed=None would run plain pickle)")
    return loads(data, allowed=allowed, **kwargs)

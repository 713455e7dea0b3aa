"""Low-level layer: ctypes declarations of the libcdt functions this package uses.

Every declaration here names a function of the C ABI list (bindings/abi.txt) with the same number
of parameters; tests/test_abi.py checks that. Status codes become exceptions (``CdtError`` and
its subclasses) carrying the library's own message (cdt_strerror) and the code's name
(cdt_err_name).
"""

import ctypes
import os

__all__ = [
    "lib",
    "load_ucx",
    "DECLARED",
    "check",
    "CdtError",
    "InvalidArgumentError",
    "NoMemoryError",
    "OverflowError_",
    "UnsupportedError",
    "OrderError",
    "TruncatedError",
    "CallbackError",
    "FrameError",
    "FrameMagicError",
    "FrameVersionError",
    "FrameMalformedError",
    "FrameTruncatedError",
    "FrameMismatchError",
    "ByteOrderError",
    "IncompleteError",
    "TransportError",
    "PeerError",
    "CanceledError",
    "CdtTimeoutError",
    "BusyError",
    "UnpicklingFailed",
    "ForeignFrameError",
    "ForbiddenError",
    "LimitError",
    "CDT_ERR_LIMIT",
]

# libcdt is two libraries: the core (types, engine, frames), which `import cdtypes` and
# cdtypes.mpi load and which links no UCX, and the UCX transport, loaded by cdtypes.ucx only
# (load_ucx), so a process that never imports cdtypes.ucx maps no UCX library (its MPI library
# may use a UCX of its own). CDTYPES_LIBCDT names another core; the transport is the file
# libcdtypes-ucx.so beside it unless CDTYPES_LIBCDT_UCX names one.
_here = os.path.dirname(os.path.abspath(__file__))
_path = os.environ.get("CDTYPES_LIBCDT") or os.path.join(_here, "libcdtypes.so")
_ucx_path = os.environ.get("CDTYPES_LIBCDT_UCX") or os.path.join(
    os.path.dirname(os.path.abspath(_path)), "libcdtypes-ucx.so")
lib = ctypes.CDLL(_path)

# --- C types ---------------------------------------------------------------------------------

cdt_count = ctypes.c_int64
cdt_kind = ctypes.c_int  # enum
c_void_p = ctypes.c_void_p
P = ctypes.POINTER

CDT_KIND_BYTE = 1
CDT_FRAME_FIXED_HEADER_SIZE = 48
CDT_ERR_USER_BASE = -1000
CDT_ERR_PY_EXCEPTION = CDT_ERR_USER_BASE - 1  # a Python callback raised: see the chained cause
CDT_ERR_LIMIT = -25  # a limit set by the receiver was exceeded
CDT_DECODER_PARAM_MAX_FRAME_BYTES = 1 << 0
CDT_DECODER_PARAM_MAX_REGIONS = 1 << 1


class cdt_iov(ctypes.Structure):
    _fields_ = [("base", c_void_p), ("len", cdt_count)]


CDT_FRAME_INFO_ALL = 0x7F  # every field of cdt_frame_info below
CDT_UCX_RECV_INFO_ALL = 0x1F  # every field of cdt_ucx_recv_info below
CDT_SOBJ_FIELD_ALLOC = 1 << 0


class cdt_frame_info(ctypes.Structure):
    """Set field_mask (CDT_FRAME_INFO_ALL) before asking: cdt_frame_info() does it."""

    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("version", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("header_size", cdt_count),
        ("packed_size", cdt_count),
        ("region_count", cdt_count),
        ("region_bytes", cdt_count),
        ("frame_size", cdt_count),
    ]

    def __init__(self, field_mask=CDT_FRAME_INFO_ALL):
        super().__init__(field_mask=field_mask)


class cdt_frame_params(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64), ("region_threshold", cdt_count)]


class cdt_decoder_params(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("max_frame_bytes", cdt_count),
        ("max_regions", cdt_count),
    ]


class cdt_sobj_buffer(ctypes.Structure):
    _fields_ = [("base", c_void_p), ("len", cdt_count), ("kind", cdt_kind)]


# int cdt_sobj_alloc_func_t(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
cdt_sobj_alloc_func_t = ctypes.CFUNCTYPE(
    ctypes.c_int, c_void_p, cdt_count, cdt_count, cdt_kind, P(c_void_p)
)


class cdt_sobj(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("inband", c_void_p),
        ("inband_len", cdt_count),
        ("buffers", P(cdt_sobj_buffer)),
        ("nbuffers", cdt_count),
        ("alloc", cdt_sobj_alloc_func_t),
        ("alloc_user", c_void_p),
    ]


# --- declarations: name -> (restype, argtypes); checked against bindings/abi.txt -----------

_int = ctypes.c_int
DECLARED = {
    "cdt_version_number": (ctypes.c_uint, []),
    "cdt_version_string": (ctypes.c_char_p, []),
    "cdt_strerror": (ctypes.c_char_p, [_int]),
    "cdt_err_name": (ctypes.c_char_p, [_int]),
    # frames (send side)
    "cdt_frame_encode": (_int, [c_void_p, cdt_count, c_void_p, P(cdt_frame_params), P(c_void_p)]),
    "cdt_frame_size": (_int, [c_void_p, P(cdt_count)]),
    "cdt_frame_head": (_int, [c_void_p, P(c_void_p), P(cdt_count)]),
    "cdt_frame_region_count": (_int, [c_void_p, P(cdt_count)]),
    "cdt_frame_iov_count": (_int, [c_void_p, P(cdt_count)]),
    "cdt_frame_iov": (_int, [c_void_p, cdt_count, cdt_count, P(cdt_iov), P(cdt_count)]),
    "cdt_frame_gather": (_int, [c_void_p, cdt_count, c_void_p, cdt_count]),
    "cdt_frame_free": (_int, [c_void_p]),
    # decoders (receive side)
    "cdt_frame_header_size": (_int, [c_void_p, cdt_count, P(cdt_count)]),
    "cdt_decoder_create": (_int, [c_void_p, cdt_count, P(c_void_p)]),
    "cdt_decoder_create_advanced": (
        _int,
        [c_void_p, cdt_count, P(cdt_decoder_params), P(c_void_p)],
    ),
    "cdt_decoder_info": (_int, [c_void_p, P(cdt_frame_info)]),
    "cdt_decoder_region_info": (
        _int,
        [c_void_p, cdt_count, P(cdt_count), P(cdt_kind), P(cdt_count)],
    ),
    "cdt_decoder_bind": (_int, [c_void_p, c_void_p, cdt_count, c_void_p]),
    "cdt_decoder_write": (_int, [c_void_p, cdt_count, c_void_p, cdt_count]),
    "cdt_decoder_region_done": (_int, [c_void_p, cdt_count]),
    "cdt_decoder_finish": (_int, [c_void_p]),
    "cdt_decoder_free": (_int, [c_void_p]),
    # the serialized-object adapter (libcdt/include/cdt_sobj.h)
    "cdt_sobj_type": (c_void_p, []),
    "cdt_sobj_recv_prepare": (_int, [P(cdt_sobj), c_void_p]),
    "cdt_sobj_release": (None, [P(cdt_sobj)]),
}

for _name, (_res, _args) in DECLARED.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

# --- the UCX transport (libcdt/include/cdt_ucx.h): its own library, loaded by load_ucx() -----

cdt_ucx_tag = ctypes.c_uint64
CDT_UCX_INFINITE = -1
CDT_UCX_TAG_MAX = (1 << 63) - 1
CDT_UCX_CONTEXT_PARAM_WAKEUP = 1 << 2
CDT_UCX_WORKER_PARAM_SENDER_ID = 1 << 0
CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD = 1 << 1
CDT_UCX_WORKER_PARAM_BUFFER_CACHE = 1 << 2
CDT_UCX_WORKER_PARAM_PROTOCOL = 1 << 3
CDT_UCX_PROTOCOLS = {"auto": 0, "split": 1, "single": 2, "auto-single": 3}  # cdt_ucx_protocol
CDT_UCX_LISTENER_PARAM_HOST = 1 << 0
CDT_UCX_LISTENER_PARAM_PORT = 1 << 1
CDT_UCX_RECV_PARAM_PREPARE = 1 << 0
CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES = 1 << 1
CDT_UCX_RECV_PARAM_MAX_REGIONS = 1 << 2
CDT_UCX_RECV_PARAM_REST_TIMEOUT = 1 << 3

# int cdt_ucx_recv_prepare_func_t(void *arg, cdt_decoder decoder)
cdt_ucx_recv_prepare_func_t = ctypes.CFUNCTYPE(ctypes.c_int, c_void_p, c_void_p)


class cdt_ucx_context_params(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("estimated_num_eps", ctypes.c_size_t),
        ("shared_memory", ctypes.c_int),
        ("wakeup", ctypes.c_int),
    ]


class cdt_ucx_worker_params(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("sender_id", ctypes.c_uint32),
        ("zcopy_threshold", cdt_count),
        ("buffer_cache_bytes", ctypes.c_size_t),
        ("protocol", ctypes.c_int),  # cdt_ucx_protocol
        ("fifo_stall_timeout_ms", ctypes.c_int64),
    ]


class cdt_ucx_worker_stats(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("quarantined", ctypes.c_uint64),
        ("quarantine_released", ctypes.c_uint64),
        ("quarantine_dropped", ctypes.c_uint64),
        ("lane_sent", ctypes.c_uint64),
        ("lane_received", ctypes.c_uint64),
        ("lane_split_sent", ctypes.c_uint64),
        ("lane_split_received", ctypes.c_uint64),
    ]


CDT_UCX_WORKER_STATS_ALL = 0x7F


class cdt_ucx_listener_params(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("host", ctypes.c_char_p),
        ("port", ctypes.c_uint16),
    ]


class cdt_ucx_recv_info(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("tag", cdt_ucx_tag),
        ("frame_size", cdt_count),
        ("packed_size", cdt_count),
        ("region_count", cdt_count),
        ("region_bytes", cdt_count),
    ]

    def __init__(self, field_mask=CDT_UCX_RECV_INFO_ALL):
        super().__init__(field_mask=field_mask)


class cdt_ucx_recv_params(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("prepare", cdt_ucx_recv_prepare_func_t),
        ("prepare_arg", c_void_p),
        ("max_frame_bytes", cdt_count),
        ("max_regions", cdt_count),
        ("rest_timeout_ms", cdt_count),
    ]


_i64 = ctypes.c_int64
UCX_DECLARED = {
    "cdt_ucx_version_string": (ctypes.c_char_p, []),
    "cdt_ucx_ep_transports": (ctypes.c_int, [c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    "cdt_ucx_last_error": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]),
    "cdt_ucx_context_create": (_int, [P(cdt_ucx_context_params), P(c_void_p)]),
    "cdt_ucx_context_destroy": (None, [c_void_p]),
    "cdt_ucx_worker_create": (_int, [c_void_p, P(cdt_ucx_worker_params), P(c_void_p)]),
    "cdt_ucx_worker_destroy": (None, [c_void_p]),
    "cdt_ucx_worker_progress": (_int, [c_void_p]),
    "cdt_ucx_worker_fd": (_int, [c_void_p, P(ctypes.c_int)]),
    "cdt_ucx_worker_arm": (_int, [c_void_p]),
    "cdt_ucx_worker_address": (_int, [c_void_p, P(c_void_p), P(ctypes.c_size_t)]),
    "cdt_ucx_worker_address_free": (None, [c_void_p, c_void_p]),
    "cdt_ucx_worker_sender_id": (ctypes.c_uint32, [c_void_p]),
    "cdt_ucx_worker_stats_get": (_int, [c_void_p, P(cdt_ucx_worker_stats)]),
    "cdt_ucx_listener_create": (_int, [c_void_p, P(cdt_ucx_listener_params), P(c_void_p)]),
    "cdt_ucx_listener_port": (_int, [c_void_p, P(ctypes.c_uint16)]),
    "cdt_ucx_listener_accept": (_int, [c_void_p, _i64, P(c_void_p)]),
    "cdt_ucx_listener_destroy": (None, [c_void_p]),
    "cdt_ucx_ep_connect": (_int, [c_void_p, ctypes.c_char_p, ctypes.c_uint16, _i64, P(c_void_p)]),
    "cdt_ucx_ep_create_from_address": (_int, [c_void_p, c_void_p, ctypes.c_size_t, P(c_void_p)]),
    "cdt_ucx_ep_status": (_int, [c_void_p]),
    "cdt_ucx_ep_protocol": (_int, [c_void_p, P(ctypes.c_int)]),
    "cdt_ucx_ep_close": (_int, [c_void_p, _i64]),
    "cdt_ucx_isend": (_int, [c_void_p, c_void_p, cdt_count, c_void_p, cdt_ucx_tag, P(c_void_p)]),
    "cdt_ucx_irecv": (
        _int,
        [c_void_p, c_void_p, cdt_count, c_void_p, cdt_ucx_tag, cdt_ucx_tag,
         P(cdt_ucx_recv_params), P(c_void_p)],
    ),
    "cdt_ucx_request_test": (_int, [c_void_p]),
    "cdt_ucx_request_wait": (_int, [c_void_p, _i64]),
    "cdt_ucx_request_cancel": (_int, [c_void_p]),
    "cdt_ucx_request_recv_info": (_int, [c_void_p, P(cdt_ucx_recv_info)]),
    "cdt_ucx_request_free": (_int, [c_void_p]),
}

# whether the transport library is there (built with UCX); nothing is loaded to tell
HAVE_UCX = os.path.isfile(_ucx_path)
_ucx_lib = None


def _ucx_from():
    """The Python package whose UCX the transport was built against ("" for none: the one the
    dynamic loader finds). A layout without _build_config.py (python/asan.sh) has none."""
    try:
        from ._build_config import UCX_FROM
    except ImportError:
        return ""
    return UCX_FROM


def _load_ucx_wheel():
    """A transport built against the libucx-cu12 wheel (the wheels of cdtypes) names UCX's
    libraries by SONAME only: that wheel's copies must be loaded first (libucx.load_library()),
    so that the dynamic loader takes them, never a system UCX that would be a second copy."""
    if _ucx_from() != "libucx":
        return
    try:
        import libucx
    except ImportError as e:
        raise ImportError("this cdtypes was built against the UCX of PyPI's libucx-cu12 wheel, "
                          "which is not installed: pip install 'cdtypes[ucx]' (or libucx-cu12)"
                          ) from e
    libucx.load_library()


def load_ucx():
    """The UCX transport library (loading it, and with it UCX, on the first call), its
    functions declared. Its core is the one already loaded: the transport's dependency on
    libcdtypes is that library's SONAME, which the loaded core carries. ImportError when the
    transport was not built or cannot be loaded."""
    global _ucx_lib
    if _ucx_lib is not None:
        return _ucx_lib
    if not HAVE_UCX:
        raise ImportError("this libcdt was built without the UCX transport (UCX not found at "
                          "build time): no %s" % _ucx_path)
    _load_ucx_wheel()
    try:
        ucx = ctypes.CDLL(_ucx_path)
    except OSError as e:
        raise ImportError("the UCX transport %s cannot be loaded: %s" % (_ucx_path, e)) from e
    for name, (res, args) in UCX_DECLARED.items():
        fn = getattr(ucx, name)
        fn.restype = res
        fn.argtypes = args
    _ucx_lib = ucx
    return ucx

# --- errors ----------------------------------------------------------------------------------


class CdtError(Exception):
    """A libcdt call failed. ``code`` is the status (negative int, or None when the failure
    came from pickle itself), ``name`` its constant name, ``message`` the library's text."""

    def __init__(self, code, detail=None):
        self.code = code
        self._detail = detail
        if code is None:
            self.name = None
            self.message = detail or "error"
            text = self.message
        else:
            self.name = lib.cdt_err_name(code).decode()
            self.message = lib.cdt_strerror(code).decode()
            text = "%s (%s)" % (self.message, self.name)
            if detail:
                text = "%s: %s" % (detail, text)
        super().__init__(text)

    def __reduce__(self):
        # pickled as (code, detail), which __init__ takes (the default would pass the text as
        # the code): an executor sends a worker's exception back to its caller pickled
        return type(self), (self.code, self._detail), self.__dict__


class InvalidArgumentError(CdtError, ValueError):
    """An argument libcdt refused (CDT_ERR_INVALID_ARG, CDT_ERR_NOT_COMMITTED); also a
    ValueError."""


class NoMemoryError(CdtError, MemoryError):
    """libcdt could not allocate memory (CDT_ERR_NO_MEMORY); also a MemoryError."""


class OverflowError_(CdtError, OverflowError):
    """A count, size or displacement overflows 64 bits (CDT_ERR_OVERFLOW); also an OverflowError."""


class UnsupportedError(CdtError):
    """The operation is not supported here (CDT_ERR_UNSUPPORTED): for example
    ``Worker.fileno()`` on a worker made without ``wakeup=True``."""


class OrderError(CdtError):
    """A call out of order for its operation (CDT_ERR_ORDER)."""


class TruncatedError(CdtError):
    """The data does not fit its destination (CDT_ERR_TRUNCATED)."""


class CallbackError(CdtError):
    """A callback broke its contract (CDT_ERR_CALLBACK)."""


class FrameError(CdtError, ValueError):
    """The bytes are not a valid frame (any of the CDT_ERR_FRAME_* codes)."""


class FrameMagicError(FrameError):
    """Not a libcdt frame: the magic number is wrong (CDT_ERR_FRAME_MAGIC)."""


class FrameVersionError(FrameError):
    """A frame version or flags this libcdt does not read (CDT_ERR_FRAME_VERSION)."""


class FrameMalformedError(FrameError):
    """The header's fields contradict each other or the frame is longer than its
    header announces (CDT_ERR_FRAME_MALFORMED)."""


class FrameTruncatedError(FrameError):
    """The frame is shorter than its header announces (CDT_ERR_FRAME_TRUNCATED)."""


class FrameMismatchError(FrameError):
    """The frame does not match the receiving datatype (CDT_ERR_FRAME_MISMATCH)."""


class ByteOrderError(FrameError):
    """The frame was written with another byte order (CDT_ERR_BYTE_ORDER)."""


class IncompleteError(FrameError):
    """Not all bytes of the operation were delivered (CDT_ERR_INCOMPLETE)."""


class TransportError(CdtError, OSError):
    """The UCX transport failed (CDT_ERR_TRANSPORT); the base of the transport's
    errors, and an OSError."""


class PeerError(TransportError):
    """The peer is unreachable or went away (CDT_ERR_PEER); in the collectives of
    cdtypes.mpi, another rank failed (that rank raised the reason)."""


class CanceledError(TransportError):
    """The request was canceled (CDT_ERR_CANCELED)."""


class CdtTimeoutError(TransportError, TimeoutError):
    """A wait ran past its timeout (CDT_ERR_TIMEOUT); also a TimeoutError."""


class BusyError(TransportError):
    """The resource is busy (CDT_ERR_BUSY): for example a request freed while it is
    still pending."""


class UnpicklingFailed(CdtError):
    """The frame was valid but pickle could not rebuild the object from it (the cause is
    chained)."""


class ForeignFrameError(UnpicklingFailed):
    """The frame is valid but was not written by cdtypes' Python side: its packed stream is
    not a pickle stream (a frame of a C custom type, of Rust's cdtypes or of Julia's
    CDTypes.jl). The message says which writer its first bytes point to (a Rust type's
    fingerprint, a Julia Serialization header)."""


class ForbiddenError(UnpicklingFailed):
    """Restricted mode: the pickle stream names a global (a class or function) that the
    allow-list does not hold, or gives an allowed one arguments it refuses. Nothing the stream
    named was imported or called."""


class LimitError(CdtError):
    """A limit the receiver set (max_bytes, max_regions) was exceeded; checked from the frame
    header (or the transport's announced size) before anything was allocated for the frame."""


_BY_NAME = {
    "CDT_ERR_INVALID_ARG": InvalidArgumentError,
    "CDT_ERR_NO_MEMORY": NoMemoryError,
    "CDT_ERR_OVERFLOW": OverflowError_,
    "CDT_ERR_NOT_COMMITTED": InvalidArgumentError,
    "CDT_ERR_UNSUPPORTED": UnsupportedError,
    "CDT_ERR_ORDER": OrderError,
    "CDT_ERR_TRUNCATED": TruncatedError,
    "CDT_ERR_CALLBACK": CallbackError,
    "CDT_ERR_FRAME_MAGIC": FrameMagicError,
    "CDT_ERR_FRAME_VERSION": FrameVersionError,
    "CDT_ERR_FRAME_MALFORMED": FrameMalformedError,
    "CDT_ERR_FRAME_TRUNCATED": FrameTruncatedError,
    "CDT_ERR_FRAME_MISMATCH": FrameMismatchError,
    "CDT_ERR_BYTE_ORDER": ByteOrderError,
    "CDT_ERR_INCOMPLETE": IncompleteError,
    "CDT_ERR_TRANSPORT": TransportError,
    "CDT_ERR_PEER": PeerError,
    "CDT_ERR_CANCELED": CanceledError,
    "CDT_ERR_TIMEOUT": CdtTimeoutError,
    "CDT_ERR_BUSY": BusyError,
    "CDT_ERR_LIMIT": LimitError,
}


def error(code, detail=None):
    """The exception for status ``code`` (not raised)."""
    cls = _BY_NAME.get(lib.cdt_err_name(code).decode(), CdtError)
    return cls(code, detail)


def check(code, what=None):
    """Raise the exception for a negative status; return the status otherwise."""
    if code < 0:
        raise error(code, what)
    return code


# --- Python buffers as C addresses (no copy) -------------------------------------------------


class Py_buffer(ctypes.Structure):
    _fields_ = [
        ("buf", c_void_p),
        ("obj", c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", c_void_p),
        ("strides", c_void_p),
        ("suboffsets", c_void_p),
        ("internal", c_void_p),
    ]


try:
    _api = ctypes.pythonapi
except AttributeError:  # PyPy: no C API through ctypes; its built-in cffi pins buffers instead
    _api = None
    import cffi

    _ffi = cffi.FFI()
else:
    _api.PyObject_GetBuffer.argtypes = [ctypes.py_object, P(Py_buffer), ctypes.c_int]
    _api.PyObject_GetBuffer.restype = ctypes.c_int
    _api.PyBuffer_Release.argtypes = [P(Py_buffer)]
    _api.PyBuffer_Release.restype = None
_PyBUF_SIMPLE = 0
_PyBUF_WRITABLE = 1


class Pinned:
    """A C-contiguous buffer export of a Python object (bytes, bytearray, memoryview, NumPy
    array, PickleBuffer.raw()): ``address`` and ``nbytes`` stay valid until release()."""

    __slots__ = ("_view", "address", "nbytes", "__weakref__")

    def __init__(self, obj, writable=False):
        self._view = None
        if _api is None:
            c = _ffi.from_buffer(obj, require_writable=writable)
            self._view = c
            self.address = int(_ffi.cast("uintptr_t", c))
            self.nbytes = len(c)
            return
        view = Py_buffer()
        # raises BufferError (not contiguous, not writable) through the C API
        flags = _PyBUF_WRITABLE if writable else _PyBUF_SIMPLE
        _api.PyObject_GetBuffer(obj, ctypes.byref(view), flags)
        self._view = view
        self.address = view.buf or 0
        self.nbytes = view.len

    def release(self):
        if self._view is not None:
            if _api is None:
                _ffi.release(self._view)
            else:
                _api.PyBuffer_Release(ctypes.byref(self._view))
            self._view = None

    def __del__(self):
        self.release()


def pin(obj, writable=False):
    """(keeper, address, nbytes) of a C-contiguous buffer: the address stays valid while
    keeper lives (a ctypes object over a writable buffer, else a Pinned export; call
    release(keeper) to end a Pinned export early)."""
    mv = obj if type(obj) is memoryview else memoryview(obj)
    n = mv.nbytes
    if n > 0 and not mv.readonly and mv.c_contiguous:
        keeper = ctypes.c_char.from_buffer(mv)
        return keeper, ctypes.addressof(keeper), n
    p = Pinned(obj, writable)
    return p, p.address, p.nbytes


def release(keeper):
    if type(keeper) is Pinned:
        keeper.release()


def view_of(address, nbytes, owner, readonly=True):
    """A memoryview of ``nbytes`` at ``address`` that keeps ``owner`` alive."""
    if nbytes == 0:
        return memoryview(b"")
    arr = (ctypes.c_char * nbytes).from_address(address)
    arr._owner = owner
    mv = memoryview(arr).cast("B")
    return mv.toreadonly() if readonly else mv

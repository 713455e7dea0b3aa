"""cdtypes: send a Python object as ONE message.

pickle protocol 5 splits an object into an in-band stream and out-of-band buffers (NumPy
arrays, ...). cdtypes hands both to libcdt's serialized-object adapter, which frames them as one
message: a header announcing every length, the stream, then the buffers, referenced without a
copy. The receiver allocates every buffer from the header before any data arrives, and NumPy
arrays are rebuilt on that memory::

    frame = cdtypes.dumps(obj)      # Frame: .size, .iov(), .head, .tobytes(), close()
    obj2 = cdtypes.loads(frame.tobytes())

SECURITY: cdtypes.loads (and the mpi/ucx receives) run pickle, which executes code the sender
chose: use them only with peers you trust. For anything else use cdtypes.safe_loads /
allowed=cdtypes.Restricted(...) (an allow-list of classes) together with max_bytes= and
max_regions= (see docs/SECURITY.md).

cdtypes.mpi sends an object as one matched head message (plus one message of its large
buffers) over mpi4py; cdtypes.ucx sends objects over
libcdt's UCX transport (listeners, endpoints, send/recv and their non-blocking variants).
"""

from ._lib import (  # noqa: F401
    BusyError,
    ByteOrderError,
    CallbackError,
    CanceledError,
    CdtError,
    CdtTimeoutError,
    FrameError,
    FrameMagicError,
    FrameMalformedError,
    FrameMismatchError,
    FrameTruncatedError,
    FrameVersionError,
    ForbiddenError,
    ForeignFrameError,
    IncompleteError,
    InvalidArgumentError,
    LimitError,
    NoMemoryError,
    OrderError,
    PeerError,
    TransportError,
    TruncatedError,
    UnpicklingFailed,
    UnsupportedError,
    lib as _clib,
)
from . import _backend, _core, _restricted
from ._core import Buffer, Frame, Limits, default_alloc, dumps, loads, safe_loads  # noqa: F401
from ._restricted import Restricted  # noqa: F401

# The constants below are assigned here, not imported, so that their ``#:`` comments are their
# documentation (Sphinx's autodoc reads them; scripts/python-docs checks they exist).

#: The backend in use: "c" (the C extension, CPython's default) or "cffi" (PyPy's default, and
#: CPython's with CDTYPES_BACKEND=cffi in the environment at import).
backend = _backend.name

#: Every receive buffer starts on this boundary (bytes): a cache line, enough for every dtype.
ALIGN = _core.ALIGN

#: The default allow-list, what ``allowed=True`` means: builtin values, a few standard
#: containers and NumPy data whose dtype holds no Python objects (a Restricted;
#: docs/SECURITY.md has the list).
DEFAULT_ALLOWED = _restricted.DEFAULT

#: The version of this package (and of the libcdt it carries).
__version__ = "0.2.0"


def libcdt_version():
    """Version number of the libcdt actually loaded (major * 10000 + minor * 100 + patch)."""
    return _clib.cdt_version_number()

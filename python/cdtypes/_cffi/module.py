"""The cffi backend's module: libcdt's functions resolved (_init: the core's; _init_ucx: the
transport's, when cdtypes.ucx loads it), the state they set, the constants the other files
share, and the errors (as _ext/module.c for the C extension). The other files read the state as
module._sobj_type, module._have_ucx and module._alloc_error: _init and _init_ucx set it after
they are imported."""
import os

from .._cffi_build import CORE_CALLS
from .._cffi_ext import ffi, lib

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


def _init(path, error, alloc_error):
    """Resolve the core's functions in libcdt's core that the package loaded (its file
    ``path``), and take the functions that build exceptions."""
    global _error, _alloc_error, _sobj_type
    missing = lib.cdtpy_resolve(os.fsencode(path))
    if missing != _NULL:
        raise ImportError("libcdt has no function %s" % ffi.string(missing).decode())
    env = os.environ.get("CDTYPES_BUFFER_CACHE")
    if env:
        lib.cdtpy_cache_limit(int(env))
    t = lib.cdt_sobj_type()
    if t == _NULL:
        raise ImportError("cdt_sobj_type() failed")
    _sobj_type = t
    _error, _alloc_error = error, alloc_error


def _init_ucx(path):
    """Resolve the transport's functions in the UCX transport library (its file ``path``),
    which cdtypes.ucx has loaded; until then the ucx_* functions raise ImportError."""
    global _have_ucx
    missing = lib.cdtpy_resolve_ucx(os.fsencode(path))
    if missing != _NULL:
        raise ImportError("the UCX transport has no function %s" % ffi.string(missing).decode())
    _have_ucx = True


def _raise(code, what=None):
    if _error is None:
        raise RuntimeError("cdtypes' cffi backend was not initialised")
    raise _error(code, what)


def _int(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        if hasattr(v, "__index__"):
            return v.__index__()
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__))
    return v

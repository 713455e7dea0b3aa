"""The backend behind cdtypes' Python layer.

cdtypes._core, cdtypes.ucx and cdtypes.mpi are written once; the work per object is done by a
backend module with a small interface (see the top of _ext/module.c): Frame, Buffer, dumps, decode,
stream_needs_check, ucx_isend, ucx_irecv, mpi_pack, mpi_pack_own, mpi_unpack, mpi_parts, _init,
which takes the libcdt core the package loaded (cdtypes._lib) and the functions that build
exceptions, and _init_ucx, which takes the transport library once cdtypes.ucx has loaded it.

Backends:
  "c"     the CPython C extension cdtypes._ext: the default on CPython
  "cffi"  cdtypes._cffi over the cffi module cdtypes._cffi_ext (API mode): the default on PyPy,
          where the C API is emulated; on CPython it needs the cffi package
CDTYPES_BACKEND=c|cffi forces one; the name in use is cdtypes.backend.
"""
import os
import sys

from . import _lib

__all__ = ["impl", "name", "HAVE_UCX", "BACKENDS", "load_ucx"]

BACKENDS = ("c", "cffi")
DEFAULT = "cffi" if sys.implementation.name == "pypy" else "c"

name = os.environ.get("CDTYPES_BACKEND") or DEFAULT
if name not in BACKENDS:
    raise ImportError("CDTYPES_BACKEND=%r: cdtypes has the backends %s" % (
        name, ", ".join(repr(b) for b in BACKENDS)))

try:
    if name == "c":
        from . import _ext as impl
    else:
        from . import _cffi as impl
except ImportError as e:
    why = {
        "c": "the C extension is built for CPython only (use the 'cffi' backend)"
        if sys.implementation.name != "cpython" else "was the package built without it?",
        "cffi": "the cffi backend needs the cffi package on CPython (pip install cffi) and a "
                "build of cdtypes made with cffi present",
    }[name]
    raise ImportError("cdtypes: the %r backend cannot be loaded (%s): %s" % (name, why, e)) from e


def _alloc_error(exc):
    """The exception for a receive whose allocator (or buffer) failed with ``exc``."""
    err = _lib.CdtError(None, "receive allocator failed: %r" % (exc,))
    err.__cause__ = exc
    return err


# the C extension takes the dlopen handle of the library the package loaded, the cffi backend
# its file (dlopen gives the same copy back)
impl._init(_lib.lib._handle if name == "c" else _lib._path, _lib.error, _alloc_error)
# whether the UCX transport library was built (cdtypes.ucx loads it; nothing is loaded here)
HAVE_UCX = _lib.HAVE_UCX


def load_ucx():
    """Load the UCX transport library (and UCX) and hand its functions to the backend; returns
    the ctypes library. Only cdtypes.ucx calls it."""
    ucx = _lib.load_ucx()
    impl._init_ucx(ucx._handle if name == "c" else _lib._ucx_path)
    return ucx

"""The backend behind cdtypes' Python layer.

cdtypes._core, cdtypes.ucx and cdtypes.mpi are written once; the work per object is done by a
backend module with a small interface (see the top of _ext.c): Frame, Buffer, dumps, decode,
stream_needs_check, ucx_isend, ucx_irecv, mpi_pack, mpi_unpack, mpi_parts, and _init, which
takes the libcdt the package loaded (cdtypes._lib) and the functions that build exceptions.

Backends: "c", the CPython C extension cdtypes._ext. CDTYPES_BACKEND=c forces it; the name in
use is cdtypes.backend.
"""
import os

from . import _lib

__all__ = ["impl", "name", "HAVE_UCX"]

_wanted = os.environ.get("CDTYPES_BACKEND", "c")
if _wanted != "c":
    raise ImportError("CDTYPES_BACKEND=%r: this build of cdtypes has the backends: 'c'" % _wanted)

from . import _ext as impl  # noqa: E402

name = "c"


def _alloc_error(exc):
    """The exception for a receive whose allocator (or buffer) failed with ``exc``."""
    err = _lib.CdtError(None, "receive allocator failed: %r" % (exc,))
    err.__cause__ = exc
    return err


HAVE_UCX = impl._init(_lib.lib._handle, _lib.error, _alloc_error)

"""The cffi backend of cdtypes: the interface of the C extension (see the top of _ext/module.c)
over cdtypes._cffi_ext, a cffi module compiled against libcdt's headers (API mode, see
_cffi_build.py). The backend of PyPy, where the CPython C API is emulated and slow; on CPython
it is chosen with CDTYPES_BACKEND=cffi.

The same calls in the same order as _ext/, with the same checks, messages and exceptions:
  dumps        pickle (protocol 5, buffer_callback, NumPy arrays through cdtypes._arrays)
               -> cdt_sobj -> cdt_frame_encode
  decode       decoder with limits -> buffers allocated from the header -> decoder_write
  ucx_isend    the same cdt_sobj handed to cdt_ucx_isend
  ucx_irecv    cdt_ucx_irecv whose prepare callback allocates the buffers
  mpi_pack     the frame split into a head message and the large buffers (one more message)
  mpi_pack_own mpi_pack and the stream and buffer copies the sender's own copy loads from
  mpi_unpack   the head message decoded, the large buffers' destinations given back

Memory: received buffers come from cdtpy_alloc (64-byte aligned, uninitialised, reused by size
like the C extension's); a Python object's bytes are passed to C through ffi.from_buffer, which
holds the object's buffer export until ffi.release (or its collection). cffi releases the GIL
around every libcdt call; the allocator and prepare callbacks take it back.

Files, one job each, as the C extension's (docs/ARCHITECTURE.md maps both): module.py (_init,
_init_ucx, the state they set, shared constants, errors), buffer.py, send.py, frame.py, receive.py, ucx.py,
mpi.py, mpic.py (the two-process bcast's MPI calls from C, docs/MPI.md §14.5.1); the NumPy reducer and the pickler are cdtypes._arrays's. This file names the interface.
"""
from .._cffi_build import UCX_CALLS
from .buffer import Buffer
from .frame import Frame, dumps
from .module import CALLS, ERR_PY_EXCEPTION, MPI_PREFIX, _init, _init_ucx  # noqa: F401
from .mpi import mpi_pack, mpi_pack_own, mpi_parts, mpi_unpack
from .mpic import (mpic_buffer, mpic_head, mpic_init, mpic_isend, mpic_leaf_end,  # noqa: F401
                   mpic_root_end, mpic_start)
from .receive import decode, stream_needs_check, stream_plain
from .ucx import ucx_irecv, ucx_isend

__all__ = ["Frame", "Buffer", "dumps", "decode", "stream_needs_check", "stream_plain",
           "ucx_isend", "ucx_irecv",
           "mpi_pack", "mpi_pack_own", "mpi_unpack", "mpi_parts", "CALLS", "UCX_CALLS", "ERR_PY_EXCEPTION",
           "MPI_PREFIX"]

"""The two-process bcast's MPI calls from C (docs/MPI.md §14.5.1), as _ext/mpic.c: wrappers of
mpi_calls.h's calls, which both backends compile. cffi releases the GIL around each call."""
from .._cffi_ext import ffi, lib

_exception = None  # mpi4py's MPI.Exception, given to mpic_init


def _error(rc):
    """The exception of a call's code: MPI.Exception(code), or for a call before mpic_init
    (a negative code, CDTPY_MPIC_NOT_SET) the RuntimeError the C extension raises"""
    if rc < 0 or _exception is None:
        return RuntimeError("cdtypes: the MPI calls from C are not set up (mpic_init)")
    return _exception(rc)


def mpic_init(path, hsize, status_size, tag_off, byte, mpi_int, any_tag, exception):
    """-> None when set up, else why the MPI calls from C are off"""
    global _exception
    why = ffi.new("char[]", 256)
    if lib.cdtpy_mpic_init(path.encode(), hsize, status_size, tag_off, byte, mpi_int, any_tag,
                           why, 256) < 0:
        return ffi.string(why).decode()
    _exception = exception
    return None


def mpic_buffer(obj):
    """What the calls below take for a buffer they are given in every call (the agreement's
    five ints, the receiver's scratch): made once, so that no call exports it again"""
    return ffi.from_buffer(obj, require_writable=True)


def mpic_isend(head, dest, tag, comm):
    req = ffi.new("int64_t *")
    c = ffi.from_buffer(head)
    rc = lib.cdtpy_mpic_isend(c, len(c), dest, tag, comm, req)
    if rc != 0:
        raise _error(rc)
    return req[0]


def mpic_start(req):
    rc = lib.cdtpy_mpic_start(req)
    if rc != 0:
        raise _error(rc)


def mpic_root_end(req0, req1, send, mine, theirs):
    s = ffi.new("int64_t *", send)
    return lib.cdtpy_mpic_root_end(req0, req1, s, ffi.cast("int *", mine),
                                   ffi.cast("int *", theirs))


def mpic_leaf_end(theirs, source, tag, comm, req, mine):
    return lib.cdtpy_mpic_leaf_end(ffi.cast("int *", theirs), source, tag, comm, req,
                                   ffi.cast("int *", mine))


def mpic_head(scratch, source, want, comm):
    out = ffi.new("int[3]")
    msg = ffi.new("int64_t *")
    rc = lib.cdtpy_mpic_head(scratch, len(scratch), source, want, comm, out, out + 1, msg,
                             out + 2)
    if rc != 0:
        raise _error(rc)
    return out[0], out[1], (None if out[2] else msg[0])

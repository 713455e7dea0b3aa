"""The two-process bcast's MPI calls from C (docs/MPI.md §14.5.1): whether this process makes
them, and the handles a communicator's lean paths pass to the backend's calls (mpi_calls.h,
compiled into both backends). Checked once per process; a communicator whose error handler is
not MPI.ERRORS_RETURN keeps the Python path on its own. CDTYPES_MPI_C=0 turns it off; it is off
by default for the cffi backend on CPython, where the calls cost more than they save, and
CDTYPES_MPI_C=1 turns it on there."""
import ctypes
import os
import struct
import sys

from mpi4py import MPI

from . import _backend
from ._backend import impl as _b

# a receiver's head of at most this many bytes is received by the C call into the
# communicator's scratch memory and copied out (a small object's head: the case the calls are
# for); a larger one is left matched for the Python path, which receives it in place
SCRATCH = 16384

CFFI_CPYTHON = ("the cffi backend on CPython, whose calls cost more than mpi4py's methods; "
                "CDTYPES_MPI_C=1 turns them on")
_why = None  # why the C path is off in this process; None: on (or not set up yet)
_ready = False
_U64 = 1 << 64


def handle(obj):
    """mpi4py's handle of ``obj`` as the C calls take it, a signed 64-bit value (mpi4py gives
    an unsigned one: MPICH's int handles above 2**31 sign-extended, e.g. 0xffffffff84000000)"""
    h = MPI._handleof(obj)
    return h - _U64 if h >= 1 << 63 else h


def request(h):
    """the mpi4py Request of a handle a C call returned (signed, as handle() gives them)"""
    return MPI.Request.fromhandle(h % _U64)


def error(code):
    """The exception of an MPI error code a C call returned (as mpi4py raises it), or, for a
    negative one (a call before the setup), a RuntimeError"""
    if code < 0:
        return RuntimeError("cdtypes: the MPI calls from C are not set up (mpic_init)")
    return MPI.Exception(code)


def message(h):
    """the mpi4py Message of a handle a C call returned"""
    return MPI.Message.fromhandle(h % _U64)


def _tag_offset():
    """The offset of the tag in an MPI_Status: distinct source, tag and error values set
    through mpi4py, each found at exactly one offset of the status's bytes, else None."""
    size = MPI._sizeof(MPI.Status)
    status = MPI.Status()
    values = {"source": 0x1A2B3C4, "tag": 0x2B3C4D5, "error": 0x3C4D5E6}
    status.Set_source(values["source"])
    status.Set_tag(values["tag"])
    status.Set_error(values["error"])
    raw = ctypes.string_at(MPI._addressof(status), size)
    where = {}
    for name, value in values.items():
        packed = struct.pack("=i", value)
        hits = [i for i in range(0, size - 3) if raw[i:i + 4] == packed]
        if len(hits) != 1:
            return None
        where[name] = hits[0]
    return where["tag"]


def _setup():
    """The process's checks (docs/MPI.md §14.5.1) -> None when the C path is on, else why not"""
    setting = os.environ.get("CDTYPES_MPI_C", "")
    if setting == "0":
        return "CDTYPES_MPI_C=0"
    if setting not in ("", "1"):
        return "CDTYPES_MPI_C=%r is neither 0 nor 1" % setting
    if setting != "1" and _backend.name == "cffi" and sys.implementation.name == "cpython":
        # measured (bench/results/pycoll_findings.md): each cffi call and its out-parameters
        # cost CPython more than mpi4py's compiled methods, 0.5-1 us a bcast
        return CFFI_CPYTHON
    mpic_init = getattr(_b, "mpic_init", None)
    if mpic_init is None:
        return "the backend has no MPI calls from C"
    abi = MPI.Get_abi_version() if hasattr(MPI, "Get_abi_version") else (-1, -1)
    if tuple(abi) != (-1, -1):
        return "mpi4py is built for the standard MPI ABI %r (not tested)" % (tuple(abi),)
    sizes = {MPI._sizeof(t) for t in (MPI.Comm, MPI.Datatype, MPI.Request, MPI.Message)}
    if len(sizes) != 1:
        return "MPI handles of different sizes %s" % sorted(sizes)
    status = MPI._sizeof(MPI.Status)
    tag = _tag_offset()
    if tag is None:
        return "the tag's place in an MPI_Status (%d bytes) was not found" % status
    return mpic_init(MPI.__file__, sizes.pop(), status, tag, handle(MPI.BYTE), handle(MPI.INT),
                     MPI.ANY_TAG, MPI.Exception)


def why_not():
    """None when this process makes the two-process bcast's MPI calls from C, else why not
    (set up at the first call)"""
    global _why, _ready
    if not _ready:
        try:
            _why = _setup()
        except Exception as e:  # a check that cannot be made: the Python path
            _why = "setup failed: %r" % (e,)
        _ready = True
    return _why


class Handles:
    """What one communicator's lean paths pass to the backend's calls: cc's and ac's handles,
    the agreement's five-int buffers and the receiver's scratch memory as the backend takes
    them (made once)."""

    __slots__ = ("cc", "agree", "mine", "answer", "theirs", "scratch", "scratch_c", "reqs",
                 "early")

    def __init__(self, coll):
        self.cc, self.agree = handle(coll.cc), handle(coll.agree)
        mine = coll.lean_mine
        self.mine = _b.mpic_buffer(mine) if mine is not None else None
        self.answer = _b.mpic_buffer(coll._mine)
        self.theirs = _b.mpic_buffer(coll._theirs)
        self.scratch = bytearray(SCRATCH)
        self.scratch_c = _b.mpic_buffer(self.scratch)
        self.reqs = self.early = None  # the handles of coll.lean_reqs / early_send, and them


def _errors_return(comm):
    handler = comm.Get_errhandler()
    try:
        return MPI._handleof(handler) == MPI._handleof(MPI.ERRORS_RETURN)
    finally:
        handler.Free()


def handles(coll):
    """(the Handles of ``coll``'s lean paths, None) or (None, why the C path is off for it)"""
    why = why_not()
    if why is not None:
        return None, why
    for name, comm in (("collective", coll.cc), ("agreement", coll.agree)):
        if not _errors_return(comm):
            return None, "the %s communicator's error handler is not MPI.ERRORS_RETURN" % name
    return Handles(coll), None

"""Run under `mpiexec -n N` (N >= 2): what a receive raises when the object's own code fails
while it is rebuilt (a ``__setstate__`` that raises ZeroDivisionError). cdtypes.mpi's pkl5 API
raises exactly what mpi4py.util.pkl5 raises, for every method (both are run here, side by
side), with the traceback of the code that raised; cdtypes.mpi.recv keeps its wrapper
(UnpicklingFailed) with the original as ``__cause__``; the collectives raise it at every rank
that rebuilt such an object and PeerError at the others."""
import faulthandler
import os
import pickle
import sys
import traceback

import numpy as np
from mpi4py import MPI
from mpi4py.util import pkl5

from cdtypes import mpi
from cdtypes._lib import LimitError, PeerError, UnpicklingFailed

size, rank = MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()
assert size >= 2, "run with 2 or more processes"
faulthandler.dump_traceback_later(
    90 * float(os.environ.get("CDTYPES_WATCHDOG_SCALE", "1")), exit=True)  # python/asan.sh: 4


class Boom:
    """rebuilt by __setstate__, which raises"""

    def __init__(self, big=False):
        self.a = np.zeros(mpi.THRESHOLD if big else 10)  # a parts message, or none

    def __setstate__(self, state):
        1 / 0


def raised(fn):
    """the exception fn() raises (None if it returns), its traceback checked to reach the
    code that raised"""
    try:
        fn()
    except BaseException as e:  # noqa: B902
        where = "".join(traceback.format_tb(e.__traceback__))
        if isinstance(e, ZeroDivisionError):
            assert "__setstate__" in where, where
        return e
    return None


def point_to_point(api, big):
    """-> {method: the exception's type} at rank 1 (None elsewhere)"""
    comm = api.Intracomm(MPI.COMM_WORLD)
    got = {}
    ways = {
        "recv": lambda: comm.recv(None, 0, 5),
        "mprobe().recv": lambda: comm.mprobe(0, 5).recv(),
        "improbe().recv": lambda: next(m for m in iter(lambda: comm.improbe(0, 5), 0)
                                       if m is not None).recv(),
        "mprobe().irecv().wait": lambda: comm.mprobe(0, 5).irecv().wait(),
        "mprobe().irecv().test": lambda: next(
            o for f, o in iter(lambda r=comm.mprobe(0, 5).irecv(): r.test(), 0) if f),
        "Request.waitall": lambda: api.Request.waitall([comm.mprobe(0, 5).irecv()]),
        "Request.testall": lambda: next(
            o for f, o in iter(lambda r=[comm.mprobe(0, 5).irecv()]: api.Request.testall(r), 0)
            if f),
        "sendrecv": lambda: comm.sendrecv(None, 0, 6, None, 0, 5),
    }
    for name, way in ways.items():
        if rank == 0:
            request = comm.isend(Boom(big), 1, 5)
            if name == "sendrecv":
                comm.recv(None, 1, 6)
            request.wait()
        elif rank == 1:
            got[name] = type(raised(way))
        comm.barrier()
    return got


for big in (False, True):
    ours, theirs = point_to_point(mpi, big), point_to_point(pkl5, big)
    assert ours == theirs, (ours, theirs)
    assert rank != 1 or set(ours.values()) == {ZeroDivisionError}, ours

# cdtypes.mpi's own receive: its wrapper, the original chained
if rank == 0:
    mpi.send(Boom(True), 1, 7)
elif rank == 1:
    e = raised(lambda: mpi.recv(0, 7))
    assert isinstance(e, UnpicklingFailed) and isinstance(e.__cause__, ZeroDivisionError), e

# the collectives: ZeroDivisionError where a Boom is rebuilt, PeerError elsewhere
comm = mpi.Intracomm(MPI.COMM_WORLD)
for big in (False, True):
    for root in range(size):
        e = raised(lambda: comm.bcast(Boom(big) if rank == root else None, root))
        assert isinstance(e, ZeroDivisionError), (rank, e)  # the root rebuilds its own too
        e = raised(lambda: comm.gather(Boom(big) if rank == (root + 1) % size else 1, root))
        assert isinstance(e, ZeroDivisionError if rank == root else PeerError), (rank, e)
        e = raised(lambda: comm.scatter([Boom(big)] * size if rank == root else None, root))
        assert isinstance(e, ZeroDivisionError), (rank, e)
    e = raised(lambda: comm.allgather(Boom(big) if rank == 0 else 0))
    assert isinstance(e, ZeroDivisionError), (rank, e)
    e = raised(lambda: comm.alltoall([Boom(big) if rank == 0 else 0] * size))
    assert isinstance(e, ZeroDivisionError), (rank, e)
assert comm.allgather(rank) == list(range(size))

# cdtypes' errors survive pickling (a worker's exception sent back by an executor)
for err in (UnpicklingFailed(None, "x"), LimitError(-25, "the message has 9 bytes")):
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err) and back.code == err.code, back
print("rank %d: ok" % rank)
sys.stdout.flush()

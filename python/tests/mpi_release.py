"""Run under `mpiexec -n N` (N >= 2) with one argument, exit or finalize: what cdtypes.mpi made
for the predefined communicators is freed while MPI is still up (docs/MPI.md §2.2):
COMM_WORLD's parts communicator made at import, and the collective, agreement and parts
communicators of the pkl5 API's collectives on COMM_WORLD and COMM_SELF. exit: the
interpreter exits and mpi4py finalises MPI (after the interpreter is gone, where no Python
code runs); finalize: the application calls MPI.Finalize() itself first (no collective on
COMM_SELF then: its communicators would be left to MPI_Finalize, docs/MPI.md §13.1). Each rank
prints "<rank>: freed: ok" or what is still held."""
import atexit
import faulthandler
import gc
import os
import sys
import weakref

mode = sys.argv[1]
assert mode in ("exit", "finalize"), mode
from mpi4py import MPI  # noqa: E402

held = {}


def report():
    comms, owed = held["comms"], held["owed"]
    live = [name for name, c in comms.items() if c != MPI.COMM_NULL]
    gc.collect()  # PyPy frees the Owed no sooner
    if owed() is not None:
        live.append("the parts communicator's Owed")
    print("%d: %s" % (held["rank"], "freed: ok" if not live else "still held: %s" % live),
          flush=True)


if mode == "exit":
    # registered before cdtypes.mpi is imported, so run after its own exit hook (atexit runs
    # its functions last registered first), and before mpi4py's MPI_Finalize
    atexit.register(report)

import numpy as np  # noqa: E402

from cdtypes import mpi  # noqa: E402

faulthandler.dump_traceback_later(
    90 * float(os.environ.get("CDTYPES_WATCHDOG_SCALE", "1")), exit=True)  # python/asan.sh: 4
world = mpi.Intracomm(MPI.COMM_WORLD)
size, rank = world.Get_size(), world.Get_rank()
assert size >= 2, "run with 2 or more processes"
held["rank"] = rank
big = np.arange(mpi.THRESHOLD // 8 * 4, dtype=np.int64)  # over the threshold: a parts message

# point to point on COMM_WORLD, through its parts communicator
if rank == 0:
    for dest in range(1, size):
        world.send(big, dest, tag=3)
else:
    assert (world.recv(source=0, tag=3) == big).all()
# the collectives on COMM_WORLD and on COMM_SELF (each gets its own communicators)
assert (world.bcast(big if rank == 0 else None, root=0) == big).all()
assert world.allgather(rank) == list(range(size))
selves = ("COMM_WORLD", MPI.COMM_WORLD), ("COMM_SELF", MPI.COMM_SELF)
if mode == "finalize":  # COMM_SELF's would be left to MPI_Finalize (docs/MPI.md §13.1)
    selves = selves[:1]
else:
    assert mpi.Intracomm(MPI.COMM_SELF).bcast(rank, root=0) == rank

coll = sys.modules["cdtypes._mpi_coll_call"]
comms = {"COMM_WORLD's parts communicator": MPI.COMM_WORLD.Get_attr(mpi._KEYVAL)}
for name, comm in selves:
    c = comm.Get_attr(coll._COLL_KEYVAL)
    comms.update({name + "'s collective communicator": c.cc,
                  name + "'s collective parts communicator": c.pc,
                  name + "'s agreement communicator": c.agree})
assert all(c != MPI.COMM_NULL for c in comms.values())
held["comms"] = comms
held["owed"] = weakref.ref(comms["COMM_WORLD's parts communicator"].Get_attr(mpi._OWED_KEYVAL))
del c, comm
world.Barrier()

if mode == "finalize":
    MPI.Finalize()  # COMM_SELF's attributes are deleted first: cdtypes.mpi's hook among them
    report()

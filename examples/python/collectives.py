"""Collectives of Python objects with cdtypes.mpi's pkl5 API (any number of ranks):

    mpiexec.mpich -n 4 python3 examples/python/collectives.py

A program written for mpi4py.util.pkl5 switches by its import line alone; the wire is
cdtypes' own (one matched message per object, large arrays sent once from where they lie and
received in place), bcast is a tree that forwards the packed object, and when one rank fails
every rank raises instead of waiting for ever (docs/PYTHON.md, "Migrating from
mpi4py.util.pkl5")."""
import numpy as np
from mpi4py import MPI

from cdtypes import LimitError, PeerError
from cdtypes.mpi import Intracomm  # was: from mpi4py.util.pkl5 import Intracomm

comm = Intracomm(MPI.COMM_WORLD)
rank, size = comm.Get_rank(), comm.Get_size()

# bcast: rank 0 has the model; every rank receives it, refusing anything larger than 64 MiB
# and any global outside the default allow-list (NumPy arrays, builtins containers)
model = None
if rank == 0:
    model = {"name": "demo", "weights": np.linspace(0.0, 1.0, 1_000_000), "layers": [64, 32]}
model = comm.bcast(model, root=0, max_bytes=64 << 20, allowed=True)

# scatter: one chunk of work per rank, gather: one result per rank back at the root
chunks = np.array_split(np.arange(1_000_000, dtype=np.float64), size) if rank == 0 else None
mine = comm.scatter(chunks, root=0)
results = comm.gather({"rank": rank, "sum": float((mine * model["weights"][:len(mine)]).sum())},
                      root=0)

# allgather and alltoall: every rank's summary to every rank, a message per pair of ranks
summaries = comm.allgather({"rank": rank, "n": len(mine)})
inbox = comm.alltoall([np.full(4, 100 * rank + dest) for dest in range(size)])
assert [int(a[0]) for a in inbox] == [100 * source + rank for source in range(size)]
assert sum(s["n"] for s in summaries) == 1_000_000

# one rank refuses what it is sent: it raises LimitError, every other rank PeerError, and the
# communicator stays usable
try:
    comm.bcast(model, root=0, max_bytes=1024 if rank == size - 1 else None)
    failed = None
except (LimitError, PeerError) as e:
    failed = type(e).__name__
assert size == 1 or failed == ("LimitError" if rank == size - 1 else "PeerError"), failed
assert comm.allgather(rank) == list(range(size))

if rank == 0:
    print("bcast: %s, %d weights on every rank" % (model["name"], len(model["weights"])))
    print("gather: %s" % ", ".join("%d: %.1f" % (r["rank"], r["sum"]) for r in results))
    if size > 1:
        print("rank %d over its limit: LimitError there, PeerError on the others" % (size - 1))
    print("ok")

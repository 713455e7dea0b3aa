"""The MPI roofline of the benchmark's `many` case: the same bytes with mpi4py alone, as one
contiguous NumPy array or as separate 128 KiB NumPy arrays sent or received in place as one
hindexed message (what cdtypes.mpi does with an object's large buffers), in every combination.
Half the median round trip in us, each row repeated (runs interleaved).

    mpiexec.mpich -n 2 python3 bench/python/layout.py [SIZE_BYTES ...]   (default 4 MiB, 64 MiB)
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, peer = comm.rank, 1 - comm.rank
CHUNK = 128 * 1024


def hindexed(bufs):
    dt = MPI.BYTE.Create_hindexed([len(b) for b in bufs], [MPI.Get_address(b) for b in bufs])
    dt.Commit()
    return dt


def run(size, reps=3, iters=30):
    n = size // CHUNK
    one = np.ones(size, np.uint8)  # 4 MiB and more: NumPy puts it on huge pages
    pieces = [np.ones(CHUNK, np.uint8) for _ in range(n)]  # 4 KiB pages, 128 KiB each
    dt = hindexed(pieces)
    msgs = {"one array": [one, MPI.BYTE], "%d arrays" % n: [MPI.BOTTOM, 1, dt]}
    res = {}
    for _ in range(reps):
        for s in msgs:
            for r in msgs:
                ts = []
                for _ in range(iters):
                    comm.Barrier()
                    t0 = time.perf_counter()
                    if rank == 0:
                        comm.Send(msgs[s], peer, 1)
                        comm.Recv(msgs[r], peer, 2)
                    else:
                        comm.Recv(msgs[r], peer, 1)
                        comm.Send(msgs[s], peer, 2)
                    ts.append(time.perf_counter() - t0)
                ts.sort()
                res.setdefault((s, r), []).append(ts[len(ts) // 2] / 2 * 1e6)
    dt.Free()
    if rank == 0:
        for (s, r), v in res.items():
            print("%10d  send %-11s recv %-11s %s us" % (size, s, r, " ".join("%.0f" % x for x in v)))


for size in [int(a) for a in sys.argv[1:]] or [4 << 20, 64 << 20]:
    run(size)

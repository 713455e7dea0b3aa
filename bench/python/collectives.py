"""Collectives of Python objects (run by bench/pycoll/run under mpiexec -n N): cdtypes.mpi's
pkl5 API against mpi4py.util.pkl5 and against mpi4py's buffer collectives moving the same
bytes (the roofline), on COMM_WORLD.

Cases: dict1k - a dict of about 1 KiB (str keys, str / int / float values: no out-of-band
buffer); array64m - one NumPy array of 64 MiB; arrays100 - a list of 100 NumPy arrays of 64 KiB.
Operations: bcast and gather (root 0), scatter (root 0; every item the case's object),
allgather, alltoall (every item the case's object).
Methods:
  cdtypes  cdtypes.mpi.Intracomm (one message per object, packed once, forwarded as received)
  cdtypes-ring  allgather only: cdtypes with its ring forced (ALLGATHER_RING = 2), the
           measurement behind cdtypes.mpi's choice of the direct exchange at these sizes
  pkl5     mpi4py.util.pkl5.Intracomm (pickle 5, a header and one message per buffer)
  buffer   Bcast / Gather / Scatter / Allgather / Alltoall of one preallocated byte buffer per
           object holding as many bytes as the object's pickle stream and buffers: the same
           bytes, no object (dict1k: its pickle stream's length)
Time per call: each rank times `iters` calls between two barriers; the slowest rank's time
divided by iters is one sample; recorded: the median and the minimum of `reps` samples, in
microseconds. With more processes than cores, a process that waits spins on a core another
one needs, and every hand-off between processes can cost a scheduler time slice: the minimum
is then the run that met the fewest such losses.
"""
import argparse
import csv
import pickle
import sys
import time

import numpy as np
from mpi4py import MPI
from mpi4py.util import pkl5

from cdtypes import _mpi_coll
from cdtypes import mpi as cmpi

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
KiB, MiB = 1024, 1024 * 1024
OPS = ("bcast", "gather", "scatter", "allgather", "alltoall")
CASES = ("dict1k", "array64m", "arrays100")
METHODS = ("cdtypes", "cdtypes-ring", "pkl5", "buffer")


def make(case, smoke=False):
    """the case's object; ``smoke``: the same shape, tiny (1 MiB, 4 arrays)"""
    if case == "dict1k":
        return {"key%02d" % i: ("value %d " % i) * 3 if i % 3 else i * 1.5 for i in range(40)}
    if case == "array64m":
        return np.ones((MiB if smoke else 64 * MiB) // 8, dtype=np.float64)
    return [np.ones(64 * KiB // 8, dtype=np.float64) for _ in range(4 if smoke else 100)]


def payload_bytes(obj):
    """what the buffer roofline moves per object: the pickle stream and out-of-band buffers"""
    bufs = []
    stream = pickle.dumps(obj, 5, buffer_callback=bufs.append)
    return len(stream) + sum(b.raw().nbytes for b in bufs)


def object_call(comm, op, obj):
    if op == "bcast":
        return lambda: comm.bcast(obj if rank == 0 else None, 0)
    if op == "gather":
        return lambda: comm.gather(obj, 0)
    if op == "scatter":
        items = [obj] * size
        return lambda: comm.scatter(items if rank == 0 else None, 0)
    if op == "allgather":
        return lambda: comm.allgather(obj)
    items = [obj] * size
    return lambda: comm.alltoall(items)


def buffer_call(op, n):
    one = np.ones(n, dtype=np.uint8)
    every = np.ones(n * size, dtype=np.uint8)
    b = MPI.BYTE
    if op == "bcast":
        return lambda: world.Bcast([one, b], 0)
    if op == "gather":
        return lambda: world.Gather([one, b], [every, b] if rank == 0 else None, 0)
    if op == "scatter":
        return lambda: world.Scatter([every, b] if rank == 0 else None, [one, b], 0)
    if op == "allgather":
        return lambda: world.Allgather([one, b], [every, b])
    out = np.ones(n * size, dtype=np.uint8)
    return lambda: world.Alltoall([every, b], [out, b])


def measure(call, iters, reps):
    call()  # warm-up: first-call duplications, allocations
    samples = []
    for _ in range(reps):
        world.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        dt = (time.perf_counter() - t0) / iters
        samples.append(world.allreduce(dt, op=MPI.MAX))
    samples.sort()
    return samples[len(samples) // 2] * 1e6, samples[0] * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny objects, one call each: checks that every method runs")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    comms = {"cdtypes": cmpi.Intracomm(world), "pkl5": pkl5.Intracomm(world)}
    rows = []
    for case in args.cases.split(","):
        obj = make(case, args.smoke)
        nbytes = payload_bytes(obj)
        small = case == "dict1k"
        # many short samples: the median drops those that met another job on the machine
        iters = 20 if small and not args.smoke else 1
        reps = 1 if args.smoke else (15 if args.quick else 41) if small else (
            3 if args.quick else 5)
        for op in args.ops.split(","):
            times = {}
            for method in args.methods.split(","):
                if method == "cdtypes-ring" and op != "allgather":
                    continue
                call = (buffer_call(op, nbytes) if method == "buffer"
                        else object_call(comms[method.split("-")[0]], op, obj))
                ring = _mpi_coll.ALLGATHER_RING
                if method == "cdtypes-ring":
                    _mpi_coll.ALLGATHER_RING = 2
                try:
                    times[method], fastest = measure(call, iters, reps)
                finally:
                    _mpi_coll.ALLGATHER_RING = ring
                rows.append((size, case, op, method, nbytes, "%.2f" % times[method],
                             "%.2f" % fastest))
                del call
            if rank == 0:
                line = "ranks %d %-9s %-9s" % (size, case, op) + "".join(
                    " %s %10.1f us" % (m, t) for m, t in times.items())
                if "cdtypes" in times and "pkl5" in times:
                    line += "  pkl5/cdtypes %.2f" % (times["pkl5"] / times["cdtypes"])
                if "cdtypes" in times and "buffer" in times:
                    line += "  buffer/cdtypes %.2f" % (times["buffer"] / times["cdtypes"])
                print(line, flush=True)
    if rank == 0:
        with open(args.csv, "a" if args.append else "w", newline="") as f:
            w = csv.writer(f)
            if not args.append:
                w.writerow(("ranks", "case", "op", "method", "payload_bytes", "us_per_call",
                            "us_min"))
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())

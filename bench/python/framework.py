"""A framework's workload on mpi4py.util.pkl5 and on cdtypes.mpi's pkl5 API, in one run
(run by bench/framework/run under mpiexec -n N).

mpi4py.futures' MPICommExecutor with use_pkl5 (MPI4PY_FUTURES_USE_PKL5=1) builds its own
communicators (Split, Create_intercomm) and wraps them in pkl5.Intercomm: a framework's
communicators, which cdtypes cannot attach (docs/MPI.md §2.3). The run swaps the classes
mpi4py.futures takes from mpi4py.util.pkl5 (Comm, Intercomm, Request) for cdtypes.mpi's on
every rank and runs the same workload with each, alternated:

  arrays  ARRAYS NumPy arrays of ARRAY_MIB MiB sent to the workers and back (identity task)
  small   SMALL tasks of a small dict each (a function of it returns a small dict)

Each part is timed on the root (the executor's client) from the first submit to the last
result. Prints one line per part and run, and writes them as CSV rows
(impl,part,run,seconds)."""
import argparse
import csv
import os
import sys
import time

os.environ.setdefault("MPI4PY_FUTURES_USE_PKL5", "1")

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402
from mpi4py.futures import MPICommExecutor  # noqa: E402
from mpi4py.util import pkl5  # noqa: E402

from cdtypes import mpi as cmpi  # noqa: E402

IMPLS = {"pkl5": (pkl5.Comm, pkl5.Intercomm, pkl5.Request),
         "cdtypes": (cmpi.Comm, cmpi.Intercomm, cmpi.Request)}


def use(impl):
    """mpi4py.futures reads pkl5.Intercomm, pkl5.Comm and pkl5.Request when it makes and
    serves its communicators: point them at ``impl``'s classes"""
    pkl5.Comm, pkl5.Intercomm, pkl5.Request = IMPLS[impl]


def identity(x):
    return x


def small_task(d):
    return {"id": d["id"], "sum": d["a"] + d["b"], "name": d["name"].upper()}


def workload(executor, arrays, array_mib, small):
    out = {}
    data = [np.full(array_mib * (1 << 20) // 8, i, np.float64) for i in range(arrays)]
    t0 = time.perf_counter()
    back = list(executor.map(identity, data))
    out["arrays"] = time.perf_counter() - t0
    assert all((b[:4] == i).all() and b.nbytes == data[0].nbytes for i, b in enumerate(back))
    del back
    tasks = [{"id": i, "a": i, "b": 2 * i, "name": "task %d" % i} for i in range(small)]
    t0 = time.perf_counter()
    got = list(executor.map(small_task, tasks, chunksize=1))
    out["small"] = time.perf_counter() - t0
    assert [g["sum"] for g in got] == [3 * i for i in range(small)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--arrays", type=int, default=8)
    ap.add_argument("--array-mib", type=int, default=32)
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--smoke", action="store_true", help="2 arrays of 1 MiB, 20 tasks, 1 run")
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    if args.smoke:
        args.runs, args.arrays, args.array_mib, args.small = 1, 2, 1, 20
    rank = MPI.COMM_WORLD.Get_rank()
    rows = []
    for run in range(args.runs):
        for impl in ("pkl5", "cdtypes") if run % 2 == 0 else ("cdtypes", "pkl5"):
            use(impl)
            with MPICommExecutor(MPI.COMM_WORLD, 0) as executor:
                if executor is not None:
                    times = workload(executor, args.arrays, args.array_mib, args.small)
                    for part, seconds in times.items():
                        rows.append((impl, part, run, "%.4f" % seconds))
                        print("run %d %-8s %-7s %.3f s" % (run, impl, part, seconds))
                        sys.stdout.flush()
    if rank == 0:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("impl", "part", "run", "seconds"))
            w.writerows(rows)


if __name__ == "__main__":
    main()

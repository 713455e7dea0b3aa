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
(impl,part,run,seconds).

--probe (to find where the time goes; no timing is judged) adds, per rank, implementation and
run, one line of: the rank's wall and CPU time in the executor, the collector's work (PyPy's
gc.hooks: major collections and the time of their steps, minor collections and their time),
the sleeps of polled waits by the module that slept (mpi4py.futures' Backoff, cdtypes' waits:
calls and seconds slept), and the time inside the calls the executor makes on its
communicator (recv, issend, iprobe, Request.test: calls, seconds and CPU seconds)."""
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


class Probe:
    """--probe: counters of one rank, reset at each executor (see the module's docstring)"""

    CALLS = (("Comm", "recv"), ("Comm", "issend"), ("Comm", "iprobe"), ("Request", "test"))

    def __init__(self):
        self.reset()
        self._sleep = time.sleep
        time.sleep = self.sleep  # polled waits call time.sleep through the module
        for impl, (comm, _, request) in IMPLS.items():
            for cls, name in self.CALLS:
                owner = comm if cls == "Comm" else request
                setattr(owner, name, self._timed(getattr(owner, name), name))
        try:
            import gc
            gc.hooks.on_gc_minor = self._minor
            gc.hooks.on_gc_collect_step = self._step
            gc.hooks.on_gc_collect = self._major
        except AttributeError:  # CPython: no collector hooks
            pass

    def reset(self):
        self.t = {}  # name -> [calls, seconds]
        self.start, self.cpu = time.perf_counter(), time.process_time()

    def _add(self, name, n, seconds, cpu=None):
        c = self.t.setdefault(name, [0, 0.0, None])
        c[0] += n
        c[1] += seconds
        if cpu is not None:
            c[2] = (c[2] or 0.0) + cpu

    def _timed(self, fn, name):
        probe = self

        def timed(*args, **kwargs):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                probe._add(name, 1, time.perf_counter() - t0, time.process_time() - c0)
        return timed

    def sleep(self, seconds):
        who = sys._getframe(1).f_globals.get("__name__", "?").split(".")[0]
        t0 = time.perf_counter()
        self._sleep(seconds)
        self._add("sleep " + who, 1, time.perf_counter() - t0)

    def _minor(self, stats):
        self._add("gc minor", stats.count, stats.duration)

    def _step(self, stats):
        self._add("gc major steps", stats.count, stats.duration)

    def _major(self, stats):
        self._add("gc major", stats.count, 0.0)

    def line(self, run, impl, rank):
        wall, cpu = time.perf_counter() - self.start, time.process_time() - self.cpu
        return "probe run %d %-8s rank %d wall %.3f s cpu %.3f s: %s" % (
            run, impl, rank, wall, cpu, ", ".join(
                "%s %d/%.3f s%s" % (k, n, sec, "" if cpu is None else " (cpu %.3f s)" % cpu)
                for k, (n, sec, cpu) in sorted(self.t.items())))


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
    ap.add_argument("--probe", action="store_true", help="per-rank counters (Probe)")
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    if args.smoke:
        args.runs, args.arrays, args.array_mib, args.small = 1, 2, 1, 20
    rank = MPI.COMM_WORLD.Get_rank()
    rows = []
    probe = Probe() if args.probe else None
    for run in range(args.runs):
        for impl in ("pkl5", "cdtypes") if run % 2 == 0 else ("cdtypes", "pkl5"):
            use(impl)
            if probe is not None:
                MPI.COMM_WORLD.Barrier()
                probe.reset()
            with MPICommExecutor(MPI.COMM_WORLD, 0) as executor:
                if executor is not None:
                    times = workload(executor, args.arrays, args.array_mib, args.small)
                    for part, seconds in times.items():
                        rows.append((impl, part, run, "%.4f" % seconds))
                        print("run %d %-8s %-7s %.3f s" % (run, impl, part, seconds))
                        sys.stdout.flush()
            if probe is not None:
                print(probe.line(run, impl, rank), flush=True)
    if rank == 0:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("impl", "part", "run", "seconds"))
            w.writerows(rows)


if __name__ == "__main__":
    main()

"""What the polled wait of in-line receives costs (docs/MPI.md §2.3, §9), at 2 ranks under
mpiexec, in one run: the pkl5 API on a communicator that is not attached (a Split: heads and
in-line parts matched by Improbe polled under the communicator's lock) beside the same API on
an attached one (a Dup: a blocking Mprobe) and beside mpi4py.util.pkl5 on the same Split,
alternated run by run. MPI_THREAD_MULTIPLE (mpi4py's default), as every polled path needs it.

  small     round trips of a 1 KiB dict (the receiver's wait is one round trip: within the
            10 ms spin)
  large     round trips of a 4 MiB NumPy array
  late      rank 1 sleeps 20 ms, then sends a small object that carries its send time
            (time.time(), one clock on one node); rank 0 waits in recv: the delay from the
            send to recv's return, and rank 0's CPU time per wait

Prints one line per (impl, part, run) and writes CSV rows impl,part,run,value,unit with -o.
--smoke: tiny counts, one run (nothing judged)."""
import argparse
import csv
import sys
import time

import numpy as np
from mpi4py import MPI
from mpi4py.util import pkl5

from cdtypes import mpi as cmpi

world = MPI.COMM_WORLD
rank = world.Get_rank()


def pingpong(comm, obj, n):
    """seconds per round trip"""
    other = 1 - rank
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        if rank == 0:
            comm.send(obj, other, 1)
            comm.recv(None, other, 1)
        else:
            comm.send(comm.recv(None, other, 1), other, 1)
    return (time.perf_counter() - t0) / n


def late(comm, n, delay):
    """(median seconds from the send to recv's return, CPU seconds per wait) on rank 0"""
    comm.Barrier()
    lags, cpu = [], []
    for _ in range(n):
        if rank == 1:
            time.sleep(delay)
            comm.send({"sent": time.time()}, 0, 2)
        else:
            c0 = time.process_time()
            got = comm.recv(None, 1, 2)
            lags.append(time.time() - got["sent"])
            cpu.append(time.process_time() - c0)
        comm.Barrier()
    if rank == 1:
        return None, None
    return float(np.median(lags)), float(np.median(cpu))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    if world.Get_size() != 2:
        sys.exit("run with mpiexec -n 2")
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
    runs, n_small, n_large, n_late = (1, 20, 2, 2) if a.smoke else (a.runs, 2000, 40, 20)
    split = world.Split(0, rank)
    comms = {"pkl5 (Split)": pkl5.Intracomm(split),
             "cdtypes in line (Split)": cmpi.Intracomm(split),
             "cdtypes attached (Dup)": cmpi.Intracomm(world).Dup()}
    assert comms["cdtypes in line (Split)"].Get_attr(cmpi._KEYVAL) is None
    small = {"k%d" % i: "v" * 20 for i in range(40)}
    large = np.ones(1 << 19)
    rows = []
    names = list(comms)
    for run in range(runs):
        order = names if run % 2 == 0 else names[::-1]
        for impl in order:
            comm = comms[impl]
            got = [("small", pingpong(comm, small, n_small) * 1e6, "us/round trip"),
                   ("large", pingpong(comm, large, n_large) * 1e3, "ms/round trip")]
            lag, cpu = late(comm, n_late, 0.02)
            if rank == 0:
                got += [("late", lag * 1e6, "us from send to return"),
                        ("late cpu", cpu * 1e3, "ms CPU per 20 ms wait")]
                for part, value, unit in got:
                    rows.append((impl, part, run, value, unit))
                    print("run %d %-24s %-9s %10.1f %s" % (run, impl, part, value, unit))
                    sys.stdout.flush()
    if rank == 0 and a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["impl", "part", "run", "value", "unit"])
            w.writerows(rows)
    comms["cdtypes attached (Dup)"].Free()
    split.Free()


if __name__ == "__main__":
    main()

"""What the agreement costs a 2-rank bcast of a small object (docs/MPI.md §14.5), under
mpiexec -n 2, in one job, methods alternated sample by sample (the order reversed every other
sample) so that a loaded machine's changes fall on every method alike:

  pkl5             mpi4py.util.pkl5.Intracomm.bcast (no agreement: its root sends eagerly and
                   runs ahead of the receiver)
  cdtypes          cdtypes.mpi's bcast: at two processes the agreement is an exchange of the
                   five ints (point to point), which the receiver of a plain object (this
                   one) posts before unpickling it (the early answer)
  cdtypes-noc      cdtypes with the lean paths' MPI calls through mpi4py (docs/MPI.md §14.5.1
                   off for the communicator, as CDTYPES_MPI_C=0 has it for the process)
  cdtypes-general  the same with the root on the general path (a Call object, as at three
                   processes), not _mpi_coll_call.lean_root
  cdtypes-late     the same with the receiver's answer after its unpickling (as before the
                   early answer, and as for an object that runs code)
  cdtypes-allreduce  the same with the agreement forced to MPI_Allreduce (as at three processes
                   and more, and at two before the exchange), the root on the general path
  cdtypes-none     the same with no agreement at all: NOT a protocol (a failing receiver would
                   leave the root returning), only the bound that any form of the agreement
                   adds to (the root on the general path)

The object is bench/python/collectives.py's dict1k (a dict of about 1 KiB). A sample is 20
calls between two barriers, the slower rank's time per call. Then `chain`: where one call of
`cdtypes` spends its time, from time stamps of both ranks (one monotonic clock on one node):
the root's Call and pack, the head's way to the receiver, the receiver's unpickling, its part
of the exchange reaching the root, the root's tail and its own copy (in parallel with the
receiver). Prints one line per method and segment; -o writes CSV rows part,method,value,unit
(median and minimum of the samples, median and 10th percentile of the segments).
--smoke: a few calls, one sample (nothing judged)."""
import argparse
import csv
import os
import sys
import time

from mpi4py import MPI
from mpi4py.util import pkl5

from cdtypes import mpi as cmpi  # first: _mpi_coll_call imports it
from cdtypes import _mpi_coll as CO  # noqa: I100
from cdtypes import _mpi_coll_call as C

world = MPI.COMM_WORLD
rank = world.Get_rank()
OBJ = {"key%02d" % i: ("value %d " % i) * 3 if i % 3 else i * 1.5 for i in range(40)}
_agreement = C._Collectives.agreement


def _allreduce(self, failed, op=0, root=C._OK, have_theirs=False):
    pair, self.pair = self.pair, None
    try:
        return _agreement(self, failed, op, root, have_theirs)
    finally:
        self.pair = pair


def _none(self, failed, op=0, root=C._OK, have_theirs=False):
    return None, None


AGREEMENTS = {"cdtypes": _agreement, "cdtypes-noc": _agreement, "cdtypes-general": _agreement, "cdtypes-late": _agreement,
              "cdtypes-allreduce": _allreduce, "cdtypes-none": _none}
_early = C.Call.rebuild_early


def sample(comm, method, iters):
    if method in AGREEMENTS:
        C._Collectives.agreement = AGREEMENTS[method]
    # every method but cdtypes answers after unpickling (rebuild: no early answer)
    C.Call.rebuild_early = _early if method in ("cdtypes", "cdtypes-noc", "cdtypes-general") \
        else C.Call.rebuild
    coll = C.collectives(comm) if method != "pkl5" else None
    lean = coll and coll.lean_root
    handles = coll and coll.c
    if method == "cdtypes-noc":
        coll.c = None
    # the lean root's exchange is its own (persistent requests), not agreement(): the methods that
    # change the agreement take the general path, whose root calls agreement()
    if method in ("cdtypes-general", "cdtypes-allreduce", "cdtypes-none"):
        coll.lean_root = None
    try:
        world.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            comm.bcast(OBJ if rank == 0 else None, 0)
        dt = (time.perf_counter() - t0) / iters
    finally:
        C._Collectives.agreement = _agreement
        C.Call.rebuild_early = _early
        if coll is not None:
            coll.lean_root, coll.c = lean, handles
    return world.allreduce(dt, op=MPI.MAX)


def chain(comm, n):
    """(segment, [ns per call]) of n calls of cdtypes' bcast, at rank 0 (None elsewhere)"""
    stamp, log = time.perf_counter_ns, []
    saved = C.Call.__init__, C.Call.send, C.Call.receive, C.Call.rebuild_early, \
        C._Collectives._exchange, C._Collectives.answer_early, CO.lean_root, C._b.mpi_pack, \
        C._b.mpi_pack_own, CO.lean_leaf, C._startall, C._waitall, C.Call.receive_c, \
        getattr(C._b, "mpic_root_end", None)

    def wrap(fn, before=None, after=None):
        def w(*a, **kw):
            if before:
                log.append((before, stamp()))
            r = fn(*a, **kw)
            if after:
                log.append((after, stamp()))
            return r
        return w

    # the lean root's exchange: its persistent send and receive started, then waited for
    if rank == 0:
        C._startall = wrap(saved[10], before="ack")
        C._waitall = wrap(saved[11], after="agreed")
        if saved[13] is not None:  # the same from C (§14.5.1), with the head's wait
            C._b.mpic_root_end = wrap(saved[13], before="ack", after="agreed")
    C.Call.receive_c = wrap(saved[12], after="got")  # the lean receiver's from C (§14.5.1)
    C.Call.__init__ = wrap(saved[0], before="start")
    C.Call.send = wrap(saved[1], before="send")
    C.Call.receive = wrap(saved[2], after="got")
    C.Call.rebuild_early = wrap(saved[3], after="loaded")
    C._Collectives._exchange = wrap(saved[4], before="ack", after="agreed")
    C._Collectives.answer_early = wrap(saved[5], before="early")
    # the root's lean path (_mpi_coll_call.lean_root): "send" once its head is packed
    CO.lean_root = wrap(saved[6], before="start")
    C._b.mpi_pack = wrap(saved[7], after="send")
    C._b.mpi_pack_own = wrap(saved[8], after="send")
    CO.lean_leaf = wrap(saved[9], before="start")  # the receiver's lean path
    try:
        world.Barrier()
        for _ in range(n):
            comm.bcast(OBJ if rank == 0 else None, 0)
            log.append(("ret", stamp()))
    finally:
        C.Call.__init__, C.Call.send, C.Call.receive, C.Call.rebuild_early, \
            C._Collectives._exchange, C._Collectives.answer_early, CO.lean_root, \
            C._b.mpi_pack, C._b.mpi_pack_own, CO.lean_leaf, C._startall, C._waitall, \
            C.Call.receive_c = saved[:13]
        if saved[13] is not None:
            C._b.mpic_root_end = saved[13]
    logs = world.gather(log, 0)
    if rank != 0:
        return None

    def calls(lg):
        out, cur = [], {}
        for k, t in lg:
            cur[k] = t
            if k == "ret":
                out.append(cur)
                cur = {}
        return out

    root, leaf = calls(logs[0]), calls(logs[1])

    def _answer(b):  # the receiver's answer: early, else its exchange (the lean leaf: early)
        return b["early"] if "early" in b else b["ack"]

    segs = {
        "root: Call and pack": lambda a, b, n: a["send"] - a["start"],
        "head to receiver (transit, probe, receive, parse)": lambda a, b, n: b["got"] - a["send"],
        "receiver: its call's start to the head received": lambda a, b, n: b["got"] - b["start"],
        "receiver: its call's start after the root's send": lambda a, b, n: b["start"] - a["send"],
        "receiver: its answer to its return": lambda a, b, n: b["ret"] - _answer(b),
        "receiver: to its answer (early: before unpickling)": lambda a, b, n:
            _answer(b) - b["got"],
        "receiver: unpickle (and its answer when early)": lambda a, b, n: b["loaded"] - b["got"],
        "receiver's answer to root's agreement end": lambda a, b, n:
            a["agreed"] - _answer(b),
        "root: after the agreement to return": lambda a, b, n: a["ret"] - a["agreed"],
        "root: return to next call": lambda a, b, n: n["start"] - a["ret"],
        "root: own copy (send to its exchange)": lambda a, b, n: a["ack"] - a["send"],
        "one call": lambda a, b, n: n["start"] - a["start"],
    }
    return [(name, sorted(f(root[i], leaf[i], root[i + 1]) for i in range(1, len(root) - 1)))
            for name, f in segs.items()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=61)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("-o", "--out")
    ap.add_argument("--chain", type=int, default=3000, help="calls of the chain")
    ap.add_argument("--warmup", type=int, default=2,
                    help="calls per method before the samples (PyPy: thousands, for the JIT)")
    ap.add_argument("--methods", help="a comma-separated subset of the methods (pkl5 first)")
    a = ap.parse_args()
    if world.Get_size() != 2:
        sys.exit("run with mpiexec -n 2")
    samples, iters, nchain = (1, 3, 4) if a.smoke else (a.samples, 20, a.chain)
    methods = ["pkl5", "cdtypes", "cdtypes-noc", "cdtypes-general", "cdtypes-late", "cdtypes-allreduce",
               "cdtypes-none"]
    if a.methods:
        unknown = set(a.methods.split(",")) - set(methods)
        if unknown:
            sys.exit("unknown methods %s (of %s)" % (sorted(unknown), ", ".join(methods)))
        methods = [m for m in methods if m in a.methods.split(",")]
    comms = {"pkl5": pkl5.Intracomm(world)}
    mine = cmpi.Intracomm(world).Dup()
    for m in methods:
        if m != "pkl5":
            comms[m] = mine
    for m in methods:  # warm-up: first-call duplications (and PyPy's JIT with --warmup)
        sample(comms[m], m, max(2, a.warmup))
    times = {m: [] for m in methods}
    for s in range(samples):
        for m in (methods if s % 2 == 0 else methods[::-1]):
            times[m].append(sample(comms[m], m, iters))
    segments = chain(mine, nchain)
    mine.Free()
    if rank != 0:
        return
    rows = []
    print("load average %.1f %.1f %.1f, %d samples of %d calls" % (os.getloadavg() + (
        samples, iters)))
    for m in methods:
        t = sorted(times[m])
        med, low = t[len(t) // 2] * 1e6, t[0] * 1e6
        print("%-18s median %8.1f us  min %8.1f us" % (m, med, low))
        rows += [("bcast", m, "%.2f" % med, "us median"), ("bcast", m, "%.2f" % low, "us min")]
    for name, v in segments:
        med, p10 = v[len(v) // 2] / 1e3, v[len(v) // 10] / 1e3
        print("chain %-52s median %7.2f us  p10 %7.2f us" % (name, med, p10))
        rows += [("chain", name, "%.2f" % med, "us median"), ("chain", name, "%.2f" % p10,
                                                               "us p10")]
    if a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("part", "method", "value", "unit"))
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())

"""Run under `mpiexec -n N` (N >= 2): cdtypes.mpi's collectives when a rank fails (docs/MPI.md
§14.4). A receive over a limit, an object refused by the allow-list, the root's object that
does not pickle, a scatter list of the wrong length, a malformed frame: the rank that failed
raises its error, every other rank raises PeerError, none waits for ever, and the next
collective on the same communicator works (nothing of the failed one is left behind). Also:
bcast's tree from every root and allgather's ring, with objects that have parts messages, on
intra- and intercommunicators."""
import faulthandler
import os
import pickle
import sys

import numpy as np
from mpi4py import MPI

import cdtypes
from cdtypes import _mpi_c, _mpi_coll, _mpi_coll_call
from cdtypes import mpi
from cdtypes._lib import (ForbiddenError, FrameMagicError, InvalidArgumentError, LimitError,
                          PeerError)

world = mpi.Intracomm(MPI.COMM_WORLD)
size, rank = world.Get_size(), world.Get_rank()
assert size >= 2, "run with 2 or more processes"
T = mpi.THRESHOLD
# a deadlock prints every rank's stack and fails the run instead of waiting for pytest's timeout
faulthandler.dump_traceback_later(90, exit=True)


class NotAllowed:  # a global outside the default allow-list
    def __eq__(self, other):
        return isinstance(other, NotAllowed)


def big(seed):
    """an object with two parts over the threshold and one under it"""
    return {"seed": seed, "a": np.full(T // 8 + 10, seed, np.int64),
            "b": np.full(T // 8 + 20, -seed, np.int64), "small": np.arange(5) + seed}


def check(obj, seed):
    assert obj["seed"] == seed, (obj["seed"], seed)
    assert (obj["a"] == seed).all() and obj["a"].shape == (T // 8 + 10,)
    assert (obj["b"] == -seed).all() and (obj["small"] == np.arange(5) + seed).all()
    assert obj["a"].flags.writeable


def expect(fn, own, *args, **kwargs):
    """fn(*args, **kwargs) must raise: ``own`` (an exception class) at a rank whose own
    receive or pickling fails, PeerError at the others (own None: this rank does not fail)."""
    try:
        fn(*args, **kwargs)
    except PeerError as e:
        assert own is None, "rank %d: PeerError, expected %s" % (rank, own)
        assert "failed on every rank" in str(e), e
        return
    except BaseException as e:
        assert own is not None and isinstance(e, own), "rank %d: %r" % (rank, e)
        return
    raise AssertionError("rank %d: %s did not raise" % (rank, getattr(fn, "__name__", fn)))


def still_works(comm, inter=False):
    """after a failure: the next collective gets exactly its own objects"""
    n = comm.Get_remote_size() if inter else comm.Get_size()
    got = comm.allgather(big(500 + comm.Get_rank()))
    for source, obj in enumerate(got):
        check(obj, 500 + source)
    assert len(got) == n
    coll = _mpi_coll_call.collectives(comm)
    assert not coll.cc.iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
    assert not coll.pc.iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
    comm.barrier()  # no rank sends for the next collective before every rank looked


def trees(comm):
    """bcast from every root (binomial tree: inner ranks forward), allgather direct and ring"""
    for root in range(comm.Get_size()):
        check(comm.bcast(big(root) if comm.Get_rank() == root else None, root), root)
        assert comm.bcast({"small": root} if comm.Get_rank() == root else None,
                          root) == {"small": root}
    for ring in (2, 1 << 30):
        _mpi_coll.ALLGATHER_RING = ring
        try:
            for source, obj in enumerate(comm.allgather(big(comm.Get_rank()))):
                check(obj, source)
            assert comm.allgather(comm.Get_rank()) == list(range(comm.Get_size()))
        finally:
            _mpi_coll.ALLGATHER_RING = 8
    for parent_rank in range(comm.Get_size()):  # the tree covers every rank once
        parent, children = _mpi_coll.binomial_tree(parent_rank, comm.Get_size(), 0)
        assert (parent is None) == (parent_rank == 0)


def limits(comm):
    """one rank at a time receives under a limit its object exceeds"""
    me, n = comm.Get_rank(), comm.Get_size()
    for bad in range(n):
        fails = me == bad
        for root in range(n):
            if bad != root:  # the root receives nothing in bcast and scatter
                expect(comm.bcast, LimitError if fails else None,
                       big(root) if me == root else None, root,
                       max_bytes=1000 if fails else None)
                expect(comm.scatter, LimitError if fails else None,
                       [big(d) for d in range(n)] if me == root else None, root,
                       max_regions=1 if fails else None)
        expect(comm.gather, LimitError if fails else None, big(me), bad,
               max_bytes=1000 if fails else None)
        for ring in (2, 1 << 30):
            _mpi_coll.ALLGATHER_RING = ring
            try:
                expect(comm.allgather, ForbiddenError if fails else None, NotAllowed(),
                       allowed=True if fails else None)
            finally:
                _mpi_coll.ALLGATHER_RING = 8
        expect(comm.alltoall, LimitError if fails else None, [big(d) for d in range(n)],
               max_bytes=100 if fails else None)
        # a limit the objects meet changes nothing
        got = comm.alltoall([big(me * 10 + d) for d in range(n)], max_bytes=1 << 20,
                            max_regions=4, allowed=True)
        for source, obj in enumerate(got):
            check(obj, source * 10 + me)
    still_works(comm)


def senders_fail(comm):
    """the object a rank sends does not pickle, or its list has the wrong length"""
    me, n = comm.Get_rank(), comm.Get_size()
    unpicklable = lambda: None  # noqa: E731 (pickle refuses lambdas)
    for root in range(n):
        fails = me == root
        expect(comm.bcast, Exception if fails else None, unpicklable if fails else None, root)
        expect(comm.scatter, ValueError if fails else None, [1] * (n + 1) if fails else None,
               root)
        expect(comm.gather, Exception if fails else None, unpicklable if fails else 1,
               (root + 1) % n)
        expect(comm.alltoall, ValueError if fails else None, [1] * (n - 1 if fails else n))
        expect(comm.allgather, Exception if fails else None, unpicklable if fails else 1)
    still_works(comm)


def bad_frame(comm):
    """a rank sends gather's root a head that is not a frame, by hand, and votes as a rank
    that did not fail: the root raises FrameMagicError, the others PeerError"""
    me, root, hostile = comm.Get_rank(), 0, comm.Get_size() - 1
    if me == hostile:
        coll = _mpi_coll_call.collectives(comm)
        coll.cc.Send([b"not a cdtypes frame at all", MPI.BYTE], root, _mpi_coll.TAG_GATHER)
        assert coll.agreement(False, _mpi_coll.TAG_GATHER, root) == (root, None)
    else:
        expect(comm.gather, FrameMagicError if me == root else None, big(me), root)
    still_works(comm)


def long_heads(comm):
    """a head over HEAD_DRAIN_MAX (1.5 MB of in-band pickle) whose object also has a parts
    message (8 MiB), refused by max_bytes: consumed unread, its parts drained by the head's
    tag (docs/MPI.md §14.4); every rank fails, none waits for ever, nothing is left queued"""
    me, n = comm.Get_rank(), comm.Get_size()
    assert 1_500_000 > mpi.HEAD_DRAIN_MAX

    def obj(seed):
        return {"text": bytes([seed]) * 1_500_000, "a": np.full(1 << 20, seed, np.int64)}

    for bad in range(n):
        fails = me == bad
        root = (bad + 1) % n
        expect(comm.bcast, LimitError if fails else None, obj(root) if me == root else None,
               root, max_bytes=1000 if fails else None)
        expect(comm.gather, LimitError if fails else None, obj(me), bad,
               max_bytes=1000 if fails else None)
        expect(comm.alltoall, LimitError if fails else None, [obj(d) for d in range(n)],
               max_bytes=1000 if fails else None)
    still_works(comm)


def disagree(comm):
    """ranks that disagree on the root or the operation, where each reaches the agreement:
    every rank raises InvalidArgumentError naming the disagreement, every message of the
    call is consumed (small and rendezvous-sized), and the next call gets its own objects
    (docs/MPI.md §14.5)"""
    me, n = comm.Get_rank(), comm.Get_size()
    for obj in ({"small": me}, big(me)):
        # every rank the root: each sends, none receives
        try:
            comm.bcast(obj, me)
            raise AssertionError("rank %d: bcast with disagreeing roots returned" % me)
        except InvalidArgumentError as e:
            assert "disagree on the root" in str(e), e
        still_works(comm)
        # rank 0 in bcast (root 0), the others in scatter (root 1): rank 0 receives nothing
        try:
            if me == 0:
                comm.bcast(obj, 0)
            else:
                comm.scatter([obj] * n if me == 1 else None, 1)
            raise AssertionError("rank %d: bcast beside scatter returned" % me)
        except InvalidArgumentError as e:
            assert "disagree on the operation" in str(e), e
        still_works(comm)
        # rank 1 in bcast from 0, the others in gather to 1: rank 1 receives a gather
        # message where it expects a bcast
        try:
            if me == 1:
                comm.bcast(None, 0)
            else:
                comm.gather(obj, 1)
            raise AssertionError("rank %d: gather beside bcast returned" % me)
        except InvalidArgumentError as e:
            assert "disagree on the" in str(e), e
        still_works(comm)


class Refuses:
    """its __setstate__ raises at every rank but the root (the root's own copy succeeds)"""

    def __init__(self, root):
        self.root = root

    def __setstate__(self, state):
        if state["root"] != MPI.COMM_WORLD.Get_rank():
            raise ZeroDivisionError("Refuses: unpickled away from its root")
        self.__dict__.update(state)


def leaf_fails(comm):
    """a receiver's unpickling raises: the root raises PeerError, not only the receiver
    (docs/MPI.md §14.5, at two processes the agreement's exchange)"""
    me, n = comm.Get_rank(), comm.Get_size()
    for root in range(n):
        expect(comm.bcast, None if me == root else ZeroDivisionError,
               Refuses(root) if me == root else None, root)
    still_works(comm)


def early_answer(comm):
    """docs/MPI.md §14.5, the early answer: at two processes bcast's receiver of a plain
    object (builtin scalars and containers, out-of-band buffers included) posts its part of
    the exchange before unpickling; of an object whose unpickling runs code (Refuses) it does
    not, and the root still raises PeerError, the receiver the original error. At three
    processes and more (the allreduce) no process answers early."""
    me, n = comm.Get_rank(), comm.Get_size()
    coll = _mpi_coll_call.collectives(comm)
    pair = n == 2
    # one object sent in every call: its PickleBuffer stays the caller's (never released)
    obj = {"k": list(range(50)), "t": (1, "x", 2.5), "s": {1, 2}, "b": bytearray(b"ab"),
           "oob": pickle.PickleBuffer(bytearray(b"z" * (T + 10)))}
    def plain():
        return obj

    mode = coll.yielding
    for yielding in (False, True):
        coll.yielding = yielding  # every rank alike: the polled exchange too
        try:
            for root in range(n):
                before = coll.early_answers
                got = comm.bcast(plain() if me == root else None, root)
                assert got["k"] == list(range(50)) and got["s"] == {1, 2}, got
                assert bytes(got["oob"]) == b"z" * (T + 10)
                early = pair and me != root
                assert coll.early_answers == before + early, (me, root, coll.early_answers)
                assert not coll.answered
                before = coll.early_answers
                expect(comm.bcast, None if me == root else ZeroDivisionError,
                       {"plain": 1, "refuses": Refuses(root)} if me == root else None, root)
                assert coll.early_answers == before, "an object that runs code answered early"
                # refused by a limit: no early answer, the root raises PeerError (at two
                # processes: from four, a forwarder's refusal reaches its children as markers)
                if pair:
                    expect(comm.bcast, None if me == root else LimitError,
                           plain() if me == root else None, root,
                           max_bytes=None if me == root else 100)
                    assert coll.early_answers == before
        finally:
            coll.yielding = mode
    assert bytes(memoryview(obj["oob"])) == b"z" * (T + 10)
    still_works(comm)


class Counting:
    """a communicator's stand-in that records the names of the methods called on it"""

    def __init__(self, comm):
        self.comm, self.calls = comm, []

    def __getattr__(self, name):
        self.calls.append(name)
        return getattr(self.comm, name)


def lean_root(comm):
    """docs/MPI.md §14.5, the cost: at two processes bcast's root of an object that goes whole
    in its head, called without limits, takes _mpi_coll_call.lean_root (counted in
    lean_calls), and its receiver _mpi_coll_call.lean_leaf (its short tail counted in
    lean_leaves): the same result and the same errors as the general path, which an object
    with parts, a call with limits, a yielding process and three processes take."""
    me, n = comm.Get_rank(), comm.Get_size()
    coll = _mpi_coll_call.collectives(comm)
    small = {"k": list(range(50)), "t": (1, "x", 2.5), "s": {1, 2}}
    mode = coll.yielding
    # both modes at two processes, where the path is; from three, the process's own mode
    # (blocking waits with more processes than cores: a scheduler slice per hand-off)
    for yielding in (False, True) if n == 2 else (mode,):
        coll.yielding = yielding
        try:
            for root in range(n):
                lean = n == 2 and me == root and not yielding
                before, leaves = coll.lean_calls, coll.lean_leaves
                got = comm.bcast(small if me == root else None, root)
                assert got == small and (me != root or got is not small), got
                assert coll.lean_calls == before + lean, (me, root, coll.lean_calls)
                # its receiver's lean path (lean_leaf) to its short tail
                assert coll.lean_leaves == leaves + (n == 2 and me != root and not yielding), (
                    me, root, coll.lean_leaves)
                before = coll.lean_calls  # parts: the general path after the packing
                check(comm.bcast(big(root) if me == root else None, root), root)
                got = comm.bcast(small if me == root else None, root, max_bytes=1 << 20)
                assert got == small and coll.lean_calls == before, (me, coll.lean_calls)
                # the root's pickling fails: its own error there, PeerError elsewhere
                expect(comm.bcast, Exception if me == root else None,
                       (lambda: 0) if me == root else None, root)
                # the receiver refuses the object: the root raises PeerError (at two
                # processes: from four, a forwarder's refusal reaches its children as markers)
                if n == 2:
                    expect(comm.bcast, None if me == root else LimitError,
                           small if me == root else None, root,
                           max_bytes=None if me == root else 10)
                assert coll.lean_calls == before
        finally:
            coll.yielding = mode
    own_copy_from_stream(comm)
    if n == 2:  # the exchange's sends (and the root's receive): persistent requests, made
        for root in range(n):  # once, started in every call; no message parsed per call
            agree, counted = coll.agree, Counting(coll.agree)
            coll.agree = counted
            coll.yielding = False  # both processes: the lean paths (Open MPI binds each to
            try:  # a core of its own, which makes them yield)
                for _ in range(2):
                    del counted.calls[:]
                    assert comm.bcast(small if me == root else None, root) == small
            finally:
                coll.agree, coll.yielding = agree, mode
            # a later call: the root asks agree for nothing (its send and receive started),
            # the receiver for the root's five ints alone (its early answer started); with
            # the MPI calls from C (§14.5.1) neither asks mpi4py for anything
            assert counted.calls == ([] if me == root or coll.c is not None else ["Recv"]), (
                counted.calls)
    if n == 2:  # both pass themselves as root: both take the lean path and both raise
        try:
            comm.bcast(small, me)
            raise AssertionError("rank %d: bcast with disagreeing roots returned" % me)
        except InvalidArgumentError as e:
            assert "disagree on the root" in str(e), e
    still_works(comm)


def c_path(comm):
    """docs/MPI.md §14.5.1: at two processes the lean paths of bcast make their MPI calls from
    C (on unless CDTYPES_MPI_C=0): no Python-level call of mpi4py per call on either process
    (counted); a communicator whose error handler is not ERRORS_RETURN keeps the Python path,
    with the same results and errors; a damaged head taken by the C call raises the same
    exception with the same message as the Python path's receive."""
    me, n = comm.Get_rank(), comm.Get_size()
    if n != 2:
        return
    coll = _mpi_coll_call.collectives(comm)
    setting = os.environ.get("CDTYPES_MPI_C", "")
    # off by default for the cffi backend on CPython (CDTYPES_MPI_C=1 turns it on there)
    cffi_cpython = (cdtypes.backend == "cffi" and sys.implementation.name == "cpython"
                    and setting != "1")
    off = setting == "0" or cffi_cpython
    why = "CDTYPES_MPI_C=0" if setting == "0" else _mpi_c.CFFI_CPYTHON if cffi_cpython else None
    assert (coll.c is None) == off, coll.c_why
    assert coll.c_why == why, coll.c_why
    small = {"k": list(range(50)), "t": (1, "x", 2.5), "s": {1, 2}}
    mode, coll.yielding = coll.yielding, False  # the lean paths (see lean_root)
    cc, agree = coll.cc, coll.agree
    started = []
    startall, waitall = _mpi_coll_call._startall, _mpi_coll_call._waitall
    try:
        # (1) mpi4py's methods called per bcast, on cc, on agree and the exchange's requests
        coll.cc, coll.agree = Counting(cc), Counting(agree)
        coll.leaf_call = None  # the receiver's kept Call holds cc: a fresh one, counted
        _mpi_coll_call._startall = lambda reqs: (started.append("Startall"), startall(reqs))
        _mpi_coll_call._waitall = lambda reqs: (started.append("Waitall"), waitall(reqs))
        for root in (0, 1, 0, 1):
            heads = coll.c_heads
            del coll.cc.calls[:], coll.agree.calls[:], started[:]
            assert comm.bcast(small if me == root else None, root) == small
            if root == me:
                want = ([], [], []) if coll.c is not None else (["Isend"], [], ["Startall",
                                                                                   "Waitall"])
            else:
                want = ([], [], []) if coll.c is not None else (["Mprobe"], ["Recv"], [])
                assert coll.c_heads == heads + (coll.c is not None), coll.c_heads
            assert (coll.cc.calls, coll.agree.calls, started) == want, (
                me, root, coll.cc.calls, coll.agree.calls, started)
    finally:
        coll.cc, coll.agree, coll.leaf_call = cc, agree, None
        _mpi_coll_call._startall, _mpi_coll_call._waitall = startall, waitall
        coll.yielding = mode
    # (2) a setup check that fails for one communicator: the Python path, the same results
    # (mpi4py gives every communicator it makes ERRORS_RETURN: cc's handler is set here, and
    # the communicator's check made again)
    fatal = comm.Dup()
    other = _mpi_coll_call.collectives(fatal)
    other.cc.Set_errhandler(MPI.ERRORS_ARE_FATAL)
    other.c, other.c_why = _mpi_c.handles(other)
    assert other.c is None and (why if off else "ERRORS_RETURN") in other.c_why, other.c_why
    other.yielding = False
    for root in (0, 1):
        before = other.lean_calls
        assert fatal.bcast(small if me == root else None, root) == small
        assert other.lean_calls == before + (me == root)
    expect(fatal.bcast, Exception if me == 0 else None, (lambda: 0) if me == 0 else None, 0)
    try:
        fatal.bcast(small, me)
        raise AssertionError("rank %d: bcast with disagreeing roots returned" % me)
    except InvalidArgumentError as e:
        assert "disagree on the root" in str(e), e
    other.cc.Set_errhandler(MPI.ERRORS_RETURN)
    still_works(fatal)
    fatal.Free()
    # (3) damaged heads, written by hand: the C call's receiver raises what the Python path
    # raises, with the same message
    good = _mpi_coll_call._b.mpi_pack(small, 7, T)[1]
    mode, coll.yielding = coll.yielding, False
    try:
        for damaged in (b"not a cdtypes frame at all", bytes(good[:-5]), bytes(good) + b"x"):
            seen = []
            for c in (coll.c, None):
                kept, coll.c = coll.c, c
                try:
                    if me == 0:
                        coll.cc.Send([damaged, MPI.BYTE], 1, _mpi_coll.TAG_BCAST)
                        assert coll.agreement(False, _mpi_coll.TAG_BCAST, 0) == (1, None)
                        coll.sent.Wait()
                        coll.sent = None
                    else:
                        heads = coll.c_heads
                        try:
                            comm.bcast(None, 0)
                            raise AssertionError("a damaged head was received")
                        except Exception as e:
                            seen.append((type(e), str(e)))
                        assert coll.c_heads == heads + (c is not None), coll.c_heads
                finally:
                    coll.c = kept
            assert me == 0 or seen[0] == seen[1], seen
    finally:
        coll.yielding = mode
    still_works(comm)


def per_call_lookups(comm):
    """docs/MPI.md §14.5, the cost: a collective finds its communicator's _Collectives without
    MPI_Comm_get_attr after the first call on a wrapper (kept on the wrapper with its handle),
    and looks it up again once another wrapper of the same handle released it (a released
    one is never used); the lean receiver of a two-process bcast reuses its Call while every
    call leaves it as made (no Call made per call), and makes a fresh one after a failure."""
    me, n = comm.Get_rank(), comm.Get_size()
    lookups = []

    class Counted(mpi.Intracomm):  # another wrapper of the same handle, its lookups counted
        def Get_attr(self, keyval):  # noqa: N802 (mpi4py's name)
            if keyval == _mpi_coll_call._COLL_KEYVAL:
                lookups.append(keyval)
            return mpi.Intracomm.Get_attr(self, keyval)

    mine = comm.Dup()
    counted = Counted(mine)
    small = {"a": [1, 2.5, "x"], "b": (None, True)}
    for call in range(4):
        assert counted.bcast(small if me == 0 else None, 0) == small
        assert counted.allgather(me) == list(range(n))
    # the first call's alone: bcast's entry (none yet) and its Call's (makes them)
    assert len(lookups) == 2, lookups
    # released through another wrapper (its Free frees what the first one found): the next
    # call looks the communicator's collectives up again and makes new ones
    coll = _mpi_coll_call.collectives(counted)
    _mpi_coll.release(mine)
    assert not coll.live
    assert counted.bcast(small if me == 0 else None, 0) == small
    assert _mpi_coll_call.collectives(counted) is not coll and len(lookups) == 4, lookups
    if n == 2:
        coll = _mpi_coll_call.collectives(counted)
        mode, coll.yielding = coll.yielding, False  # the lean paths (see lean_root)
        made, bare = [], _mpi_coll_call._bare_call

        def counted_bare(*a):
            made.append(1)
            return bare(*a)

        _mpi_coll_call._bare_call = counted_bare
        try:
            for root in (0, 1, 0, 1):
                got = counted.bcast(small if me == root else None, root)
                assert got == small, got
            # at most the receiver's first lean call (a Call kept from before: none)
            assert len(made) <= 1, made
            # a failure (the receiver refuses the object) drops the kept Call: a fresh one
            expect(counted.bcast, None if me == 0 else LimitError, small if me == 0 else None,
                   0, max_bytes=None if me == 0 else 4)
            expect(counted.bcast, Exception if me == 0 else None,
                   (lambda: 0) if me == 0 else None, 0)
            del made[:]
            for root in (0, 1):
                assert counted.bcast(small if me == root else None, root) == small
            assert len(made) == (me == 1), made
        finally:
            _mpi_coll_call._bare_call = bare
            coll.yielding = mode
    still_works(counted)
    counted.Free()


def own_copy_from_stream(comm):
    """docs/MPI.md §14.5, the cost: bcast's and allgather's own copy of an object that goes
    whole in its head is unpickled from the stream pickled to send it (mpi_pack_own), not from
    its head decoded again (mpi_unpack never called by the rank that packed it, lean root or
    general path), and it is a copy: its arrays share no memory with the caller's, writing to
    them leaves the caller's object as it was."""
    me, n = comm.Get_rank(), comm.Get_size()
    coll = _mpi_coll_call.collectives(comm)
    b = _mpi_coll_call._b
    unpack, calls = b.mpi_unpack, []

    def counted(*a):
        calls.append(1)
        return unpack(*a)

    def small():
        return {"a": np.arange(8.0), "t": ("x", 1)}

    mode = coll.yielding
    for yielding in (False, True):
        coll.yielding = yielding
        try:
            for root in range(n):
                obj = small() if me == root else None
                b.mpi_unpack = counted
                try:
                    got = comm.bcast(obj, root)
                    mine = comm.allgather(small())[me]
                finally:
                    b.mpi_unpack = unpack
                # a receiver decodes one head per object received; the root none of its own
                assert len(calls) == (n - 1) + (me != root), calls
                calls.clear()
                assert (got["a"] == np.arange(8.0)).all() and got["t"] == ("x", 1), got
                if me == root:
                    assert not np.shares_memory(got["a"], obj["a"])
                    got["a"][:] = -1
                    assert (obj["a"] == np.arange(8.0)).all(), obj
                mine["a"][:] = -2
                assert (mine["a"] == -2).all()
        finally:
            coll.yielding = mode
    still_works(comm)


def disagree_unsent(comm):
    """two processes that disagree on the operation where one waits for an object the other
    does not send: rank 0 in allgather (sends to 1, waits for 1's object), rank 1 in gather
    to itself (receives 0's object, sends nothing). With the exchange (§14.5) rank 0's
    receive matches rank 1's agreement message and both raise InvalidArgumentError; an
    allreduce left rank 0 waiting for ever."""
    if comm.Get_size() != 2:
        return
    for obj in ({"small": rank}, big(rank)):
        try:
            if comm.Get_rank() == 0:
                comm.allgather(obj)
            else:
                comm.gather(obj, 1)
            raise AssertionError("rank %d: allgather beside gather returned" % rank)
        except InvalidArgumentError as e:
            assert "disagree on the operation" in str(e), e
        still_works(comm)


def intercomm():
    half = size // 2
    group = 0 if rank < half else 1
    local = MPI.COMM_WORLD.Split(group, rank)
    inter = mpi.Intercomm(local.Create_intercomm(0, MPI.COMM_WORLD, half if group == 0 else 0,
                                                 11))
    local.Free()
    me, remote = inter.Get_rank(), inter.Get_remote_size()
    # group 0's rank 0 is the root; group 1's last rank receives under a limit
    bad = group == 1 and me == inter.Get_size() - 1
    if group == 0:
        root = MPI.ROOT if me == 0 else MPI.PROC_NULL
        expect(inter.bcast, None, big(7), root)
        expect(inter.bcast, Exception if me == 0 else None, (lambda: 0), root)
    else:
        expect(inter.bcast, LimitError if bad else None, None, 0,
               max_bytes=1000 if bad else None)
        expect(inter.bcast, None, None, 0)
    expect(inter.allgather, LimitError if bad else None, big(me),
           max_bytes=1000 if bad else None)
    for source, obj in enumerate(inter.alltoall([big(me * 10 + d) for d in range(remote)])):
        check(obj, source * 10 + me)
    if size == 2:  # one process and one: bcast's receiver answers early (§14.5)
        coll = _mpi_coll_call.collectives(inter)
        before = coll.early_answers
        got = inter.bcast({"plain": [1, 2]} if group == 0 else None,
                          MPI.ROOT if group == 0 else 0)
        assert got == (None if group == 0 else {"plain": [1, 2]}), got
        assert coll.early_answers == before + (group == 1)
    still_works(inter, True)
    inter.Free()


trees(world)
limits(world)
senders_fail(world)
bad_frame(world)
long_heads(world)
disagree(world)
leaf_fails(world)
early_answer(world)
lean_root(world)
c_path(world)
per_call_lookups(world)
disagree_unsent(world)
dup = world.Dup()
trees(dup)
senders_fail(dup)
dup.Free()
intercomm()
print("rank %d: ok" % rank)
sys.stdout.flush()

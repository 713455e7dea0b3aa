"""Run under `mpiexec -n 2` or `-n 3`: rank 0 is a hostile sender that writes cdtypes.mpi
messages by hand (heads and parts truncated, extended, under wrong ids, with wrong counts,
parts that never come or come late); rank 1 receives every one and must get the object the
sender meant or a clear cdtypes error, within a bounded time, never an object holding bytes
that its receive did not write. Rank 2 (with 3 ranks) is an honest sender whose objects are
received between the hostile ones: none of rank 0's parts may ever reach them.

Both ranks draw the same cases from one seed (argv[1]; argv[2], optional, names the kinds of
case to run, separated by commas). A case whose parts never come under the
id the receiver waits for is received with a short PARTS_TIMEOUT; every other case with a long
one, so that no outcome depends on timing."""
import functools
import random
import sys
import traceback

import numpy as np
from mpi4py import MPI

import cdtypes
from cdtypes import mpi
from cdtypes._backend import impl as backend

comm = MPI.COMM_WORLD
assert comm.size in (2, 3), "run with 2 or 3 processes"
rank = comm.rank
pc = mpi.attach(comm)
HOSTILE, RECEIVER, HONEST = 0, 1, 2
SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1
ONLY = sys.argv[2].split(",") if len(sys.argv) > 2 else None  # run only these kinds
T = mpi.THRESHOLD
GO, DONE, PRIME = 30001, 30002, 30003
SHORT_WAIT, LONG_WAIT = 0.2, 120.0
STRAY_IDS = list(range(1, 40))  # the ids an honest rank's objects use first


def arrays(rng, n):
    return [rng.integers(0, 256, size=rng.integers(T, 3 * T), dtype=np.uint8) for _ in range(n)]


def make_cases(seed):
    """[(kind, object, parameter)], the same on every rank"""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    kinds = (["ok"] * 3 + ["parts_short", "parts_long", "parts_wrong_id", "parts_missing",
                           "head_short", "head_long", "head_threshold", "head_wrong_id",
                           "over_limit_parts", "over_limit_no_parts", "late_stale"] * 2)
    rng.shuffle(kinds)
    cases = [("issue", [np.zeros(1 << 20, np.uint8)], None)]
    for kind in kinds:
        obj = arrays(nrng, rng.randint(1, 3))
        nbytes = sum(a.nbytes for a in obj)
        param = {
            "parts_short": rng.choice([nbytes - 1, 1, rng.randint(1, nbytes - 1)]),
            "parts_long": rng.choice([1, 8, rng.randint(1, 4 * T)]),
            "parts_wrong_id": rng.choice(STRAY_IDS),
            "head_short": rng.randint(1, 400),
            "head_long": rng.randint(1, 400),
            "head_threshold": rng.choice([0, 1, T - 1, T + 1, 3 * T, 1 << 40, (1 << 64) - 1,
                                          rng.randint(0, 3 * T)]),
        }.get(kind)
        cases.append((kind, obj, param))
    return [c for c in cases if ONLY is None or c[0] in ONLY]


def same(a, b):
    return (isinstance(b, list) and len(a) == len(b)
            and all(isinstance(y, np.ndarray) and x.dtype == y.dtype and np.array_equal(x, y)
                    for x, y in zip(a, b)))


def pack(obj, oid):
    """(head bytearray, the parts message's bytes) of obj sent under object id oid"""
    frame, head, parts, _ = backend.mpi_pack(obj, oid, T)
    try:
        return head, b"".join(bytes(p) for p in parts)
    finally:
        frame.close()


def hostile(cases):
    pending = []  # (request, bytes) of every parts message sent

    def send(head, tag, blob=None, oid=None):
        if blob is not None:
            pending.append((pc.Isend([blob, MPI.BYTE], RECEIVER, oid), blob))
        comm.Send([head, MPI.BYTE], RECEIVER, tag)

    for tag, (kind, obj, param) in enumerate(cases):
        oid = 1000 + tag
        head, blob = pack(obj, oid)
        if kind in ("ok", "head_short", "head_long", "head_threshold", "over_limit_parts"):
            if kind == "head_short":
                head = head[:max(0, len(head) - param)]
            elif kind == "head_long":
                head = head + bytes(random.Random(tag).randrange(256) for _ in range(param))
            elif kind == "head_threshold":
                head[8:16] = param.to_bytes(8, "little")
            send(head, tag, blob, oid)
        elif kind == "issue":
            send(head, tag, blob[:1], oid)  # a 1 MiB array announced, one byte sent
        elif kind == "parts_short":
            send(head, tag, blob[:len(blob) - param], oid)
        elif kind == "parts_long":
            send(head, tag, blob + bytes(param), oid)
        elif kind == "parts_wrong_id":
            send(head, tag, blob, param)
        elif kind == "parts_missing" or kind == "over_limit_no_parts":
            send(head, tag)
        elif kind == "head_wrong_id":
            head[4:8] = (5000 + tag).to_bytes(4, "little")  # an id nothing is sent under
            send(head, tag, blob, oid)
        elif kind == "late_stale":
            send(head, tag)  # over the receiver's max_bytes, its parts held back
            comm.recv(source=RECEIVER, tag=GO)  # the receiver's drain gave up on them
            stale = bytes(len(blob))  # now they come, then an honest object under that id
            pending.append((pc.Isend([stale, MPI.BYTE], RECEIVER, oid), stale))
            send(head, tag + 20000, blob, oid)
    # every parts message is consumed by the receiver (received, drained or discarded)
    while not MPI.Request.Testall([r for r, _ in pending]):
        pass
    comm.send(None, dest=RECEIVER, tag=DONE)


def honest():
    nrng = np.random.default_rng(SEED + 99)
    mpi.send(np.full(1 << 20, 0xAB, np.uint8), dest=RECEIVER, tag=PRIME)
    for tag in range(len(make_cases(SEED))):
        mpi.send(arrays(nrng, 2), dest=RECEIVER, tag=tag)


def expect_error(kind, tag, receive, cls=cdtypes.CdtError, text=None):
    try:
        got = receive()
    except cls as e:
        assert text is None or text in str(e), "case %d (%s): %s" % (tag, kind, e)
        return None
    if isinstance(got, list):
        got = "arrays of %s bytes, %d of them 0xAB as in the cache's earlier object" % (
            [a.nbytes for a in got], sum(int((a == 0xAB).sum()) for a in got))
    raise AssertionError("case %d (%s): no %s, but %s" % (tag, kind, cls.__name__, got))


def receive_by_recv(tag, **kw):
    return mpi.recv(source=HOSTILE, tag=tag, **kw)


def receive_by_test(tag, **kw):
    """irecv, then test() until done (every step of the receive without blocking)"""
    r = mpi.irecv(source=HOSTILE, tag=tag, **kw)
    while not r.test():
        pass
    return r.wait()


def receiver(cases):
    untrusted = {"max_bytes": 1 << 24, "max_regions": 16, "allowed": True}
    hrng = np.random.default_rng(SEED + 99)
    # the receive cache holds an honest rank's 1 MiB of 0xAB (rank 0 itself with 2 ranks)
    got = mpi.recv(source=HONEST if comm.size == 3 else HOSTILE, tag=PRIME)
    assert got.nbytes == 1 << 20 and (got == 0xAB).all()
    del got
    counts = {}
    for tag, (kind, obj, param) in enumerate(cases):
        counts[kind] = counts.get(kind, 0) + 1
        never = kind in ("parts_wrong_id", "parts_missing", "head_wrong_id",
                         "over_limit_no_parts", "late_stale")
        mpi.PARTS_TIMEOUT = SHORT_WAIT if never else LONG_WAIT
        recv = receive_by_test if tag % 2 else receive_by_recv
        recv = functools.partial(recv, tag)
        if kind == "ok":
            assert same(obj, recv(**untrusted)), "case %d: wrong data" % tag
        elif kind == "issue":
            expect_error(kind, tag, lambda: recv(**untrusted), cdtypes.FrameTruncatedError,
                         "rank 0")
        elif kind == "parts_short":
            expect_error(kind, tag, lambda: recv(**untrusted), cdtypes.FrameTruncatedError,
                         "rank 0")
        elif kind == "parts_long":
            expect_error(kind, tag, recv, cdtypes.FrameMalformedError, "rank 0")
        elif kind in ("parts_wrong_id", "parts_missing", "head_wrong_id"):
            expect_error(kind, tag, lambda: recv(**untrusted), cdtypes.CdtTimeoutError, "rank 0")
        elif kind in ("head_short", "head_long"):
            expect_error(kind, tag, lambda: recv(**untrusted))
        elif kind == "head_threshold":  # the object meant, or an error: never other bytes
            try:
                got = recv(**untrusted)
                assert same(obj, got), "case %d: wrong data" % tag
            except cdtypes.CdtError:
                pass
        elif kind in ("over_limit_parts", "over_limit_no_parts"):
            expect_error(kind, tag, lambda: recv(max_bytes=100), cdtypes.LimitError)
        elif kind == "late_stale":
            expect_error(kind, tag, lambda: recv(max_bytes=100), cdtypes.LimitError)
            comm.send(None, dest=HOSTILE, tag=GO)
            mpi.PARTS_TIMEOUT = LONG_WAIT
            assert same(obj, mpi.recv(source=HOSTILE, tag=tag + 20000)), \
                "case %d: a stale part reached a later object" % tag
        if comm.size == 3:  # an honest object between the hostile ones: its own bytes only
            mpi.PARTS_TIMEOUT = LONG_WAIT
            assert same(arrays(hrng, 2), mpi.recv(source=HONEST, tag=tag, **untrusted)), \
                "case %d: an honest rank's object was corrupted" % tag
    # consume what rank 0 sent under ids nobody asked for, until it saw every send complete
    st = MPI.Status()
    while not comm.Iprobe(HOSTILE, DONE):
        m = pc.Improbe(HOSTILE, MPI.ANY_TAG, st)
        if m is not None:
            mpi._discard(m, st.Get_count(MPI.BYTE))
    comm.recv(source=HOSTILE, tag=DONE)
    print("mpi hostile rank (%d ranks, seed %d): ok %s" % (comm.size, SEED, sorted(counts.items())))


def main():
    cases = make_cases(SEED)
    if rank == HOSTILE:
        if comm.size == 2:  # the receive cache's earlier object comes from this rank
            mpi.send(np.full(1 << 20, 0xAB, np.uint8), dest=RECEIVER, tag=PRIME)
        hostile(cases)
    elif rank == RECEIVER:
        receiver(cases)
    else:
        honest()
    comm.Barrier()


try:
    main()
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    comm.Abort(1)

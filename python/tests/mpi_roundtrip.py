"""Run under `mpiexec -n 2`: objects sent with cdtypes.mpi arrive whole; each object is one head
message on the user's communicator plus one message of its large buffers on its duplicate."""
import sys
import threading
from ipaddress import IPv4Address

import numpy as np
from mpi4py import MPI

import cdtypes
from cdtypes import mpi

comm = MPI.COMM_WORLD
assert comm.size == 2, "run with 2 processes"
rank = comm.rank
peer = 1 - rank
T = mpi.THRESHOLD

objects = [
    {"a": np.arange(1000, dtype=np.float64), "s": "hello", "l": [1, 2, 3]},
    [np.full(128 * 1024 // 8, i, dtype=np.int64) for i in range(20)],
    np.zeros(0, dtype=np.float32),
    np.arange(12, dtype=np.complex128).reshape(3, 4, order="F"),
    np.arange(1000)[::7],  # non-contiguous: in-band
    "just a string",
    {"big": np.ones(3 * 1024 * 1024 + 5, dtype=np.uint8), "small": np.arange(5),
     "f": np.asfortranarray(np.arange(T, dtype=np.int32).reshape(64, -1))},
    [np.full(T - 1, 1, np.uint8), np.full(T, 2, np.uint8), np.full(T + 1, 3, np.uint8)],
]


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def arrays(obj):
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in arrays(v)]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj for x in arrays(v)]
    return []


def nothing_pending():
    c2 = mpi.attach(comm)
    return not comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG) and not c2.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)


sub = comm.Split(0, rank)  # an intracommunicator that is not attached: objects travel whole
NTHREADS = 4

if rank == 0:
    for i, obj in enumerate(objects):
        mpi.send(obj, dest=1, tag=i)
    reqs = [mpi.isend(obj, dest=1, tag=100 + i) for i, obj in enumerate(objects)]
    for r in reqs:
        r.wait()
    back = mpi.recv(source=1, tag=200)
    assert same(back, objects[1])
    # untrusted receives: limits and the allow-list
    mpi.send(objects[1], dest=1, tag=300)                      # over max_bytes (header)
    mpi.send(objects[6], dest=1, tag=304)                      # over max_bytes (message size)
    mpi.send(objects[1], dest=1, tag=301)                      # over max_regions
    mpi.send({"f": IPv4Address("10.0.0.1")}, dest=1, tag=302)  # not in the allow-list
    mpi.send(objects[0], dest=1, tag=303)                      # within everything
    for i, obj in enumerate(objects):                          # a communicator not attached
        mpi.send(obj, dest=1, tag=i, comm=sub)
    # Python threads sending at once, same tag
    if MPI.Query_thread() >= MPI.THREAD_MULTIPLE:
        def sender(k):
            for j in range(5):
                mpi.send((k, j, objects[(k + j) % len(objects)]), dest=1, tag=500)
        ts = [threading.Thread(target=sender, args=(k,)) for k in range(NTHREADS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    mpi.send(objects[6], dest=1, tag=600)  # for irecv
    comm.Barrier()
    ok = comm.recv(source=1, tag=999)
else:
    for i, obj in enumerate(objects):
        st = MPI.Status()
        got = mpi.recv(source=0, tag=i, status=st)
        assert same(got, obj), "object %d differs" % i
        with cdtypes.dumps(obj) as f:  # the head: the frame without the large buffers
            large = sum(a.nbytes for a in arrays(obj) if a.nbytes >= T
                        and (a.flags.c_contiguous or a.flags.f_contiguous))
            assert st.Get_count(MPI.BYTE) == 16 + f.size - large, (st.Get_count(MPI.BYTE), f.size)
        for arr in arrays(got):
            if arr.size:
                assert arr.flags.writeable
                arr[...] = arr  # writable
    for i in reversed(range(len(objects))):  # any order, wildcard source
        assert same(mpi.recv(source=MPI.ANY_SOURCE, tag=100 + i), objects[i])
    mpi.send(objects[1], dest=0, tag=200)
    allocated = []

    def counting(n):
        allocated.append(n)
        return np.empty(n, dtype=np.uint8)

    for tag, kw in ((300, {"max_bytes": 100_000}), (304, {"max_bytes": 100_000}),
                    (301, {"max_regions": 19})):
        try:
            mpi.recv(source=0, tag=tag, alloc=counting, **kw)
            raise AssertionError("limit %r was not enforced" % (kw,))
        except cdtypes.LimitError as e:
            assert "max_" in str(e)
    assert allocated == [], "buffers were allocated before the limit was checked"
    try:
        mpi.recv(source=0, tag=302, allowed=True)
        raise AssertionError("a class outside the allow-list was rebuilt")
    except cdtypes.ForbiddenError:
        pass
    got = mpi.recv(source=0, tag=303, allowed=True, max_bytes=1 << 20, max_regions=1)
    assert same(got, objects[0])
    for i, obj in enumerate(objects):
        st = MPI.Status()
        assert same(mpi.recv(source=0, tag=i, comm=sub, status=st, alloc=counting), obj)
        with cdtypes.dumps(obj) as f:  # not attached: the whole frame in one message
            assert st.Get_count(MPI.BYTE) == 16 + f.size
    assert allocated, "alloc= was not used"
    if MPI.Query_thread() >= MPI.THREAD_MULTIPLE:
        seen = []
        lock = threading.Lock()

        def receiver():
            for _ in range(5):
                k, j, o = mpi.recv(source=0, tag=500)
                assert same(o, objects[(k + j) % len(objects)])
                with lock:
                    seen.append((k, j))
        ts = [threading.Thread(target=receiver) for _ in range(NTHREADS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sorted(seen) == [(k, j) for k in range(NTHREADS) for j in range(5)], seen
    # irecv: cancel before a match, test until done, then wait gives the object
    r = mpi.irecv(source=0, tag=12345)
    assert r.cancel()
    try:
        r.wait()
        raise AssertionError("a canceled receive gave an object")
    except cdtypes.CanceledError:
        pass
    r = mpi.irecv(source=0, tag=600)
    while not r.test():
        pass
    assert same(r.wait(), objects[6]) and not r.cancel()
    comm.Barrier()
    # every object's messages were consumed: nothing else is pending on either communicator
    comm.send(nothing_pending(), dest=0, tag=999)
    print("mpi round trips: ok")
sub.Free()  # with the attribute cdtypes.mpi set on it (python/asan.sh --mpi finds no leak)
sys.exit(0 if rank != 0 or ok else 1)

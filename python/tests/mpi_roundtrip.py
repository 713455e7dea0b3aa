"""Run under `mpiexec -n 2`: objects sent with cdtypes.mpi arrive as ONE message each."""
import sys
from fractions import Fraction

import numpy as np
from mpi4py import MPI

import cdtypes
from cdtypes import mpi

comm = MPI.COMM_WORLD
assert comm.size == 2, "run with 2 processes"
rank = comm.rank

objects = [
    {"a": np.arange(1000, dtype=np.float64), "s": "hello", "l": [1, 2, 3]},
    [np.full(128 * 1024 // 8, i, dtype=np.int64) for i in range(20)],
    np.zeros(0, dtype=np.float32),
    np.arange(12, dtype=np.complex128).reshape(3, 4, order="F"),
    np.arange(1000)[::7],  # non-contiguous: in-band
    "just a string",
    {"big": np.ones(3 * 1024 * 1024 + 5, dtype=np.uint8)},
]


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


if rank == 0:
    for i, obj in enumerate(objects):
        mpi.send(obj, dest=1, tag=i)
    reqs = [mpi.isend(obj, dest=1, tag=100 + i, gather=(None, True, False)[i % 3]) for i, obj in enumerate(objects)]
    for r in reqs:
        r.wait()
    back = mpi.recv(source=1, tag=200)
    assert same(back, objects[1])
    # untrusted receives: limits and the allow-list
    mpi.send(objects[1], dest=1, tag=300)                      # over max_bytes
    mpi.send(objects[1], dest=1, tag=301)                      # over max_regions
    mpi.send({"f": Fraction(1, 3)}, dest=1, tag=302)           # not in the allow-list
    mpi.send(objects[0], dest=1, tag=303)                      # within everything
    comm.Barrier()
    ok = comm.recv(source=1, tag=999)
    sys.exit(0 if ok else 1)
else:
    for i, obj in enumerate(objects):
        st = MPI.Status()
        got = mpi.recv(source=0, tag=i, status=st)
        assert same(got, obj), "object %d differs" % i
        with cdtypes.dumps(obj) as f:  # the message is exactly one frame
            assert st.Get_count(MPI.BYTE) == f.size, (st.Get_count(MPI.BYTE), f.size)
        for arr in (got.values() if isinstance(got, dict) else got if isinstance(got, list) else [got]):
            if isinstance(arr, np.ndarray) and arr.size:
                assert arr.flags.writeable
                arr[...] = arr  # writable, in the receive buffer
    for i in reversed(range(len(objects))):  # any order
        assert same(mpi.recv(source=0, tag=100 + i), objects[i])
    mpi.send(objects[1], dest=0, tag=200)
    allocated = []
    real_alloc = mpi.default_alloc
    mpi.default_alloc = lambda n: allocated.append(n) or real_alloc(n)
    try:
        mpi.recv(source=0, tag=300, max_bytes=100_000)
        raise AssertionError("max_bytes was not enforced")
    except cdtypes.LimitError:
        pass
    finally:
        mpi.default_alloc = real_alloc
    assert allocated == [], "the receive buffer was allocated before the limit was checked"
    try:
        mpi.recv(source=0, tag=301, max_regions=19)
        raise AssertionError("max_regions was not enforced")
    except cdtypes.LimitError:
        pass
    try:
        mpi.recv(source=0, tag=302, allowed=True)
        raise AssertionError("a class outside the allow-list was rebuilt")
    except cdtypes.ForbiddenError:
        pass
    got = mpi.recv(source=0, tag=303, allowed=True, max_bytes=1 << 20, max_regions=1)
    assert same(got, objects[0])
    comm.Barrier()
    # every message was consumed by one Mprobe/Mrecv each: nothing else is pending
    pending = comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
    comm.send(not pending, dest=0, tag=999)
    print("mpi one-message round trips: ok")

"""Run under `mpiexec -n 2`: objects sent with cdtypes.mpi arrive as ONE message each."""
import sys

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
    comm.Barrier()
    # every message was consumed by one Mprobe/Mrecv each: nothing else is pending
    pending = comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
    comm.send(not pending, dest=0, tag=999)
    print("mpi one-message round trips: ok")

"""PyPy: cdtypes.mpi's receive memory is freed with the array rebuilt on it, without waiting
for major collections (bench/results/framework_findings.md).

On PyPy the parts of a cdtypes.mpi receive (mpi_unpack without an allocator) go into mpi4py
buffers (MPI.buffer.allocate), as pkl5's do, not into cdtpy_alloc's memory: an array rebuilt on
one holds it by a reference count, and nothing with a finalizer refers to it, so that it is
freed when the collector drops the array, and its size starts no major collection (220 ms each
once NumPy is imported). The memory of cdtpy_alloc went back only through ffi.gc destructors,
run after a major collection, and each 32 MiB receive told the collector its size: one major
collection per receive. The parts mpi_pack gives for an object's own buffers are views of those
buffers, not windows kept by ffi.gc destructors."""
import gc
import pickle
import sys

import numpy as np
import pytest

if sys.implementation.name != "pypy":
    pytest.skip("PyPy's receive path", allow_module_level=True)
MPI = pytest.importorskip("mpi4py.MPI")  # cdtypes.mpi's receive runs with mpi4py imported

from cdtypes._backend import impl  # noqa: E402  (after the skip)

MIB = 1 << 20


def _receive(head):
    inc, _, dests, _ = impl.mpi_unpack(head, None, -1, -1)
    stream, buffers = inc.finish()
    return dests, buffers, stream


def test_received_parts_are_mpi4py_buffers():
    obj = {"a": np.arange(100_000, dtype=np.float64), "b": np.arange(50_000, dtype=np.int32)}
    frame, head, parts, _ = impl.mpi_pack(obj, 3, 1024)
    dests, buffers, stream = _receive(bytes(head))
    assert len(dests) == len(buffers) == 2
    for d, p in zip(dests, parts):
        assert type(d) is MPI.buffer  # not cdtpy_alloc's memory behind an ffi.gc buffer
        assert d.address % 64 == 0
        memoryview(d).cast("B")[:] = memoryview(p).cast("B")
    frame.close()
    out = pickle.loads(stream, buffers=buffers)
    np.testing.assert_array_equal(out["a"], obj["a"])
    np.testing.assert_array_equal(out["b"], obj["b"])
    base = out["a"]
    while isinstance(base, np.ndarray):
        base = base.base
    assert type(base) is MPI.buffer  # the array holds the receive memory itself


def test_parts_of_own_buffers_are_their_views():
    a = np.arange(1 << 18, dtype=np.float64)
    frame, head, parts, _ = impl.mpi_pack(a, 1, 1024)
    assert len(parts) == 1 and parts[0].readonly
    assert parts[0].obj is a  # the array's own view, not a window on the frame
    frame.close()
    del frame
    assert bytes(parts[0]) == a.tobytes()


def test_large_receives_start_no_major_collection():
    """20 arrays of 32 MiB received and dropped: the old receive made about one major
    collection each."""
    a = np.ones(32 * MIB // 8)
    frame, head, _, _ = impl.mpi_pack(a, 1, 1024)
    head = bytes(head)
    frame.close()
    majors = []
    gc.collect()
    gc.hooks.on_gc_collect = majors.append
    try:
        for _ in range(20):
            _, buffers, stream = _receive(head)
            out = pickle.loads(stream, buffers=buffers)
            assert out.nbytes == 32 * MIB
            del out, buffers, stream
    finally:
        gc.hooks.on_gc_collect = None
    assert len(majors) <= 3, "%d major collections in 20 receives of 32 MiB" % len(majors)

import gc
import pickle

import numpy as np
import pytest

import cdtypes

DTYPES = [
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, ">f8", "<i4", "S7", "U3",
    np.dtype([("x", "<f4"), ("y", "<i8")]), np.dtype([("a", "u1"), ("b", ">f8")], align=False),
]
SIZES = [0, 1, 7, 1000, 100_000]


def roundtrip(obj, **kw):
    with cdtypes.dumps(obj) as frame:
        data = frame.tobytes()
        assert len(data) == frame.size
        assert b"".join(bytes(v) for v in frame.iov()) == data
        assert bytes(frame.head) == data[: len(frame.head)]
    return cdtypes.loads(data, **kw)


@pytest.mark.parametrize("obj", [
    None, 0, -1, 2**100, 1.5, "", "héllo", b"", b"bytes" * 1000, [], {}, (1, "a", None),
    {"nested": [{"a": [1, 2, {"b": (3.0, "x")}]}], 5: frozenset({1, 2})},
    list(range(10000)), "x" * 1_000_000, bytearray(b"abc"),
])
def test_plain_objects(obj):
    assert roundtrip(obj) == obj


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_numpy_dtypes_and_sizes(dtype, n):
    a = np.zeros(n, dtype=dtype)
    if n:
        a.view(np.uint8)[:] = np.random.default_rng(n).integers(0, 256, a.nbytes, dtype=np.uint8)
    b = roundtrip(a)
    assert b.dtype == a.dtype and b.shape == a.shape
    assert a.tobytes() == b.tobytes()
    assert b.flags.writeable


@pytest.mark.parametrize("order", ["C", "F"])
def test_multidimensional(order):
    a = np.arange(6 * 7 * 8, dtype=np.float64).reshape((6, 7, 8), order=order)
    b = roundtrip(a)
    np.testing.assert_array_equal(a, b)
    assert b.flags.f_contiguous == a.flags.f_contiguous


@pytest.mark.parametrize("make", [
    lambda: np.arange(1000)[::3],
    lambda: np.arange(200.0).reshape(10, 20)[:, 2:5],
    lambda: np.arange(100, dtype=np.int16)[::-1],
])
def test_non_contiguous_goes_in_band(make):
    a = make()
    with cdtypes.dumps(a) as frame:
        assert frame.nbuffers == 0  # pickle copies non-contiguous arrays into its stream
        b = cdtypes.loads(frame.tobytes())
    np.testing.assert_array_equal(a, b)


def test_buffers_out_of_band_and_counted():
    arrays = [np.full(1000 + i, i, dtype=np.int32) for i in range(10)]
    obj = {"arrays": arrays, "name": "x"}
    with cdtypes.dumps(obj) as frame:
        assert frame.nbuffers == 10
        assert frame.size >= sum(a.nbytes for a in arrays)
        # the pickle stream itself is small: the arrays are not in the head
        assert len(frame.head) < 2000
        out = cdtypes.loads(frame.tobytes())
    for a, b in zip(arrays, out["arrays"]):
        np.testing.assert_array_equal(a, b)


def test_send_side_is_zero_copy():
    a = np.arange(100_000, dtype=np.float64)
    with cdtypes.dumps(a) as frame:
        pieces = frame.iov()
        region = [v for v in pieces if len(v) == a.nbytes]
        assert region, "the array is one piece of the frame"
        assert np.shares_memory(np.frombuffer(region[0], dtype=np.uint8), a)


def test_received_arrays_live_in_allocator_memory():
    given = []

    def alloc(nbytes):
        buf = np.empty(nbytes, dtype=np.uint8)
        given.append(buf)
        return buf

    src = {"a": np.arange(5000, dtype=np.float32), "b": [np.ones((30, 40), dtype=np.complex128)]}
    out = roundtrip(src, alloc=alloc)
    assert len(given) == 2
    assert np.shares_memory(out["a"], given[0])
    assert np.shares_memory(out["b"][0], given[1])
    assert out["a"].__array_interface__["data"][0] == given[0].__array_interface__["data"][0]
    out["a"][0] = 42.0  # writable, and the memory is the allocator's
    assert given[0][:4].view(np.float32)[0] == 42.0


def test_default_alloc_is_aligned_and_writable():
    src = [np.arange(n, dtype=np.float64) for n in (1, 3, 1000, 12345)]
    out = roundtrip(src)
    for a, b in zip(src, out):
        np.testing.assert_array_equal(a, b)
        assert b.flags.writeable
        assert b.__array_interface__["data"][0] % cdtypes.ALIGN == 0


def test_large_buffers_start_on_a_huge_page_boundary():
    # 4 MiB and more: allocated on 2 MiB and marked for transparent huge pages, as NumPy's own
    # arrays (libcdt/src/sobj/cdt_receive_memory.h); below that, 64-byte aligned only
    src = {"big": np.arange((8 << 20) // 8, dtype=np.float64), "mid": np.ones(1 << 20, np.uint8)}
    for _ in range(2):  # the second time from the receive-memory cache
        out = roundtrip(src)
        np.testing.assert_array_equal(out["big"], src["big"])
        np.testing.assert_array_equal(out["mid"], src["mid"])
        assert out["big"].__array_interface__["data"][0] % (2 << 20) == 0
        assert out["mid"].__array_interface__["data"][0] % cdtypes.ALIGN == 0
        del out


def test_freed_buffers_are_reused_for_the_next_object():
    # every buffer of 64 KiB and more comes back from the receive-memory cache when the object
    # that held it is gone (many equal sizes included), so its pages are not faulted in again
    src = {"arrays": [np.full(128 * 1024, i, dtype=np.uint8) for i in range(40)],
           "other": np.ones(300_000, np.uint8)}
    def addresses(obj):
        return sorted(a.__array_interface__["data"][0] for a in obj["arrays"] + [obj["other"]])
    first = roundtrip(src)
    seen = addresses(first)
    del first
    for _ in range(3):  # PyPy frees the buffers when its collector runs (finalizers: twice)
        gc.collect()
    second = roundtrip(src)
    assert addresses(second) == seen
    for i, a in enumerate(second["arrays"]):
        assert (a == i).all()


def test_inplace_views_the_receive_buffer():
    a = np.arange(10_000, dtype=np.int64)
    with cdtypes.dumps({"a": a}) as frame:
        buf = np.empty(frame.size, dtype=np.uint8)
        frame.gather_into(buf)
    out = cdtypes.loads(buf, inplace=True)
    np.testing.assert_array_equal(out["a"], a)
    assert np.shares_memory(out["a"], buf)


def test_picklebuffer_of_bytearray_travels_out_of_band():
    data = bytearray(b"z" * 100_000)
    with cdtypes.dumps(pickle.PickleBuffer(data)) as frame:
        assert frame.nbuffers == 1
        out = cdtypes.loads(frame.tobytes())
    assert bytes(out) == bytes(data)


def test_frame_close_and_context_manager():
    frame = cdtypes.dumps(np.zeros(10))
    frame.close()
    frame.close()
    with pytest.raises(ValueError):
        frame.iov()
    assert "closed" in repr(frame)


def test_loads_accepts_memoryview_and_bytearray():
    with cdtypes.dumps([np.arange(10), "s"]) as frame:
        data = frame.tobytes()
    for d in (data, bytearray(data), memoryview(data)):
        out = cdtypes.loads(d)
        np.testing.assert_array_equal(out[0], np.arange(10))


def test_large_bytes_in_band_unless_pickle_buffer():
    """docs/PYTHON.md, "Large bytes": a bytes value travels in band and comes back as bytes; as
    a PickleBuffer it is an out-of-band buffer, received as a read-only memoryview (a writable
    buffer for a bytearray)."""
    blob = bytes(range(256)) * 4096  # 1 MiB
    with cdtypes.dumps({"b": blob}) as f:
        assert f.nbuffers == 0
        back = cdtypes.loads(f.tobytes())["b"]
    assert type(back) is bytes and back == blob
    with cdtypes.dumps({"b": pickle.PickleBuffer(blob)}) as f:
        assert f.nbuffers == 1
        back = cdtypes.loads(f.tobytes())["b"]
    assert isinstance(back, memoryview) and back.readonly and bytes(back) == blob
    with cdtypes.dumps({"b": pickle.PickleBuffer(bytearray(blob))}) as f:
        assert f.nbuffers == 1
        back = cdtypes.loads(f.tobytes())["b"]
    assert not memoryview(back).readonly and bytes(back) == blob

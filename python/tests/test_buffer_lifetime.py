"""Every buffer the package hands out stays valid as long as it is referenced.

Inventory (both backends: the C extension and cffi):
  Frame.head, Frame.iov()       memoryviews on the frame's memory (its head, and the buffers of
                                the object it references): they keep that memory alive; close()
                                frees it when the last view is gone (not mmap's BufferError:
                                views go on PyPy only when its collector runs, and cdtypes.mpi
                                closes frames whose parts are still referenced)
  mpi_pack parts                the same, windows on the frame's regions
  mpi_unpack destinations       windows on the receive's buffers: hold an export of them
  loads() buffers               own their memory (the receive cache takes it back only when
                                they are gone); loads(inplace=True): views of the data, holding
                                an export of it
  UCX receive buffers           the same buffers as loads(), filled by the transport
  Frame.iov_raw()               plain addresses: valid while the frame's memory is (documented)

The use-after-free these pin down (a view read freed memory after Frame.close()) shows as wrong
bytes here and as a heap-use-after-free report when run under AddressSanitizer (scripts/test
runs this file so; docs/TESTING.md)."""
import gc
import os
import pickle
import platform

import numpy as np
import pytest

import cdtypes
from cdtypes._backend import impl

CPYTHON = platform.python_implementation() == "CPython"
# PyPy's bytearray does not refuse a resize while it is exported; CPython's does
exports_lock = pytest.mark.skipif(not CPYTHON, reason="bytearray export locks are CPython's")


def churn():
    """Free what can be freed, then allocate and fill memory of the sizes around: freed frame
    memory would be handed out again and overwritten."""
    gc.collect()
    keep = []
    for n in (3000, 3200, 4096, 8000, 800_000, 800_064, 1 << 20):
        for _ in range(4):
            keep.append(np.full(n, 0xEE, dtype=np.uint8))
            keep.append(bytearray(b"\xdd" * n))
    for i in range(20):
        with cdtypes.dumps({"a": np.full(100_000, -i), "s": "y" * 3000}) as f:
            keep.append(f.tobytes())
    return keep


def the_object():
    # the object: a region (a NumPy array) and an in-band stream of 3000 bytes
    return {"a": np.arange(100_000), "s": "x" * 3000}


def test_iov_views_outlive_close():
    f = cdtypes.dumps(the_object())  # the object itself is gone after this line
    views = f.iov()
    expected = [bytes(v) for v in views]
    assert len(expected) >= 2
    f.close()
    junk = churn()
    assert [bytes(v) for v in views] == expected
    assert cdtypes.loads(b"".join(bytes(v) for v in views))["s"] == "x" * 3000
    del junk


def test_head_view_outlives_close():
    f = cdtypes.dumps(the_object())
    head = f.head
    expected = bytes(head)
    f.close()
    junk = churn()
    assert bytes(head) == expected
    del junk


def test_views_outlive_the_frame_object():
    views = cdtypes.dumps(the_object()).iov()  # the Frame itself is dropped at once
    expected = [bytes(v) for v in views]
    junk = churn()
    assert [bytes(v) for v in views] == expected
    del junk


def test_closed_frame_refuses_new_views():
    f = cdtypes.dumps(the_object())
    keep = f.iov()
    f.close()
    for op in (lambda: f.iov(), lambda: f.head, lambda: f.iov_raw(), lambda: f.tobytes(),
               lambda: f.nbuffers, lambda: f.gather_into(bytearray(10))):
        with pytest.raises(ValueError, match="closed Frame"):
            op()
    assert "closed" in repr(f)
    f.close()  # idempotent, with views alive too
    del keep


def released(pb):
    """Whether the frame gave its PickleBuffer back (released it): memoryview() then fails."""
    try:
        memoryview(pb).release()
    except ValueError:
        return True
    return False


def collect():
    for _ in range(3):  # PyPy runs the destructors of what one collection found in the next
        gc.collect()


def test_close_never_releases_the_objects_pickle_buffer():
    """A PickleBuffer the object holds is the caller's: the frame's close drops its hold and
    never releases it, so the object can be used and sent again (as with pickle and
    mpi4py.util.pkl5; a released one raised "operation forbidden on released PickleBuffer
    object" at its next use)."""
    data = bytearray(b"q" * 100_000)
    pb = pickle.PickleBuffer(data)
    obj = {"blob": pb, "n": 1}
    for _ in range(3):
        f = cdtypes.dumps(obj)
        views = f.iov()
        head = f.head
        f.close()
        del views, head
        collect()
        assert not released(pb)
        with cdtypes.dumps(obj) as again:  # the same object, sent again
            back = cdtypes.loads(again.tobytes())
        assert bytes(back["blob"]) == bytes(data) and back["n"] == 1
    assert bytes(memoryview(pb)) == bytes(data)


@exports_lock
def test_close_frees_when_the_last_view_goes():
    """The frame's hold on the buffer ends with its last view; the caller's own PickleBuffer
    keeps its own export until the caller drops it."""
    data = bytearray(b"q" * 100_000)
    pb = pickle.PickleBuffer(data)
    f = cdtypes.dumps(pb)
    views = f.iov()
    head = f.head
    f.close()
    del pb  # the caller's export gone: only the frame's views hold the buffer now
    collect()
    with pytest.raises(BufferError):  # the frame still references it for the views
        data.extend(b"!")
    del views
    collect()
    with pytest.raises(BufferError):  # the head view is still there
        data.extend(b"!")
    del head
    collect()
    data.extend(b"!")  # the frame's memory is gone, its hold on the buffer too


@exports_lock
def test_close_frees_exports_when_the_last_view_goes():
    data = bytearray(b"q" * 100_000)
    f = cdtypes.dumps(pickle.PickleBuffer(data))
    views = f.iov()
    f.close()
    with pytest.raises(BufferError):  # the frame still exports it for the views
        data.extend(b"!")
    del views
    data.extend(b"!")  # no collection needed on CPython


@exports_lock
def test_close_without_views_frees_at_once():
    data = bytearray(b"q" * 100_000)
    f = cdtypes.dumps(pickle.PickleBuffer(data))
    f.iov()  # a view made and dropped
    collect()
    f.close()
    data.extend(b"!")


def test_views_after_close_from_many_frames():
    """Views of many frames, their frames closed in random order, read back after churn."""
    rng = np.random.default_rng(1)
    frames = [cdtypes.dumps({"a": np.full(50_000 + i, i), "s": str(i) * 1000}) for i in range(16)]
    held = [(f.iov(), f.head) for f in frames]
    expected = [([bytes(v) for v in views], bytes(h)) for views, h in held]
    for k in rng.permutation(len(frames)):
        frames[k].close()
    del frames
    junk = churn()
    assert [([bytes(v) for v in views], bytes(h)) for views, h in held] == expected
    del junk


def test_adopted_frame_views_outlive_close():
    """Frame(handle, pins, buffers): a frame encoded elsewhere (here through ctypes), whose
    pins and buffers close() releases: its views keep all of that alive the same way."""
    import ctypes

    from cdtypes import _core, _lib

    stream = b"s" * 3000
    region = bytes(range(256)) * 400
    so = _lib.cdt_sobj()
    so.inband = ctypes.cast(stream, ctypes.c_void_p)
    so.inband_len = len(stream)
    sbufs = (_lib.cdt_sobj_buffer * 1)()
    pin = _lib.Pinned(region, False)
    sbufs[0].base, sbufs[0].len, sbufs[0].kind = pin.address, pin.nbytes, _lib.CDT_KIND_BYTE
    so.buffers = sbufs
    so.nbuffers = 1
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.cdt_frame_encode(ctypes.byref(so), 1, _core._SOBJ_TYPE, None,
                                         ctypes.byref(h)))
    f = _core.Frame(h.value, [pin], [])
    views, head = f.iov(), f.head
    expected = [bytes(v) for v in views]
    assert region in expected and bytes(head).endswith(stream)
    f.close()
    del f, pin, region
    junk = churn()
    assert [bytes(v) for v in views] == expected
    assert bytes(head) == expected[0]
    del junk


def test_mpi_pack_parts_outlive_close():
    frame, head, parts, _ = impl.mpi_pack(the_object(), 7, 1024)
    assert len(parts) == 1
    expected = [bytes(memoryview(p)) for p in parts]
    frame.close()
    del frame
    junk = churn()
    assert [bytes(memoryview(p)) for p in parts] == expected
    del junk


def test_mpi_unpack_destinations_hold_their_memory():
    obj = {"a": np.arange(100_000), "b": np.arange(50_000.0)}
    frame, head, parts, _ = impl.mpi_pack(obj, 3, 1024)
    given = []

    def alloc(n):
        given.append(bytearray(n))
        return given[-1]

    inc, oid, dests, _ = impl.mpi_unpack(bytes(head), alloc, -1, -1)
    assert oid == 3 and len(dests) == len(parts) == 2
    for d, p in zip(dests, parts):
        memoryview(d)[:] = memoryview(p)
    stream, buffers = inc.finish()
    del inc, stream, buffers
    gc.collect()
    if CPYTHON:
        for b in given:  # the destinations still export them
            with pytest.raises(BufferError):
                b.extend(b"!")
    junk = churn()
    for d, p in zip(dests, parts):
        assert bytes(memoryview(d)) == bytes(memoryview(p))
    frame.close()
    del junk


def test_loads_buffers_outlive_their_source():
    f = cdtypes.dumps(the_object())
    data = f.tobytes()
    f.close()
    out = cdtypes.loads(data)
    del data
    junk = churn()
    np.testing.assert_array_equal(out["a"], np.arange(100_000))
    del junk


def test_receive_cache_never_gives_out_live_memory():
    """Received buffers of 64 KiB and more go back to a cache when freed; one still referenced
    must never be handed to the next receive."""
    first = cdtypes.loads(cdtypes.dumps({"a": np.full(100_000, 1)}).tobytes())
    dropped = cdtypes.loads(cdtypes.dumps({"a": np.full(100_000, 2)}).tobytes())
    del dropped  # its memory is cached now
    gc.collect()
    later = [cdtypes.loads(cdtypes.dumps({"a": np.full(100_000, 3 + i)}).tobytes())
             for i in range(4)]
    assert (first["a"] == 1).all()
    for i, x in enumerate(later):
        assert (x["a"] == 3 + i).all()


def test_loads_inplace_views_hold_the_data():
    f = cdtypes.dumps(the_object())
    data = bytearray(f.tobytes())
    f.close()
    out = cdtypes.loads(data, inplace=True)
    assert np.shares_memory(out["a"], np.frombuffer(data, dtype=np.uint8))
    if CPYTHON:
        with pytest.raises(BufferError):
            data.extend(b"!")
    del data
    junk = churn()
    np.testing.assert_array_equal(out["a"], np.arange(100_000))
    del junk


# ---- UCX receive buffers ------------------------------------------------------------------


def _ucx():
    try:
        from cdtypes import ucx
    except ImportError as e:  # libcdt built without UCX
        pytest.skip(str(e))
    return ucx


@pytest.mark.parametrize("alloc", [None, "numpy", "bytearray"])
def test_ucx_received_buffers_outlive_request_endpoint_and_worker(alloc):
    _ucx()
    from conftest import echo_peer

    allocs = {None: None, "numpy": lambda n: np.empty(n, dtype=np.uint8), "bytearray": bytearray}
    sent = {"a": np.arange(200_000), "b": [np.full(70_000, i, dtype=np.int16) for i in range(3)],
            "s": "x" * 3000}
    with echo_peer() as ep:
        ep.send(sent, tag=20, timeout=30)
        req = ep.irecv(tag=21, alloc=allocs[alloc])
        back = req.wait(timeout=30)
        del req
        # a second object of the same sizes: the receive cache reuses only freed memory
        ep.send({"a": np.full(200_000, -1), "b": [np.full(70_000, -1, dtype=np.int16)] * 3},
                tag=22, timeout=30)
        other = ep.recv(tag=23, timeout=30)
    junk = churn()
    np.testing.assert_array_equal(back["a"], sent["a"])
    for x, y in zip(back["b"], sent["b"]):
        np.testing.assert_array_equal(x, y)
    assert back["s"] == sent["s"]
    assert (other["a"] == -1).all()
    del junk


def test_asan_runtime_is_active_when_asked():
    """scripts/test runs this file under AddressSanitizer (CDTYPES_EXPECT_ASAN=1): make sure
    the runtime really is loaded there, so the stage cannot pass without checking."""
    if os.environ.get("CDTYPES_EXPECT_ASAN") != "1":
        pytest.skip("not the AddressSanitizer run")
    import ctypes

    assert ctypes.CDLL(None)["__asan_init"] is not None

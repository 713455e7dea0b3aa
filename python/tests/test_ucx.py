"""cdtypes.ucx between two processes: a listener that echoes, and this test connecting."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cdtypes

try:
    from cdtypes import ucx
except ImportError as e:  # libcdt built without UCX
    pytest.skip(str(e), allow_module_level=True)


@pytest.fixture(scope="module")
def echo():
    script = os.path.join(os.path.dirname(__file__), "ucx_peer.py")
    peer = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, text=True)
    try:
        port = int(peer.stdout.readline())
        with ucx.connect("127.0.0.1", port, timeout=30) as ep:
            yield ep
            ep.send("stop", tag=0)
        assert peer.wait(timeout=30) == 0
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


OBJECTS = [
    "hello",
    {"a": 1, "b": [1.5, None, "x" * 1000]},
    np.arange(10, dtype=np.int32),
    np.arange(1 << 20, dtype=np.float64),  # 8 MiB: zero-copy region
    [np.full(128 * 1024 // 8, i, dtype=np.int64) for i in range(16)],  # many regions
    {"small": np.zeros(0), "f": np.asfortranarray(np.ones((300, 200))), "nc": np.arange(100)[::3]},
]


@pytest.mark.parametrize("i", range(len(OBJECTS)))
def test_echo_round_trip(echo, i):
    obj = OBJECTS[i]
    echo.send(obj, tag=100 + 2 * i, timeout=30)
    back = echo.recv(tag=101 + 2 * i, timeout=30)
    assert same(obj, back)
    for arr in (back if isinstance(back, list) else [back]):
        if isinstance(arr, np.ndarray) and arr.size:
            assert arr.flags.writeable


def test_nonblocking_and_allocator(echo):
    given = []

    def alloc(n):
        given.append(np.empty(n, dtype=np.uint8))
        return given[-1]

    a = np.arange(1 << 18, dtype=np.float32)
    with echo.irecv(tag=9001, alloc=alloc) as rreq:
        sreq = echo.isend({"a": a}, tag=9000)
        sreq.wait(timeout=30)
        back = rreq.wait(timeout=30)
    assert rreq.tag == 9001
    assert np.array_equal(back["a"], a)
    assert any(np.shares_memory(back["a"], g) for g in given)


def test_recv_timeout(echo):
    with pytest.raises(cdtypes.CdtTimeoutError):
        echo.recv(tag=424242, timeout=0.2)


def test_connect_refused():
    with pytest.raises(cdtypes.CdtError):
        ucx.connect("127.0.0.1", 1, timeout=5)

"""cdtypes.ucx between two processes: a listener that echoes, and this test connecting."""
import os

import numpy as np
import pytest

import cdtypes
from conftest import echo_peer

try:
    from cdtypes import ucx
except ImportError as e:  # libcdt built without UCX
    pytest.skip(str(e), allow_module_level=True)


@pytest.fixture(scope="module")
def echo():
    with echo_peer() as ep:
        yield ep


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
    with pytest.raises(cdtypes.CdtError) as e:
        ucx.connect("127.0.0.1", 1, timeout=5)
    # the peer, the lanes and the UCX version: a dead peer told from a configuration problem
    assert "connect to 127.0.0.1:1 (UCX %s; lanes: none" % ucx.version() in str(e.value)


def test_send_to_a_dead_peer_names_peer_lanes_and_ucx():
    import signal
    import subprocess
    import sys
    import time

    script = os.path.join(os.path.dirname(__file__), "ucx_peer.py")
    peer = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, text=True)
    try:
        port = int(peer.stdout.readline())
        with ucx.connect("127.0.0.1", port, timeout=30) as ep:
            ep.send("hello", tag=2, timeout=30)
            assert ep.recv(tag=3, timeout=30) == "hello"  # wired up, lanes known
            peer.send_signal(signal.SIGKILL)
            peer.wait()
            deadline = time.monotonic() + 30
            with pytest.raises(cdtypes.PeerError) as e:
                while time.monotonic() < deadline:
                    ep.send(np.zeros(16), tag=4, timeout=5)  # eager: done once posted
                    time.sleep(0.05)
            text = str(e.value)
            assert "send to 127.0.0.1:%d (UCX %s; lanes: " % (port, ucx.version()) in text
            assert "am=" in text, text
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()


def test_recv_limits(echo):
    """max_bytes / max_regions refuse a frame from its header (LimitError) before any buffer
    is allocated; the receive is consumed and the endpoint keeps working."""
    big = [np.arange(1 << 15, dtype=np.float64), np.ones(100_000, dtype=np.uint8), np.zeros(3)]
    calls = []

    def alloc(n):
        calls.append(n)
        return np.empty(n, dtype=np.uint8)

    echo.send(big, tag=700, timeout=30)
    with pytest.raises(cdtypes.LimitError, match="max_bytes"):
        echo.recv(tag=701, timeout=30, alloc=alloc, max_bytes=100_000)
    echo.send(big, tag=702, timeout=30)
    with pytest.raises(cdtypes.LimitError, match="max_regions"):
        echo.recv(tag=703, timeout=30, alloc=alloc, max_regions=2)
    assert calls == []
    echo.send(big, tag=704, timeout=30)
    back = echo.recv(tag=705, timeout=30, max_bytes=1 << 20, max_regions=3)
    assert same(back, big)


def test_recv_restricted(echo):
    """allowed= unpickles with an allow-list: a class outside it is refused, defaults pass."""
    from ipaddress import IPv4Address

    addr = IPv4Address("10.0.0.1")
    echo.send({"f": addr}, tag=710, timeout=30)
    with pytest.raises(cdtypes.ForbiddenError, match="IPv4Address"):
        echo.recv(tag=711, timeout=30, allowed=True)
    echo.send({"f": addr}, tag=712, timeout=30)
    assert echo.recv(tag=713, timeout=30, allowed=[IPv4Address]) == {"f": addr}
    obj = {"a": np.arange(10.0), "t": (1, "x")}
    echo.send(obj, tag=714, timeout=30)
    assert same(echo.recv(tag=715, timeout=30, allowed=True, max_bytes=1 << 20), obj)


def shared_memory():
    """Whether libcdt's messages between two local processes go through a shared-memory FIFO:
    only when CDT_UCX_SHARED_MEMORY asks for one (copy or full) and UCX_TLS leaves it in. The
    default (cma) sends messages over TCP and large ones by cross-memory attach."""
    tls = os.environ.get("UCX_TLS", "")
    return os.environ.get("CDT_UCX_SHARED_MEMORY", "cma") in ("copy", "full") and (
        tls == "" or any(t in tls.split(",") for t in ("sm", "shm", "sysv", "posix", "all"))
    )


@pytest.mark.parametrize("protocol", ["single", "auto-single"])
def test_protocol_choice_and_single_mode(protocol):
    """Worker(protocol=...) picks how objects travel (docs/TRANSPORT.md): 'single' sends each
    object as one message, and the echo peer (which sends in its own mode) still takes it;
    'auto-single' follows the transport as 'auto' does (TCP here unless shared memory is on)."""
    with pytest.raises(ValueError):
        ucx.Worker(protocol="fast")
    with echo_peer(protocol=protocol) as ep:
        if protocol == "single" or shared_memory():
            assert ep.protocol == "single"
        else:
            assert ep.protocol == "split"
        for i, obj in enumerate(OBJECTS):
            ep.send(obj, tag=100 + 2 * i, timeout=30)
            assert same(obj, ep.recv(tag=101 + 2 * i, timeout=30))


def test_protocol_default_follows_the_transport(echo):
    # the default (auto-single) follows the transport: loopback TCP for messages (the default,
    # cma) unless a shared-memory FIFO was asked for (CDT_UCX_SHARED_MEMORY=copy or full),
    # where every object is one message
    if shared_memory():
        assert echo.protocol == "single"
    else:
        assert echo.protocol == "split"

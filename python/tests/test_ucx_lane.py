"""Python objects through libcdt's lane (docs/TRANSPORT.md §10) between two processes: with
CDT_UCX_LANE=on on both sides a large object's stream and its buffers go through the lane,
which the worker's counters (Worker.stats: lane_sent, lane_received) show; with it off they do
not. The objects are the Python benchmark's (bench/python/pingpong.py): pickled containers
whose NumPy arrays travel out of band, a class of the program's own, a large bytes."""
import numpy as np
import pytest

from conftest import echo_peer

try:
    from cdtypes import ucx
except ImportError as e:  # libcdt built without UCX
    pytest.skip(str(e), allow_module_level=True)


class Particles:
    """A class of the program's own: pickled by its __reduce__, its arrays out of band."""

    def __init__(self, pos, vel, name):
        self.pos, self.vel, self.name = pos, vel, name

    def __eq__(self, other):
        return (isinstance(other, Particles) and self.name == other.name and
                np.array_equal(self.pos, other.pos) and np.array_equal(self.vel, other.vel))


MIB = 1 << 20
OBJECTS = {
    "dict of arrays 1 MiB": {"a": np.arange(MIB // 16, dtype=np.float64),
                             "b": np.ones(MIB // 16, dtype=np.float64), "meta": "x"},
    "list of arrays 8 MiB": [np.full(MIB // 8, i, dtype=np.int64) for i in range(8)],
    "one array 8 MiB": np.arange(MIB, dtype=np.float64),
    "bytes 1 MiB": bytes(range(256)) * (MIB // 256),
    "many small arrays": [np.arange(512, dtype=np.int32) + i for i in range(256)],
}


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def lane_counts(ep):
    s = ep.worker.stats()
    return s["lane_sent"], s["lane_received"]


def test_stats_fields():
    with ucx.Worker() as w:
        s = w.stats()
    assert set(s) == {"quarantined", "quarantine_released", "quarantine_dropped",
                      "lane_sent", "lane_received", "lane_split_sent", "lane_split_received"}
    assert s["lane_sent"] == s["lane_received"] == 0
    assert s["lane_split_sent"] == s["lane_split_received"] == 0


@pytest.mark.parametrize("lane", ["on", "off"])
def test_large_objects_through_the_lane(monkeypatch, lane):
    monkeypatch.setenv("CDT_UCX_LANE", lane)
    objects = dict(OBJECTS, particles=Particles(np.random.rand(MIB // 8), np.zeros(MIB // 8), "p"))
    with echo_peer(env={"CDT_UCX_LANE": lane}) as ep:
        ep.send("hello", tag=2, timeout=30)  # wired up: the lane is offered and mapped
        assert ep.recv(tag=3, timeout=30) == "hello"
        for i, (name, obj) in enumerate(objects.items()):
            sent0, received0 = lane_counts(ep)
            ep.send(obj, tag=10 + 2 * i, timeout=30)
            back = ep.recv(tag=11 + 2 * i, timeout=30)
            assert same(obj, back), name
            sent, received = lane_counts(ep)
            if lane == "on":
                # this process packed the object into the lane and unpacked the echo from it
                assert (sent - sent0, received - received0) == (1, 1), (name, ucx._lanes(ep._handle()))
            else:
                assert (sent, received) == (0, 0), name


@pytest.mark.parametrize("lane", ["on", "off"])
def test_large_inband_objects_one_after_another(monkeypatch, lane):
    """Large objects pickle keeps in band (bytes, str): the C extension sends the pickler's
    pieces without joining them and receives streams of the same length into memory it reuses
    once nothing holds it. Every object of a run of same-sized ones arrives whole, and the ones
    received before are unchanged by the ones after."""
    monkeypatch.setenv("CDT_UCX_LANE", lane)
    sent = [bytes([i]) * MIB for i in range(6)]
    sent += [{"k": bytes([i]) * (MIB // 2), "s": chr(0x3b1 + i) * 70000, "n": i} for i in range(3)]
    sent += [bytes([7]) * (3 * MIB), bytes(range(256)) * 300]
    got = []
    with echo_peer(env={"CDT_UCX_LANE": lane}) as ep:
        for i, obj in enumerate(sent):
            ep.send(obj, tag=100 + 2 * i, timeout=30)
            got.append(ep.recv(tag=101 + 2 * i, timeout=30))
            assert got[-1] == obj, i
    assert got == sent

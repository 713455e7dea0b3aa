"""Random and mutated frames through the compiled receive path, for a bounded time: every input
ends in a result or a CdtError (never another exception, never a crash). The allow-list and
limits make the pickle stage safe to run on mutated streams; plain loads is not fuzzed (it runs
whatever the stream names, see docs/SECURITY.md)."""
import os
import random
import time

import numpy as np
import pytest

import cdtypes
from cdtypes import _backend

impl = _backend.impl
BUDGET_S = float(os.environ.get("CDTYPES_FUZZ_SECONDS", "4"))  # bounds the run, decides nothing
MAX_CASES = 20000


def seeds():
    objs = [
        {"a": np.arange(100, dtype=np.float64), "b": [np.ones(30, dtype=">i2")], "s": "x"},
        [np.zeros(3, np.uint8), b"raw", bytearray(b"ba"), np.ones(7, np.int8)],
        np.asfortranarray(np.arange(6, dtype=np.complex64).reshape(2, 3)),
        "just a string",
        {"e": np.zeros(0), "k": (1, 2.5, None)},
    ]
    out = []
    for o in objs:
        with cdtypes.dumps(o) as f:
            out.append(f.tobytes())
    return out


def mutate(rng, data):
    d = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        if op < 0.5 and d:
            d[rng.randrange(len(d))] = rng.randrange(256)
        elif op < 0.65 and d:  # a length field set to something large
            pos = rng.randrange(0, max(1, min(len(d), 200) - 8)) & ~7
            d[pos:pos + 8] = rng.choice([1 << 62, 1 << 40, 2**63 - 1, 2**64 - 1, 0]).to_bytes(8, "little")
        elif op < 0.8:
            del d[rng.randrange(len(d) + 1):]
        elif op < 0.9:
            d += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
        else:
            i = rng.randrange(len(d) + 1)
            d[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    return bytes(d)


def one(data, mode):
    if mode == 0:
        impl.decode(data)
    elif mode == 1:
        impl.decode(bytearray(data), None, True)
    elif mode == 2:
        impl.decode(data, bytearray, False, 1 << 16, 8)
    elif mode == 3:
        cdtypes.safe_loads(data, max_bytes=1 << 20)
    elif mode == 4:
        cdtypes.safe_loads(bytearray(data), inplace=True, max_bytes=1 << 20)
    elif mode == 5:  # an MPI head message: prefix + frame
        head = (0x32544443).to_bytes(4, "little") + b"\x07\0\0\0" + (64).to_bytes(8, "little") + data
        try:
            inc, _, dests, _ = impl.mpi_unpack(head, None, 1 << 20, 64)
        except cdtypes.CdtError:
            impl.mpi_parts(head) if len(head) >= 64 else None
            return
        for d in dests:
            memoryview(d)[:] = b"\0" * len(d)
        inc.finish()
    else:
        impl.stream_needs_check(data)


@pytest.mark.parametrize("mode", range(7))
def test_random_and_mutated_frames(mode):
    rng = random.Random(1000 + mode)
    base = seeds()
    end = time.monotonic() + BUDGET_S / 7
    n = 0
    while n < MAX_CASES and (n < 200 or time.monotonic() < end):
        if rng.random() < 0.1:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        else:
            data = mutate(rng, rng.choice(base))
        try:
            one(data, mode)
        except cdtypes.CdtError:
            pass
        n += 1
    assert n >= 200


def test_unmutated_seeds_decode():
    for data in seeds():
        stream, buffers = impl.decode(data)
        assert isinstance(stream, bytes) and isinstance(buffers, list)
        impl.decode(data, bytearray, False, len(data), 100)
        with pytest.raises(cdtypes.LimitError):
            impl.decode(data, None, False, len(data) - 1, -1)


def test_backend_objects():
    assert cdtypes.backend == _backend.name
    assert cdtypes.backend == (os.environ.get("CDTYPES_BACKEND") or _backend.DEFAULT)
    with cdtypes.dumps({"a": np.arange(10.0)}) as f:
        assert isinstance(f, cdtypes.Frame) and len(f) == f.size
        data = f.tobytes()
    out = cdtypes.loads(data)
    assert out["a"].__array_interface__["data"][0] % cdtypes.ALIGN == 0
    assert "cdtypes.Frame" in repr(f) and "closed" in repr(f)


class Unpicklable:
    def __reduce__(self):
        raise ZeroDivisionError("no")


def test_unpicklable_object_raises_its_own_error():
    with pytest.raises(ZeroDivisionError):
        cdtypes.dumps({"x": Unpicklable(), "a": np.arange(100000)})
    with pytest.raises(ValueError):
        cdtypes.dumps(1, protocol=4)

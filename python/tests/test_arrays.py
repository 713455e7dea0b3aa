"""NumPy arrays through cdtypes._arrays: the reducer cdtypes' pickler uses for contiguous arrays
of plain dtypes, its reconstructor (the C version and the Python one agree, byte for byte on the
way out and exception for exception on the way in), the fallbacks, and the restricted loader."""
import gc
import io
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import cdtypes
from cdtypes import _arrays

try:
    from cdtypes import _ext
except ImportError:  # PyPy: the Python versions only
    _ext = None

REBUILDS = [_arrays._py_rebuild] + ([_ext.rebuild] if _ext is not None else [])
REDUCES = [_arrays._py_reduce] + ([_ext.reduce] if _ext is not None else [])
NAME = b"cdtypes._arrays"


def frame_of(obj):
    with cdtypes.dumps(obj) as f:
        return f.tobytes(), bytes(f.head)


def ro(a):
    a.flags.writeable = False
    return a


FAST = {  # contiguous arrays of plain dtypes: written as cdtypes._arrays.rebuild(...)
    "f8": np.arange(10.0),
    "u1-2d": np.arange(12, dtype=np.uint8).reshape(3, 4),
    ">i4": np.arange(12, dtype=">i4").reshape(3, 4),
    "F-order": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "F-3d": np.asfortranarray(np.arange(24, dtype=np.int16).reshape(2, 3, 4)),
    "0-d": np.array(5.0),
    "empty": np.zeros((0, 3)),
    "empty-1d": np.zeros(0, ">i2"),
    "U": np.array(["ab", "c"]),
    "S": np.array([b"x", b"yy"]),
    "bool": np.array([True, False, True]),
    "c8": np.arange(3, dtype=np.complex64) * 1j,
    ">c16": np.arange(3, dtype=">c16"),
    "f2": np.arange(5, dtype=np.float16),
    "g": np.arange(4, dtype=np.longdouble),
    "read-only": ro(np.arange(5.0)),
    "size-1-dims": np.arange(6.0).reshape(1, 6, 1),
}


class Sub(np.ndarray):
    pass


SLOW = {  # everything else: NumPy's own pickling
    "strided": np.arange(10)[::2],
    "object": np.array([1, "a"], dtype=object),
    "structured": np.zeros(3, dtype=[("a", "f4"), ("b", "i2")]),
    "datetime": np.arange(3).astype("M8[s]"),
    "timedelta": np.arange(3).astype("m8[ms]"),
    "metadata": np.zeros(3, dtype=np.dtype("f8", metadata={"unit": "m"})),
    "subclass": np.arange(4.0).view(Sub),
    "matrix-like-transposed-view": np.arange(12.0).reshape(3, 4)[:, ::2],
}


@pytest.mark.parametrize("name", list(FAST))
def test_plain_contiguous_arrays_take_the_fast_path(name):
    a = FAST[name]
    data, head = frame_of(a)
    assert NAME in head and b"_frombuffer" not in head
    out = cdtypes.loads(data)
    assert type(out) is np.ndarray and out.dtype == a.dtype and out.shape == a.shape
    assert out.tobytes(order="A") == a.tobytes(order="A")
    assert out.flags.f_contiguous == a.flags.f_contiguous
    assert out.flags.c_contiguous == a.flags.c_contiguous
    assert out.flags.writeable == a.flags.writeable
    safe = cdtypes.safe_loads(data)
    assert safe.dtype == a.dtype and np.array_equal(safe, a)


@pytest.mark.parametrize("name", list(SLOW))
def test_other_arrays_are_pickled_the_normal_way(name):
    a = SLOW[name]
    data, head = frame_of(a)
    assert NAME not in head
    out = cdtypes.loads(data)
    assert type(out) is type(a) and out.dtype == a.dtype and np.array_equal(out, a)
    if name == "metadata":
        assert out.dtype.metadata == {"unit": "m"}


def test_the_received_array_is_the_received_buffer():
    a = np.arange(1000.0)
    data, _ = frame_of({"a": a})
    out = cdtypes.loads(data)["a"]
    assert isinstance(out.base, cdtypes.Buffer) and out.flags.writeable and out.flags.aligned
    assert out.ctypes.data % cdtypes.ALIGN == 0


def test_arrays_share_one_descr_in_the_stream():
    obj = [np.ones(3), np.ones(4), np.ones(5, ">f8"), np.ones(6, ">f8")]
    _, head = frame_of(obj)
    assert head.count(b"<f8") == 1 and head.count(b">f8") == 1 and head.count(NAME) == 1


@pytest.mark.skipif(not hasattr(sys, "getrefcount"), reason="no reference counts (PyPy)")
def test_the_array_is_not_kept_after_the_frame():
    a = np.arange(100.0)
    before = sys.getrefcount(a)
    with cdtypes.dumps({"a": a, "b": [a, a]}):
        pass
    gc.collect()
    assert sys.getrefcount(a) == before


def test_same_array_twice_is_one_buffer():
    a = np.arange(10.0)
    with cdtypes.dumps([a, a]) as f:
        assert f.nbuffers == 1
        out = cdtypes.loads(f.tobytes())
    assert out[0] is out[1]


@pytest.mark.skipif(_ext is None, reason="no C extension to compare with")
def test_c_and_python_reducers_write_the_same_bytes():
    objs = list(FAST.values()) + list(SLOW.values()) + [
        {"many": [np.ones(i, np.uint8) for i in range(20)], "x": "text"}]
    for reduce in REDUCES:
        assert reduce(object()) is NotImplemented and reduce([1]) is NotImplemented
    streams = []
    for reduce in REDUCES:
        class P(pickle.Pickler):
            reducer_override = staticmethod(reduce)

        out, bufs = io.BytesIO(), []
        P(out, 5, buffer_callback=bufs.append).dump(objs)
        streams.append((out.getvalue(), [bytes(b.raw()) for b in bufs]))
    assert streams[0] == streams[1]
    stream, bufs = streams[0]
    back = pickle.loads(stream, buffers=bufs)  # plain pickle reads it too
    assert all(np.array_equal(x, y) for x, y in zip(back[:-1], objs[:-1]))


@pytest.mark.parametrize("rebuild", REBUILDS, ids=["python", "c"][:len(REBUILDS)])
def test_rebuild(rebuild):
    buf = bytearray(np.arange(6, dtype="<i4").tobytes())
    a = rebuild(buf, "<i4", (2, 3))
    assert a.dtype == np.dtype("<i4") and a.shape == (2, 3) and a[1, 2] == 5
    a[0, 0] = 7  # on the buffer's memory
    assert buf[0] == 7
    f = rebuild(buf, "<i4", (3, 2), "F")
    assert f.flags.f_contiguous and f[2, 1] == 5
    r = rebuild(memoryview(bytes(8)), ">f8", ())
    assert r.shape == () and not r.flags.writeable
    assert rebuild(b"", "|u1", (0, 5)).shape == (0, 5)


BAD_ARGS = [
    # (args, exception, part of the message)
    ((bytearray(8), "<f8"), TypeError, "takes|argument"),
    ((bytearray(8), "<f8", (1,), "C", 0), TypeError, "takes|argument"),
    ((bytearray(8), b"<f8", (1,)), TypeError, "descr must be a str"),
    ((bytearray(8), 8, (1,)), TypeError, "descr must be a str"),
    ((bytearray(8), "|O8", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "O", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "<M8", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "<f8,<i4", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "(2,)<f4", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "<V8", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "f8", (1,)), ValueError, "canonical"),
    ((bytearray(8), "=f8", (1,)), ValueError, "canonical"),
    ((bytearray(8), "<f3", (1,)), TypeError, "not understood"),  # NumPy's message
    ((bytearray(8), "<S12345678901", (1,)), ValueError, "plain NumPy dtype"),
    ((bytearray(8), "<f8", [1]), TypeError, "shape must be a tuple"),
    ((bytearray(8), "<f8", 1), TypeError, "shape must be a tuple"),
    ((bytearray(8), "<f8", (-1,)), ValueError, "non-negative"),
    ((bytearray(8), "<f8", (1.0,)), ValueError, "non-negative"),
    ((bytearray(8), "<f8", (True,)), ValueError, "non-negative"),
    ((bytearray(8), "<f8", (2**62, 2**62)), ValueError, "overflows"),
    ((bytearray(8), "<f8", (2**64,)), ValueError, "non-negative|overflows"),
    ((bytearray(8), "<f8", (2,)), ValueError, "has 8 bytes"),
    ((bytearray(16), "<f8", (1,)), ValueError, "has 16 bytes"),
    ((bytearray(8), "<f8", (1,), "X"), ValueError, "order"),
    ((bytearray(8), "<f8", (1,), None), ValueError, "order"),
    ((12345, "<f8", (1,)), TypeError, "buffer|bytes-like"),
    (("abcdefgh", "<f8", (1,)), TypeError, "buffer|bytes-like"),
]


@pytest.mark.parametrize("rebuild", REBUILDS, ids=["python", "c"][:len(REBUILDS)])
@pytest.mark.parametrize("args,exc,msg", BAD_ARGS, ids=lambda v: repr(v)[:40])
def test_rebuild_refuses_malformed_arguments(rebuild, args, exc, msg):
    with pytest.raises(exc, match=msg):
        rebuild(*args)


class Crafted:
    """Pickles as cdtypes._arrays.rebuild(*args): what a hostile sender can put in a stream."""

    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return _arrays.rebuild, self.args


@pytest.mark.parametrize("args,exc,msg", [a for a in BAD_ARGS if len(a[0]) in (3, 4)
                                          and isinstance(a[0][0], bytearray)],
                         ids=lambda v: repr(v)[:40])
def test_malformed_rebuild_in_a_frame(args, exc, msg):
    args = (pickle.PickleBuffer(args[0]),) + args[1:]
    data, _ = frame_of(Crafted(*args))
    with pytest.raises(cdtypes.UnpicklingFailed) as e:
        cdtypes.loads(data)
    assert isinstance(e.value.__cause__, exc)
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(data)


def test_restricted_rebuild_keeps_the_limits():
    data, _ = frame_of({"a": np.arange(1000.0), "b": [np.ones(10, np.uint8)] * 3})
    with pytest.raises(cdtypes.LimitError):
        cdtypes.safe_loads(data, max_bytes=4000)
    with pytest.raises(cdtypes.LimitError):
        cdtypes.safe_loads(data, max_regions=1)
    out = cdtypes.safe_loads(data, max_bytes=len(data), max_regions=2)
    assert out["a"][999] == 999.0 and out["b"][2].sum() == 10
    # without the numpy entries, the array constructor is refused like any other global
    with pytest.raises(cdtypes.ForbiddenError, match="cdtypes._arrays.rebuild"):
        cdtypes.loads(data, allowed=cdtypes.Restricted(numpy=False))


def test_nested_and_concurrent_dumps():
    class Inner:
        def __reduce__(self):  # a dumps inside a dumps: the pickler in use is not shared
            with cdtypes.dumps(np.arange(3.0)) as f:
                return bytes, (f.tobytes(),)

    data, _ = frame_of({"x": Inner(), "a": np.arange(5.0)})
    out = cdtypes.loads(data)
    assert np.array_equal(cdtypes.loads(out["x"]), np.arange(3.0))
    assert np.array_equal(out["a"], np.arange(5.0))

    errors = []

    def work(k):
        try:
            for i in range(200):
                obj = {"k": k, "a": [np.full(i % 7 + 1, k, np.int32) for _ in range(3)]}
                back = cdtypes.loads(frame_of(obj)[0])
                assert back["k"] == k and all((x == k).all() for x in back["a"])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_failed_dumps_leaves_the_pickler_usable():
    with pytest.raises(Exception):
        cdtypes.dumps({"a": np.arange(3.0), "f": lambda: 0})
    data, _ = frame_of({"a": np.arange(3.0)})
    assert np.array_equal(cdtypes.loads(data)["a"], np.arange(3.0))


def test_without_numpy_the_plain_pickler():
    # a process where numpy cannot be imported: plain pickle.dumps, nothing of _arrays needed
    code = ("import sys\n"
            "sys.modules['numpy'] = None\n"
            "import cdtypes\n"
            "with cdtypes.dumps({'x': [1, 2], 'b': bytearray(b'abc')}) as f:\n"
            "    data = f.tobytes()\n"
            "assert cdtypes.loads(data)['x'] == [1, 2]\n")
    r = subprocess.run([sys.executable, "-c", code], stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr.decode()

"""Frames from peers that are not trusted: padding checks in every receive path, pickle streams
that would make pickle fail inside an allocation, receiver limits, and the restricted mode."""
import collections
import ctypes
import datetime
import gc
import os
import pickle
import random
import sys

import numpy as np
import pytest

import cdtypes
from cdtypes import _core, _lib


def frame_with_stream(stream, buffers=()):
    """A valid frame whose pickle stream is ``stream`` (any bytes) with out-of-band
    ``buffers``: what a hostile sender can put on the wire."""
    keep = [stream]
    so = _lib.cdt_sobj()
    so.inband = ctypes.cast(stream, ctypes.c_void_p)
    so.inband_len = len(stream)
    sbufs = (_lib.cdt_sobj_buffer * max(len(buffers), 1))()
    for i, b in enumerate(buffers):
        keeper, addr, n = _lib.pin(b)
        keep.append(keeper)
        sbufs[i].base, sbufs[i].len, sbufs[i].kind = addr, n, _lib.CDT_KIND_BYTE
    so.buffers = sbufs
    so.nbuffers = len(buffers)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.cdt_frame_encode(ctypes.byref(so), 1, _core._SOBJ_TYPE, None,
                                         ctypes.byref(h)))
    with _core.Frame(h.value, [], []) as f:
        return f.tobytes()


def layout(data):
    """(header_size + packed_size, [(offset, length) of each region]) from a frame's header."""
    dec = ctypes.c_void_p()
    _lib.check(_lib.lib.cdt_decoder_create(data, len(data), ctypes.byref(dec)))
    try:
        info = _lib.cdt_frame_info()
        _lib.check(_lib.lib.cdt_decoder_info(dec, ctypes.byref(info)))
        regions = []
        for i in range(info.region_count):
            ln, kd, off = _lib.cdt_count(), _lib.cdt_kind(), _lib.cdt_count()
            _lib.check(_lib.lib.cdt_decoder_region_info(
                dec, i, ctypes.byref(ln), ctypes.byref(kd), ctypes.byref(off)))
            regions.append((off.value, ln.value))
        return info.header_size + info.packed_size, regions
    finally:
        _lib.lib.cdt_decoder_free(dec)


def padding_positions(data):
    head_end, regions = layout(data)
    pos, pads = head_end, []
    for off, ln in regions:
        pads.extend(range(pos, off))
        pos = max(pos, off + ln)
    return pads


# --- loads(inplace=True) checks the padding -------------


@pytest.fixture(scope="module")
def padded_frame():
    # odd lengths everywhere: padding after the stream and between the regions
    obj = {"s": "x" * 3, "a": np.ones(3, dtype=np.int8), "b": np.arange(5, dtype=np.int8),
           "c": np.zeros(9, dtype=np.uint8)}
    with cdtypes.dumps(obj) as f:
        data = f.tobytes()
    assert len(padding_positions(data)) >= 10, "the frame should have padding between parts"
    return data


def test_inplace_refuses_nonzero_padding(padded_frame):
    pads = padding_positions(padded_frame)
    between_regions = [p for p in pads if p > layout(padded_frame)[1][0][0]]
    assert between_regions, "padding between two regions is covered"
    for p in pads:
        data = bytearray(padded_frame)
        data[p] = 0x5A
        with pytest.raises(cdtypes.FrameMalformedError):
            cdtypes.loads(bytes(data))  # the copying path already refused it
        with pytest.raises(cdtypes.FrameMalformedError):
            cdtypes.loads(data, inplace=True)


def test_inplace_still_views_the_buffer(padded_frame):
    buf = np.frombuffer(bytearray(padded_frame), dtype=np.uint8)
    out = cdtypes.loads(buf, inplace=True)
    assert np.shares_memory(out["b"], buf)
    np.testing.assert_array_equal(out["b"], np.arange(5, dtype=np.int8))


# --- a stream that would make pickle fail inside an allocation -------------------

# PROTO 5, BYTEARRAY8 announcing 2**62 bytes that the stream does not hold, STOP. pickle
# allocates the bytearray before reading its bytes; the failed allocation frees a
# half-initialised bytearray (CPython prints "deallocated bytearray object has exported
# buffers").
HUGE_BYTEARRAY8 = b"\x80\x05\x96" + (1 << 62).to_bytes(8, "little") + b"."


@pytest.mark.parametrize("how", ["copy", "inplace", "alloc", "safe"])
def test_overlong_bytearray8_is_refused_before_pickle(how, capfd):
    data = frame_with_stream(HUGE_BYTEARRAY8, [b"r" * 100])
    for _ in range(5):
        with pytest.raises(cdtypes.UnpicklingFailed) as info:
            if how == "copy":
                cdtypes.loads(data)
            elif how == "inplace":
                cdtypes.loads(bytearray(data), inplace=True)
            elif how == "alloc":
                cdtypes.loads(data, alloc=bytearray)
            else:
                cdtypes.safe_loads(data)
        # refused by the stream check: pickle never ran, so it never tried the allocation
        assert not isinstance(info.value.__cause__, MemoryError), info.value.__cause__
        assert "BYTEARRAY8" in str(info.value)
        del info
        gc.collect()
    err = capfd.readouterr().err
    assert "exported buffers" not in err and "SystemError" not in err, err


def test_valid_streams_with_bytearray8_opcode_bytes_still_load():
    # 0x96 bytes inside data must not be taken for the opcode
    objs = [bytearray(b"\x96" * 50), b"\x96\xff\xff\xff\xff\xff\xff\xff\x7f", list(range(300)),
            {"k": bytearray(range(256)) * 3}, "\x96" * 10]
    for obj in objs:
        with cdtypes.dumps(obj) as f:
            data = f.tobytes()
        assert cdtypes.loads(data) == obj
        assert cdtypes.safe_loads(data) == obj


@pytest.mark.parametrize("stream", [
    b"\x80\x05N\x94r" + (0xFFFFFFF0).to_bytes(4, "little") + b".",   # LONG_BINPUT: memo of 2**33
    b"\x80\x05Np4294967280\n.",                                         # PUT, text form
    # PUT whose line pickle reads as the C string "2" (a NUL ends it), before a LONG_BINPUT
    # of 829 million: the walk used to stop at the PUT it could not parse (the atheris
    # target's out-of-memory finding, python/tests/data/fuzz-oom-put-nul.bin)
    b"\x80\x05Np2\x00\x00\np1\nr2\np1\n.",
    b"\x80\x05\x8e" + (1 << 40).to_bytes(8, "little") + b"ab.",       # BINBYTES8
    b"\x80\x05\x8d" + (1 << 40).to_bytes(8, "little") + b"ab.",       # BINUNICODE8
    b"\x80\x05B" + (1 << 31).to_bytes(4, "little") + b"ab.",          # BINBYTES
])
def test_untrusted_streams_bounded_by_their_length(stream):
    data = frame_with_stream(stream)
    with pytest.raises(cdtypes.UnpicklingFailed, match="malformed pickle stream"):
        cdtypes.safe_loads(data)
    with pytest.raises(cdtypes.UnpicklingFailed, match="malformed pickle stream"):
        cdtypes.loads(data, max_bytes=1 << 20)  # a limit also makes the input untrusted


# --- limits ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_buffers():
    obj = [np.arange(1000, dtype=np.float64), np.ones(10, dtype=np.int32), np.zeros(7, np.uint8)]
    with cdtypes.dumps(obj) as f:
        assert f.nbuffers == 3
        return f.tobytes()


def counting_alloc(calls):
    def alloc(n):
        calls.append(n)
        return np.empty(n, dtype=np.uint8)

    return alloc


def test_limit_error_is_the_library_status():
    e = _lib.error(_lib.CDT_ERR_LIMIT)
    assert type(e) is cdtypes.LimitError and e.name == "CDT_ERR_LIMIT" and e.code == -25


def test_max_bytes(three_buffers):
    n = len(three_buffers)
    calls = []
    with pytest.raises(cdtypes.LimitError, match="max_bytes"):
        cdtypes.loads(three_buffers, max_bytes=n - 1, alloc=counting_alloc(calls))
    with pytest.raises(cdtypes.LimitError):
        cdtypes.loads(bytearray(three_buffers), max_bytes=n - 1, inplace=True)
    assert calls == []  # refused before anything was allocated
    out = cdtypes.loads(three_buffers, max_bytes=n, alloc=counting_alloc(calls))
    np.testing.assert_array_equal(out[0], np.arange(1000, dtype=np.float64))
    assert len(calls) == 3


def test_max_bytes_checks_the_header_not_only_the_data(three_buffers):
    # a short frame whose header announces 1 TiB: refused as over the limit, not truncated
    data = bytearray(three_buffers)
    data[32:40] = (1 << 40).to_bytes(8, "little")  # frame_size
    with pytest.raises(cdtypes.LimitError):
        cdtypes.loads(bytes(data), max_bytes=1 << 20)


def test_max_regions(three_buffers):
    calls = []
    with pytest.raises(cdtypes.LimitError, match="max_regions"):
        cdtypes.loads(three_buffers, max_regions=2, alloc=counting_alloc(calls))
    assert calls == []
    assert len(cdtypes.loads(three_buffers, max_regions=3)) == 3
    with cdtypes.dumps("no buffers") as f:
        assert cdtypes.loads(f.tobytes(), max_regions=0) == "no buffers"


def test_limit_arguments_are_checked(three_buffers):
    for bad in (-1, 1.5, "10", True):
        with pytest.raises(ValueError):
            cdtypes.loads(three_buffers, max_bytes=bad)
        with pytest.raises(ValueError):
            cdtypes.loads(three_buffers, max_regions=bad)


# --- restricted mode -------------------------------------------------------------------------

CALLS = []


def record_call(arg):
    CALLS.append(arg)
    return arg


class RunsCode:
    def __reduce__(self):
        return (record_call, ("ran",))


class CallsOsSystem:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("echo owned > %s" % self.marker,))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)


def frame_of(obj):
    with cdtypes.dumps(obj) as f:
        return f.tobytes()


def test_plain_loads_runs_the_senders_code():
    # what restricted mode is for: plain loads calls whatever the stream names
    CALLS.clear()
    assert cdtypes.loads(frame_of(RunsCode())) == "ran"
    assert CALLS == ["ran"]


def test_restricted_refuses_reduce_to_os_system(tmp_path):
    marker = tmp_path / "marker"
    data = frame_of(CallsOsSystem(str(marker)))
    assert b"system" in data
    for kw in ({"allowed": True}, {"allowed": cdtypes.Restricted()}, {"allowed": [Point]}):
        with pytest.raises(cdtypes.ForbiddenError, match="system"):
            cdtypes.loads(data, **kw)
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(data)
    assert not marker.exists()


def test_restricted_refuses_a_class_not_in_the_list():
    CALLS.clear()
    with pytest.raises(cdtypes.ForbiddenError, match="record_call"):
        cdtypes.safe_loads(frame_of(RunsCode()))
    assert CALLS == []
    data = frame_of({"p": Point(1, 2)})
    with pytest.raises(cdtypes.ForbiddenError, match="Point"):
        cdtypes.safe_loads(data)
    assert isinstance(cdtypes.ForbiddenError(None, "x"), cdtypes.UnpicklingFailed)


@pytest.mark.parametrize("allowed", [
    lambda: [Point],
    lambda: cdtypes.Restricted([Point]),
    lambda: ["%s.Point" % __name__],
    lambda: [(__name__, "Point")],
])
def test_restricted_allows_added_classes(allowed):
    data = frame_of({"p": Point(1, 2), "a": np.arange(3)})
    out = cdtypes.loads(data, allowed=allowed())
    assert out["p"] == Point(1, 2)
    np.testing.assert_array_equal(out["a"], np.arange(3))
    # the added class does not open the door to others
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.loads(frame_of(RunsCode()), allowed=allowed())


def test_restricted_imports_nothing_it_refuses():
    assert "this" not in sys.modules
    stream = b"\x80\x05cthis\nd\n."  # GLOBAL this.d: importing `this` prints the Zen
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(frame_with_stream(stream))
    assert "this" not in sys.modules


@pytest.mark.parametrize("name", [
    b"builtins\neval", b"builtins\ngetattr", b"builtins\n__import__", b"builtins\nbytearray",
    b"builtins\nlist", b"os\nsystem", b"subprocess\nPopen", b"numpy\nload",
    b"numpy._core.multiarray\n_reconstruct", b"copyreg\n_reconstructor", b"pickle\nloads",
])
def test_refused_globals(name):
    stream = b"\x80\x05c" + name + b"\n)R."  # GLOBAL, EMPTY_TUPLE, REDUCE
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(frame_with_stream(stream))


DEFAULT_OBJECTS = [
    None, True, 7, -(2**100), 1.5, "héllo", b"bytes", bytearray(b"ba"), (1, (2,)), [1, [2]],
    {"a": {1: 2}}, {1, 2}, frozenset({3}), complex(1, 2), slice(1, 9, 2),
    collections.OrderedDict(a=1), collections.deque([1, 2], maxlen=5), collections.Counter("abca"),
    datetime.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
    datetime.date(2020, 1, 2),
    datetime.timedelta(3, 4), datetime.time(1, 2),
]


@pytest.mark.parametrize("obj", DEFAULT_OBJECTS, ids=repr)
def test_default_allowlist_builtin_values(obj):
    assert cdtypes.safe_loads(frame_of(obj)) == obj


NP_DTYPES = [
    np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32, np.float64, np.complex128,
    ">f8", "<i4", ">u2", "S7", "U3", np.dtype([("x", "<f4"), ("y", ">i8")]),
    np.dtype([("a", "u1"), ("b", "f8")], align=True), np.dtype(("<f4", (2, 3))),
    np.dtype({"names": ["a", "b"], "formats": ["u1", ">f8"], "offsets": [0, 8], "itemsize": 16}),
]


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_default_allowlist_numpy(dtype):
    a = np.zeros(17, dtype=dtype)
    rng = np.random.default_rng(3)
    a.view(np.uint8).reshape(-1)[:] = rng.integers(0, 256, a.nbytes, dtype=np.uint8)
    obj = {"a": a, "f": np.asfortranarray(np.arange(12.0).reshape(3, 4)), "s": np.float32(2.5),
           "i": np.int64(-3), "e": np.zeros(0, dtype=dtype)}
    out = cdtypes.safe_loads(frame_of(obj))
    assert out["a"].dtype == a.dtype and out["a"].tobytes() == a.tobytes()
    assert out["f"].flags.f_contiguous and np.array_equal(out["f"], obj["f"])
    assert type(out["s"]) is np.float32 and out["s"] == np.float32(2.5)
    assert type(out["i"]) is np.int64 and out["i"] == -3
    assert out["e"].dtype == a.dtype and out["e"].size == 0
    assert out["a"].flags.writeable


class FakeDtype:
    def __init__(self, args, state):
        self.args, self.state = args, state

    def __reduce__(self):
        return (np.dtype, self.args, self.state)


@pytest.mark.parametrize("args,state", [
    (("f8", False, True), (3, "<", None, None, None, 12345, -1, 0)),       # itemsize mismatch
    (("f8", False, True), (3, "?", None, None, None, -1, -1, 0)),          # byte order
    (("f8", False, True), (99, "<", None, None, None, -1, -1, 0)),         # version
    (("f8", False, True), ("x",)),
    (("O", False, True), None),                                            # Python objects
    (("V8", False, True), (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 8, 63)),
    (("V8", False, True), (3, "|", None, ("a",), {"b": (np.dtype("f8"), 0)}, 8, 1, 16)),
    (("V8", False, True), (3, "|", None, ("a",), {"a": (np.dtype("f8"), -8)}, 8, 1, 16)),
    (("V8", False, True), (3, "|", None, ("a", "b"), {"a": (np.dtype("f8"), 0), "b": (np.dtype("f8"), 4)}, 8, 1, 16)),
    ((os.getcwd(), False, True), None),
    ((3, False, True), None),
])
def test_crafted_numpy_dtype_is_refused(args, state):
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(frame_of(FakeDtype(args, state)))


def test_in_band_arrays_load_and_object_arrays_are_refused():
    # non-contiguous arrays go in-band through numpy's _reconstruct and a BUILD state, which
    # the restricted loader checks (test_restricted_corpus.py has the whole corpus); object
    # arrays stay refused
    out = cdtypes.safe_loads(frame_of(np.arange(10)[::2]))
    np.testing.assert_array_equal(out, np.arange(10)[::2])
    with pytest.raises(cdtypes.ForbiddenError, match="'O8'"):
        cdtypes.safe_loads(frame_of(np.array([1, "x"], dtype=object)))
    import numpy._core.multiarray as ma

    # entries added by the caller replace the checked ones: NumPy's own functions then run
    out = cdtypes.loads(frame_of(np.arange(10)[::2]),
                        allowed=[ma._reconstruct, np.ndarray, np.dtype])
    np.testing.assert_array_equal(out, np.arange(10)[::2])
    # numpy.dtype alone: the checked _reconstruct builds the array, NumPy's dtype its state
    obj = {"a": np.arange(10)[::2], "d": np.dtype(">f8"), "m": np.ma.masked_array([1.0], mask=[1])}
    out = cdtypes.loads(frame_of(obj), allowed=[np.dtype])
    np.testing.assert_array_equal(out["a"], obj["a"])
    assert out["d"] == obj["d"] and type(out["m"]) is np.ma.MaskedArray


def test_mutated_streams_never_crash_restricted_mode():
    """A few thousand random mutations of a stream with every kind of default value: each
    gives an object or a CdtError, never another exception (or a crash)."""
    obj = {"a": np.arange(100, dtype=np.float64), "b": [np.ones(30, dtype=">i2")], "s": "x",
           "d": np.zeros(4, dtype=[("x", "<f4"), ("y", "u1")]), "n": np.float32(1),
           "c": collections.OrderedDict(z=complex(1, 2)), "ba": bytearray(b"q" * 10)}
    data = frame_of(obj)
    head_end, _ = layout(data)
    start = int.from_bytes(data[8:16], "little")
    rng = random.Random(12345)
    for i in range(3000):
        d = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(start, head_end)] = rng.randrange(256)
        try:
            if i % 2:
                cdtypes.safe_loads(bytes(d))
            else:
                cdtypes.safe_loads(d, inplace=True, max_bytes=1 << 20)
        except cdtypes.CdtError:
            pass


def test_allowed_argument_types():
    data = frame_of(1)
    with pytest.raises(TypeError):
        cdtypes.loads(data, allowed="builtins.complex")
    with pytest.raises(ValueError):
        cdtypes.safe_loads(data, allowed=None)
    assert "numpy.dtype" in cdtypes.DEFAULT_ALLOWED.names
    assert "numpy.dtype" not in cdtypes.Restricted(numpy=False).names
    assert cdtypes.Restricted(defaults=False).names == frozenset()


def test_restricted_stream_check_sees_what_the_unpickler_runs():
    """The restricted unpickler reads from a file object, and a file-reading unpickler drops
    the rest of a frame when an opcode crosses its end; a stream built on that shows the
    stream check one sequence of opcodes and runs another (here: a LONG_BINPUT that the check
    takes for bytes data). Such streams are refused: an opcode may not cross its frame."""
    idx = 1_000_000
    frame = b"NJ\x00"                               # BININT whose argument crosses the frame end
    after = b"abcC"                                 # file view: BININT 'abcC'; linear: SHORT_BINBYTES
    hidden = b"r" + idx.to_bytes(4, "little") + b"."  # file view runs LONG_BINPUT, STOP
    stream = (b"\x80\x05\x95" + len(frame).to_bytes(8, "little") + frame + after + hidden
              + b"\x00" * (ord("r") - len(hidden) + 1) + b".")
    with pytest.raises(cdtypes.UnpicklingFailed, match="frame"):
        cdtypes.safe_loads(frame_with_stream(stream))
    # the fuzzer's finding (mode 3 of python/fuzz/fuzz_loads.py): the same trick with a memo
    # index of 680825748, which made pickle allocate and zero a 10 GiB memo table
    with open(os.path.join(os.path.dirname(__file__), "data", "fuzz-timeout-frame-crossing.bin"), "rb") as f:
        data = f.read()
    with pytest.raises(cdtypes.UnpicklingFailed, match="frame"):
        cdtypes.safe_loads(frame_with_stream(data[1:], [b"\x00" * 16, bytes(range(256))]))

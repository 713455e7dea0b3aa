"""The restricted loader against pickle itself: a corpus of awkward NumPy and standard-library
objects, each sent with cdtypes.dumps and received by both loaders (plain ``loads`` and
``loads(allowed=True)``), must come back as pickle protocol 5's own round trip gives it (type,
dtype, shape, strides and flags, values bit for bit, masks, fill values); and a list of payloads
that must be refused with ForbiddenError by the restricted loader. python/test.sh runs this
file with both backends (the C extension and cffi) and on PyPy."""
import collections
import datetime
import decimal
import fractions
import math
import os
import pickle
import struct
import sys
import warnings

import numpy as np
import pytest

import cdtypes

from test_untrusted import frame_with_stream


def _arr(dtype, n=6, seed=1):
    a = np.zeros(n, dtype=dtype)
    rng = np.random.default_rng(seed)
    raw = a.view(np.uint8).reshape(-1)
    raw[:] = rng.integers(0, 256, raw.size, dtype=np.uint8)
    return a


STRUCT = np.dtype([("x", "<f4"), ("y", ">i8"), ("s", "S3")])
NESTED = np.dtype([("p", [("a", "u1"), ("b", "<f8", (2,))]), ("t", "M8[ms]"), ("u", "U2")])
ALIGNED = np.dtype([("a", "u1"), ("b", "f8"), ("c", "i2")], align=True)
TITLED = np.dtype({"names": ["a", "b"], "formats": ["u1", ">f8"], "titles": ["first", None],
                   "offsets": [0, 4], "itemsize": 16})


def _masked():
    m = np.ma.masked_array(np.arange(6.0).reshape(2, 3), mask=[[0, 1, 0], [1, 0, 0]],
                           fill_value=-9.5)
    return m


def _masked_struct():
    a = np.zeros(3, dtype=[("a", "i4"), ("b", "f8")])
    a["a"] = [1, 2, 3]
    return np.ma.masked_array(a, mask=[(0, 1), (1, 0), (0, 0)])


def _matrix():
    with warnings.catch_warnings():  # matrix is pending deprecation, and still pickled
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([[1, 2], [3, 4]])


# (id, object): built once; every entry goes alone and all together in one dict
CORPUS = [
    # dtypes on their own (a bare dtype used to come back as a placeholder object)
    ("dtype_f8", np.dtype("<f8")),
    ("dtype_be_i4", np.dtype(">i4")),
    ("dtype_f16", np.dtype(np.float16)),
    ("dtype_bool", np.dtype(bool)),
    ("dtype_be_U5", np.dtype(">U5")),
    ("dtype_S3", np.dtype("S3")),
    ("dtype_V7", np.dtype("V7")),
    ("dtype_M8ns", np.dtype("<M8[ns]")),
    ("dtype_be_m8_3s", np.dtype(">m8[3s]")),
    ("dtype_M8_generic", np.dtype("M8")),
    ("dtype_struct", STRUCT),
    ("dtype_nested", NESTED),
    ("dtype_aligned", ALIGNED),
    ("dtype_titled", TITLED),
    ("dtype_subarray", np.dtype(("<f4", (2, 3)))),
    ("dtype_record", np.dtype((np.record, STRUCT))),
    ("dtype_metadata", np.dtype("f8", metadata={"unit": "m"})),
    ("dtype_dict", {"f8": np.dtype("<f8"), "i": np.dtype("i2")}),
    # scalars
    ("float16", np.float16(1.5)),
    ("float64_nan", np.float64("nan")),
    ("longdouble", np.longdouble(1) / 3),
    ("complex64", np.complex64(1 - 2j)),
    ("bool_", np.bool_(True)),
    ("uint64_max", np.uint64(2**64 - 1)),
    ("datetime64", np.datetime64("2020-02-29T12:00", "m")),
    ("timedelta64_nat", np.timedelta64("NaT", "s")),
    ("str_", np.str_("hé")),
    ("bytes_", np.bytes_(b"x\x00y")),
    ("void_struct", _arr(STRUCT, 1)[0]),
    ("void_raw", np.void(b"abc")),
    # arrays: layouts
    ("zero_d", np.array(3.25)),
    ("empty", np.zeros((0, 3), dtype=">i2")),
    ("fortran", np.asfortranarray(np.arange(12.0).reshape(3, 4))),
    ("slice_step", np.arange(20)[::3]),
    ("negative_strides", np.arange(12.0).reshape(3, 4)[::-1, ::-2]),
    ("broadcast_stride0", np.broadcast_to(np.arange(3, dtype=np.int16), (4, 3))),
    ("transposed_3d", np.arange(24).reshape(2, 3, 4).transpose(1, 0, 2)),
    ("fortran_view_not_contiguous", np.asfortranarray(np.ones((4, 4)))[::2]),
    ("readonly", np.frombuffer(b"abcdefgh", dtype=np.uint8)),
    # arrays: dtypes
    ("nan_inf", np.array([np.nan, -np.inf, np.inf, -0.0])),
    ("float16_arr", _arr(np.float16)),
    ("complex_be_strided", _arr(">c16", 8)[::2]),
    ("bool_arr", np.array([True, False, True])),
    ("unicode_arr", np.array(["a", "héllo", ""], dtype=">U5")),
    ("bytes_arr", np.array([b"a", b"\x00\xff"], dtype="S2")),
    ("void_arr", np.frombuffer(bytes(range(12)), dtype="V4")),
    ("datetime_arr", np.array(["2001-01-01", "NaT", "1969-12-31"], dtype="M8[D]")),
    ("timedelta_arr_strided", np.arange(10, dtype="m8[us]")[::3]),
    ("struct_arr", _arr(STRUCT)),
    ("struct_arr_strided", _arr(STRUCT, 9)[1::2]),
    ("nested_arr", _arr(NESTED, 4)),
    ("aligned_arr", _arr(ALIGNED, 3)),
    ("titled_arr", _arr(TITLED, 3)),
    ("subarray_arr", _arr(np.dtype(("<f4", (2, 3))), 2)),
    ("metadata_arr", np.zeros(2, dtype=np.dtype("f8", metadata={"k": 1}))),
    # array subclasses
    ("recarray", np.rec.fromarrays([np.arange(3), np.ones(3)], names="a,b")),
    ("record_scalar", np.rec.fromarrays([np.arange(3), np.ones(3)], names="a,b")[1]),
    ("matrix", _matrix()),
    ("masked", _masked()),
    ("masked_nomask", np.ma.masked_array([1, 2, 3], dtype=np.int8)),
    ("masked_fortran", np.ma.masked_array(np.asfortranarray(np.ones((2, 3))),
                                          mask=np.eye(2, 3, dtype=bool))),
    ("masked_struct", _masked_struct()),
    ("masked_datetime", np.ma.masked_array(np.array(["2001-01-01", "2002-02-02"], dtype="M8[D]"),
                                           mask=[1, 0])),
    # standard library
    ("none_bool_int", [None, True, False, 0, -1, 2**200, -(2**64)]),
    ("floats", [0.0, -0.0, 1e308, 5e-324, float("nan"), float("inf"), -float("inf")]),
    ("complex", [complex(1, -0.0), complex("nan+infj")]),
    ("strings", ["", "é\u20ac\U0001f600", "\x00", b"\x00\xff", bytearray(b"ba")]),
    ("empty_bytes", [b"", bytearray()]),
    ("containers", ((), (1, (2, [3, {4: {5}}])), [], {}, set(), frozenset({1, "a"}))),
    ("ordered_dict", collections.OrderedDict([("b", 1), ("a", [2])])),
    ("deque", collections.deque([1, "x", (2,)], maxlen=5)),
    ("counter", collections.Counter("abracadabra")),
    ("datetimes", [datetime.datetime(2020, 1, 2, 3, 4, 5, 6,
                                     tzinfo=datetime.timezone(datetime.timedelta(hours=-5), "X")),
                   datetime.date(1, 1, 1), datetime.time(23, 59, 59, 999999, fold=1),
                   datetime.timedelta(-3, 4, 5), datetime.datetime.max, datetime.timezone.utc]),
    ("decimal", [decimal.Decimal("-1.50"), decimal.Decimal("NaN"), decimal.Decimal("-0"),
                 decimal.Decimal("1e-999999"), decimal.Decimal("Infinity")]),
    ("fraction", [fractions.Fraction(-1, 3), fractions.Fraction(2**100, 3**50)]),
    ("slice", slice(None, -1, 2)),
    ("shared", (lambda x: [x, x, {"k": x}])(np.arange(3.0)[::2])),
]
assert len(CORPUS) >= 40


def _float_bits(x):
    return struct.pack("<d", x)


def assert_same(got, want, path="obj"):
    """got is what pickle's own round trip (want) is: type, NumPy layout and bits, masks."""
    assert type(got) is type(want), "%s: %s is not %s" % (path, type(got), type(want))
    if isinstance(want, np.ma.MaskedArray):
        assert_same(got.data, want.data, path + ".data")
        assert_same(np.ma.getmaskarray(got), np.ma.getmaskarray(want), path + ".mask")
        assert (got._fill_value is None) == (want._fill_value is None), path
        if want._fill_value is not None:
            assert_same(got._fill_value, want._fill_value, path + ".fill_value")
    elif isinstance(want, np.ndarray):
        assert pickle.dumps(got.dtype) == pickle.dumps(want.dtype), path
        assert got.shape == want.shape and got.strides == want.strides, path
        for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "ALIGNED"):
            assert got.flags[flag] == want.flags[flag], (path, flag)
        assert got.tobytes("A") == want.tobytes("A"), path
    elif isinstance(want, np.dtype):
        assert got == want and pickle.dumps(got) == pickle.dumps(want), path
        assert got.metadata == want.metadata and got.isalignedstruct == want.isalignedstruct
    elif isinstance(want, np.generic):
        assert pickle.dumps(got.dtype) == pickle.dumps(want.dtype), path
        assert got.tobytes() == want.tobytes(), path
    elif isinstance(want, float):
        assert _float_bits(got) == _float_bits(want) or (math.isnan(got) and math.isnan(want))
    elif isinstance(want, complex):
        assert_same(got.real, want.real, path + ".real")
        assert_same(got.imag, want.imag, path + ".imag")
    elif isinstance(want, (dict, collections.OrderedDict)):
        assert list(got) == list(want), path
        for k in want:
            assert_same(got[k], want[k], "%s[%r]" % (path, k))
    elif isinstance(want, (list, tuple, collections.deque)):
        assert len(got) == len(want), path
        if isinstance(want, collections.deque):
            assert got.maxlen == want.maxlen
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, "%s[%d]" % (path, i))
    elif isinstance(want, decimal.Decimal):
        assert str(got) == str(want), path
    else:
        assert got == want, path


def _identity_shape(obj):
    """Which items of a list are the same object (pickle keeps shared references)."""
    if isinstance(obj, list):
        return [[j for j, y in enumerate(obj) if y is x] for x in obj]
    return None


def _frame(obj):
    with cdtypes.dumps(obj) as f:
        return f.tobytes()


LOADERS = {
    "plain": lambda data: cdtypes.loads(data),
    "restricted": lambda data: cdtypes.loads(data, allowed=True),
    "restricted_inplace": lambda data: cdtypes.safe_loads(bytearray(data), inplace=True,
                                                          max_bytes=1 << 24),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("name,obj", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_round_trips_as_pickle_does(name, obj, loader):
    want = pickle.loads(pickle.dumps(obj, protocol=5))
    got = LOADERS[loader](_frame(obj))
    assert_same(got, want)
    assert _identity_shape(got) == _identity_shape(want)


# PyPy's pickler memoizes by id(), and PyPy's id(b"") can equal another object's among many:
# pickle itself then writes b"" as a reference to that object
_WHOLE = [(n, v) for n, v in CORPUS
          if not (n == "empty_bytes" and sys.implementation.name == "pypy")]


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_whole_corpus_in_one_frame(loader):
    obj = {name: value for name, value in _WHOLE}
    obj["again"] = [value for _, value in _WHOLE]  # memo references to every object
    want = pickle.loads(pickle.dumps(obj, protocol=5))
    got = LOADERS[loader](_frame(obj))
    assert_same(got, want)
    for i, (name, _) in enumerate(_WHOLE):  # shared references stay shared
        assert got["again"][i] is got[name], name


# --- refused ----------------------------------------------------------------------------------


class Reduces:
    """An object whose pickle is ``func(*args)`` (what a hostile sender writes)."""

    def __init__(self, func, *args, state=None):
        self.func, self.args, self.state = func, args, state

    def __reduce__(self):
        if self.state is None:
            return (self.func, self.args)
        return (self.func, self.args, self.state)


def _reconstruct():
    from numpy._core.multiarray import _reconstruct

    return _reconstruct


REFUSED = [
    ("os_system", lambda: Reduces(os.system, "echo owned")),
    ("subprocess", lambda: Reduces(__import__("subprocess").call, ["true"])),
    ("eval", lambda: Reduces(eval, "1+1")),
    ("exec", lambda: Reduces(exec, "import os")),
    ("getattr", lambda: Reduces(getattr, [], "append")),
    ("numpy_load", lambda: Reduces(np.load, "x.npy")),
    ("object_array", lambda: np.array([1, "x", None], dtype=object)),
    ("object_array_strided", lambda: np.array([1, "x", None, 4], dtype=object)[::2]),
    ("object_in_struct", lambda: np.zeros(2, dtype=[("a", "f8"), ("o", "O")])),
    ("object_in_subarray", lambda: np.zeros(2, dtype=np.dtype(("O", (2,))))),
    ("object_dtype", lambda: np.dtype("O")),
    ("object_masked", lambda: np.ma.masked_array(np.array([1, None], dtype=object))),
    ("object_scalar_dtype_in_dict", lambda: {"d": np.dtype([("o", "O")])}),
    ("reconstruct_object_dtype", lambda: Reduces(_reconstruct(), np.ndarray, (0,), b"b",
                                                 state=(1, (2,), np.dtype("O"), False, [1, "x"]))),
    ("reconstruct_memmap", lambda: Reduces(_reconstruct(), np.memmap, (0,), b"b")),
    ("reconstruct_large_base", lambda: Reduces(_reconstruct(), np.ndarray, (1 << 40,), b"b")),
    ("nested_global_in_list", lambda: [1, {"k": (2, Reduces(os.system, "echo owned"))}]),
    ("nested_global_in_deque", lambda: collections.deque([Reduces(os.getcwd)])),
    ("global_in_dtype_metadata", lambda: np.dtype("f8", metadata={"f": os.system})),
    ("global_as_fill_value", lambda: Reduces(
        np.ma.core._mareconstruct, np.ma.MaskedArray, np.ndarray, (0,), "b",
        state=(1, (1,), np.dtype("f8"), False, b"\x00" * 8, b"\x00", os.system))),
    ("calling_ndarray", lambda: Reduces(np.ndarray, (2,), "f8", b"\x00" * 16)),
    ("numpy_array_function", lambda: Reduces(np.array, [1, 2])),
    ("numpy_frombuffer", lambda: Reduces(np.frombuffer, b"\x00" * 8)),
    # allowed constructors with arguments that would cost time or memory out of proportion
    ("fraction_exponent", lambda: Reduces(fractions.Fraction, "1e999999999")),
    ("fraction_huge_ints", lambda: Reduces(fractions.Fraction, 3**30000, 3**29999 * 2)),
]
if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType"):  # NumPy 2
    REFUSED.append(("stringdtype", lambda: np.array(["a", "bc"], dtype=np.dtypes.StringDType())))


@pytest.mark.parametrize("name,make", REFUSED, ids=[r[0] for r in REFUSED])
def test_restricted_refuses(name, make):
    data = _frame(make())
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.loads(data, allowed=True)
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(bytearray(data), inplace=True)


# hand-written streams: what no pickler writes
_DT = b"cnumpy\ndtype\n(Vf8\n\x89\x88tR"  # GLOBAL numpy.dtype, ("f8", False, True), REDUCE
_DT_STATE = b"(K\x03V<\nNNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t"
STREAMS = [
    # a dtype read back from the memo, or duplicated, before BUILD gave it its state
    ("get_before_build", b"\x80\x05" + _DT + b"\x94h\x00" + _DT_STATE + b"b\x86."),
    ("dup_before_build", b"\x80\x05" + _DT + b"2" + _DT_STATE + b"b\x86."),
    # a dtype put into a tuple before BUILD
    ("consumed_before_build", b"\x80\x05" + _DT + b"\x85."),
    # no BUILD at all: NumPy always writes the state
    ("dtype_without_state", b"\x80\x05" + _DT + b"."),
    # the checked constructor itself as a value, or called by NEWOBJ / INST
    ("staged_as_value", b"\x80\x05]cnumpy\ndtype\na."),
    ("staged_by_newobj", b"\x80\x05cnumpy\ndtype\n)\x81."),
    ("staged_by_inst", b"\x80\x05(inumpy\ndtype\n."),
    # BUILD on a finished dtype: its __setstate__ would see the crafted state
    ("build_twice", b"\x80\x05" + _DT + _DT_STATE + b"b" + _DT_STATE + b"b."),
    # BUILD on an allowed class: would change it for every later load
    ("build_on_class", b"\x80\x05cnumpy\nndarray\nN}Vx\nK\x01s\x86b."),
]


@pytest.mark.parametrize("name,stream", STREAMS, ids=[s[0] for s in STREAMS])
def test_restricted_refuses_streams(name, stream):
    with pytest.raises(cdtypes.ForbiddenError):
        cdtypes.safe_loads(frame_with_stream(stream))


def test_streams_cannot_change_the_allowed_constructors():
    """BUILD with a slot state sets attributes: on a plain function of the allow-list it would
    set its __defaults__ for every later load of the process (here: rebuild's order, so that
    C-order arrays came back transposed)."""
    poison = (b"\x80\x05ccdtypes._arrays\nrebuild\nN}V__defaults__\n(VF\nts\x86b.")
    with pytest.raises(cdtypes.UnpicklingFailed):
        cdtypes.safe_loads(frame_with_stream(poison))
    a = np.arange(6).reshape(2, 3)
    out = cdtypes.safe_loads(_frame(a))
    assert out.flags.c_contiguous and np.array_equal(out, a)

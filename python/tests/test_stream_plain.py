"""The plain-stream scan (python/cdtypes/_ext/pickle_plain.h, the backend's stream_plain): the
test of a two-process bcast receiver's early answer (docs/MPI.md §14.5). A stream it calls
plain must load without raising, under CPython's C unpickler and pickle.py's (PyPy's); a stream
that runs code, is truncated or is not a pickle is not plain."""
import io
import pickle
import pickletools
import random
import struct

import pytest

from cdtypes._backend import impl

plain = impl.stream_plain

PLAIN_OBJECTS = [
    None, True, False, 0, -1, 255, 65535, 2**31, -2**63, 2**200, 1.5, float("nan"), "", "abc",
    "é\ud800 " * 30, b"", b"x" * 300, bytearray(b"yz"), [], {}, set(), frozenset(), (),
    (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), [1, [2, [3]]], {"k": {"n": [1, 2]}, (1, "t"): None},
    {1, 2, "s", (3, 4)}, frozenset([1, (2, 3)]), ([1], [1]), {"big": "v" * 70000},
    {"dict": {("a", i): [i, str(i), float(i)] for i in range(200)}},
]


def loads_both(stream, buffers=None):
    """Load with CPython's C unpickler and with pickle.py's (the one PyPy runs)."""
    pickle.loads(stream, buffers=buffers)
    pickle._Unpickler(io.BytesIO(stream), buffers=buffers).load()


@pytest.mark.parametrize("obj", PLAIN_OBJECTS, ids=lambda o: type(o).__name__)
def test_builtin_objects_are_plain(obj):
    """protocol 5, as cdtypes pickles (below 5 a bytearray, below 4 a set, below 3 bytes are
    written as calls)"""
    stream = pickle.dumps(obj, 5)
    assert plain(stream, 0), pickletools.dis(stream)
    loads_both(stream)


def test_shared_and_recursive_objects_are_plain():
    shared = [1, 2]
    loop = []
    loop.append(loop)
    d = {}
    d["self"] = d
    for obj in ({"a": shared, "b": shared}, loop, d, [shared] * 3):
        assert plain(pickle.dumps(obj, 5), 0)


def test_out_of_band_buffers():
    """NEXT_BUFFER and READONLY_BUFFER take the buffers the receiver has: no more than there
    are"""
    bufs = []
    stream = pickle.dumps({"rw": pickle.PickleBuffer(bytearray(10)),
                           "ro": pickle.PickleBuffer(b"abc")}, 5, buffer_callback=bufs.append)
    assert len(bufs) == 2
    assert plain(stream, 2) and plain(stream, 3)
    assert not plain(stream, 1) and not plain(stream, 0)
    assert not plain(stream, -1)
    loads_both(stream, bufs)


class Obj:
    def __init__(self):
        self.x = 1


def _reduced():
    return 1


class Reduced:
    def __reduce__(self):
        return (_reduced, ())


class Slots:
    __slots__ = ("a",)

    def __init__(self):
        self.a = 1


class NewArgs:
    def __new__(cls, *a, **k):
        return super().__new__(cls)

    def __getnewargs_ex__(self):
        return (1,), {"k": 2}


@pytest.mark.parametrize("obj", [Obj(), Reduced(), Slots(), NewArgs(), {"f": len},
                                 {"nested": [Obj()]}, range(3), complex(1, 2)],
                         ids=lambda o: type(o).__name__)
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_objects_that_run_code_are_not_plain(obj, protocol):
    assert not plain(pickle.dumps(obj, protocol), 0)


# one opcode each, in a stream otherwise plain: every opcode that finds a global, calls, builds
# state, reads a persistent id or an extension, and the text opcodes of protocols 0 and 1
NOT_PLAIN = {
    "GLOBAL": b"cbuiltins\nlen\n",
    "STACK_GLOBAL": b"\x8c\x08builtins\x8c\x03len\x93",
    "REDUCE": b")R",
    "BUILD": b"}b",
    "INST": b"(ibuiltins\nobject\n",
    "OBJ": b"(o",
    "NEWOBJ": b")\x81",
    "NEWOBJ_EX": b")}\x92",
    "EXT1": b"\x82\x01",
    "EXT2": b"\x83\x01\x00",
    "EXT4": b"\x84\x01\x00\x00\x00",
    "PERSID": b"P1\n",
    "BINPERSID": b"NQ",
    "INT": b"I1\n",
    "LONG": b"L1L\n",
    "FLOAT": b"F1.0\n",
    "STRING": b"S'a'\n",
    "BINSTRING": b"T\x01\x00\x00\x00a",
    "SHORT_BINSTRING": b"U\x01a",
    "UNICODE": b"Va\n",
    "PUT": b"Np0\n",
    "GET": b"Np0\n0g0\n",
    "APPEND onto a dict": b"}Na",
    "SETITEM onto a list": b"]NNs",
    "SETITEM, unhashable key": b"}]Ns",
    "SETITEMS, odd count": b"}(NNNu",
    "SETITEMS, unhashable key": b"}(]Nu",
    "ADDITEMS onto a list": b"](N\x90",
    "ADDITEMS, unhashable item": b"\x8f(]\x90",
    "FROZENSET, unhashable item": b"(]\x91",
    "frozenset key of a tuple with a list": b"}(](\x85\x91Ns",
    "BINGET of nothing stored": b"h\x00",
    "LONG_BINGET of nothing stored": b"j\x05\x00\x00\x00",
    "BINPUT on an empty stack": b"q\x00N",
    "LONG_BINPUT beyond the stream": b"N\x72\xff\xff\xff\x7f",
    "POP on an empty stack": b"0N",
    "POP_MARK without a mark": b"1N",
    "DUP on an empty stack": b"2",
    "APPENDS without a mark": b"]e",
    "TUPLE without a mark": b"t",
    "TUPLE2 below a mark": b"N(N\x86",
    "STOP below a mark": b"N(",
    "NEXT_BUFFER without buffers": b"\x97",
    "READONLY_BUFFER on a str": b"\x8c\x01a\x98",
    "LONG4, negative length": b"\x8b\xff\xff\xff\xff",
    "BINUNICODE, invalid UTF-8": b"\x8c\x02\xc3\x28",
    "BINUNICODE, overlong": b"\x8c\x02\xc0\xaf",
    "BINUNICODE, beyond U+10FFFF": b"\x8c\x04\xf4\x90\x80\x80",
    "SHORT_BINBYTES, past the end": b"C\x05ab",
    "BYTEARRAY8, past the end": b"\x96\xff\x00\x00\x00\x00\x00\x00\x00",
    "PROTO 6": b"\x80\x06N",
    "an unknown opcode": b"\xff",
}


@pytest.mark.parametrize("name", sorted(NOT_PLAIN))
def test_each_opcode_that_may_raise_is_not_plain(name):
    body = NOT_PLAIN[name]
    stream = b"\x80\x05" + body + b"."
    assert not plain(stream, 0)
    # the control: the same stream around a plain body is plain
    assert plain(b"\x80\x05N.", 0)


def test_truncated_and_garbage_streams_are_not_plain():
    stream = pickle.dumps(PLAIN_OBJECTS[-1], 5)
    for n in range(len(stream)):
        assert not plain(stream[:n], 0), n
    assert not plain(b"", 0)
    assert not plain(b"not a pickle at all", 0)
    assert not plain(bytes(range(256)), 0)


def test_frames_as_pickle_py_reads_them():
    """an opcode across a frame's end, or a FRAME inside another, is refused (pickle.py
    raises on both; CPython's C unpickler on neither)"""
    inner = b"\x8c\x03abc."
    ok = b"\x80\x05\x95" + struct.pack("<Q", len(inner)) + inner
    assert plain(ok, 0)
    loads_both(ok)
    across = b"\x80\x05\x95" + struct.pack("<Q", 3) + inner
    assert not plain(across, 0)
    nested = b"\x80\x05\x95" + struct.pack("<Q", 10) + b"\x95" + struct.pack("<Q", 1) + b"."
    assert not plain(nested, 0)
    beyond = b"\x80\x05\x95" + struct.pack("<Q", 100) + inner
    assert not plain(beyond, 0)


def test_whatever_is_plain_loads():
    """Mutations of plain streams (bytes flipped, inserted, deleted): every one the scan calls
    plain loads under both unpicklers; and the scan never reads outside the stream (the C
    walk runs under ASan in python/asan.sh)."""
    rng = random.Random(36)
    seeds = [pickle.dumps(o, 5) for o in PLAIN_OBJECTS[:30]]
    accepted = 0
    for _ in range(20000):
        s = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            what, at = rng.random(), rng.randrange(len(s))
            if what < 0.5:
                s[at] = rng.randrange(256)
            elif what < 0.75:
                s.insert(at, rng.choice(b"().NJK]}ae01stu\x85\x86\x87\x8f\x90\x91\x94hq"))
            elif len(s) > 1:
                del s[at]
        s = bytes(s)
        if plain(s, 0):
            accepted += 1
            loads_both(s)
    assert accepted > 1000, accepted  # the mutations exercise the accepting side too


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 64, 255, 256, 257, 600])
def test_walk_past_its_inline_tables(n):
    """The walk holds its value stack (256 entries), mark stack (32) and memo (256) inline and
    moves each to the heap when a stream needs more (pickle_plain.h, pp_grow): streams at and
    across each edge are scanned as before (plain, loading under both unpicklers; and the
    same streams with a GET of an index never stored, or a pop below a mark, are not)."""
    words = ["w%d" % i for i in range(n)]
    objs = [
        list(range(n)),  # APPENDS of n values above one mark: the value stack
        words + words,  # n memo entries (MEMOIZE), then a BINGET of each: the memo
    ]
    deep = ()
    for i in range(n):  # a MARK per level, all open at once: the mark stack
        deep = (i, i, i, i, deep)
    objs.append(deep)
    for obj in objs:
        stream = pickle.dumps(obj, 5)
        assert plain(stream, 0), (n, pickletools.dis(stream))
        loads_both(stream)
    # the memo table past its inline part: a GET of an index stored, and of one never stored
    puts = b"".join(b"N\x94" for _ in range(n)) + b"0" * n
    stored = b"\x80\x05" + puts + b"]" + (b"j" + struct.pack("<I", n - 1) if n else b"N") + b"."
    assert plain(stored, 0)
    loads_both(stored)
    unstored = b"\x80\x05" + puts + b"]j" + struct.pack("<I", n + 1) + b"."
    assert not plain(unstored, 0)
    # n + 1 marks, then one pop too many below the innermost one
    marks = b"\x80\x05" + b"(" * (n + 1) + b"N" + b"1" * (n + 1) + b"0N."
    assert not plain(marks, 0)
    assert plain(b"\x80\x05" + b"(" * (n + 1) + b"N" + b"1" * (n + 1) + b"N.", 0)

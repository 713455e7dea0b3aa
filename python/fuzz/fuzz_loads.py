"""Fuzz target for cdtypes.loads on untrusted input (atheris / libFuzzer).

The first byte of an input picks how the rest is received:
  0: safe_loads(frame)                            - copying path, default allow-list
  1: safe_loads(bytearray(frame), inplace=True)   - in-place path (MPI's)
  2: loads(frame, max_bytes=..., max_regions=..., allowed=True, alloc=bytearray)
  3: the rest is a pickle STREAM, framed with two out-of-band buffers, then safe_loads
  4: the rest is a pickle STREAM given to the plain-stream scan (stream_plain, docs/MPI.md
     §14.5's early answer) with two out-of-band buffers: a stream it calls plain must load
     under CPython's C unpickler and pickle.py's (PyPy's) without raising
Every input must give an object or a cdtypes.CdtError (mode 4: a scan's answer, and a load that
does not raise where it said plain); anything else (another exception, a crash, a leak that
trips libFuzzer's RSS limit) is a finding. Plain loads (no allow-list) is
never fuzzed: it runs whatever code the stream names, which is what docs/SECURITY.md says.

    python3 -m pip install atheris
    python3 python/fuzz/fuzz_loads.py -runs=100000 NEW_CORPUS_DIR python/fuzz/corpus
    python3 python/fuzz/fuzz_loads.py -max_total_time=60 NEW_CORPUS_DIR python/fuzz/corpus
    python3 python/fuzz/fuzz_loads.py --make-corpus python/fuzz/corpus   # rewrite the seeds

libFuzzer writes new inputs into the FIRST corpus directory: give it a scratch directory.
python/tests/test_fuzz_corpus.py replays the seeds and past findings without atheris.
"""
import io
import os
import pickle
import sys

try:
    import atheris
except ImportError:  # replaying inputs (python/tests/test_fuzz_corpus.py) needs no atheris
    atheris = None

if atheris is not None and __name__ == "__main__":
    with atheris.instrument_imports(include=["cdtypes"]):
        import cdtypes
        from cdtypes import _core, _lib
        from cdtypes._backend import impl as _impl
else:
    import cdtypes
    from cdtypes import _core, _lib
    from cdtypes._backend import impl as _impl

MAX_BYTES = 1 << 20
_BUFFERS = (b"\x00" * 16, bytes(range(256)))


def frame_of_stream(stream):
    """A frame whose pickle stream is ``stream`` and whose buffers are _BUFFERS."""
    import ctypes

    so = _lib.cdt_sobj()
    so.inband = ctypes.cast(stream, ctypes.c_void_p)
    so.inband_len = len(stream)
    sbufs = (_lib.cdt_sobj_buffer * len(_BUFFERS))()
    keep = []
    for i, b in enumerate(_BUFFERS):
        keeper, addr, n = _lib.pin(b)
        keep.append(keeper)
        sbufs[i].base, sbufs[i].len, sbufs[i].kind = addr, n, _lib.CDT_KIND_BYTE
    so.buffers, so.nbuffers = sbufs, len(_BUFFERS)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.cdt_frame_encode(ctypes.byref(so), 1, _core._SOBJ_TYPE, None, ctypes.byref(h)))
    with _core.Frame(h.value, [], []) as f:
        return f.tobytes()


def TestOneInput(data):
    if not data:
        return
    mode, body = data[0] % 5, data[1:]
    if mode == 4:
        if _impl.stream_plain(body, len(_BUFFERS)):
            pickle.loads(body, buffers=_BUFFERS)
            pickle._Unpickler(io.BytesIO(body), buffers=_BUFFERS).load()
        return
    try:
        if mode == 0:
            cdtypes.safe_loads(body, max_bytes=MAX_BYTES)
        elif mode == 1:
            cdtypes.safe_loads(bytearray(body), inplace=True, max_bytes=MAX_BYTES)
        elif mode == 2:
            cdtypes.loads(body, max_bytes=1 << 16, max_regions=8, allowed=True, alloc=bytearray)
        else:
            cdtypes.safe_loads(frame_of_stream(body), max_bytes=MAX_BYTES)
    except cdtypes.CdtError:
        pass


def make_corpus(directory):
    """Seeds: frames of typical objects (modes 0-2) and their pickle streams (mode 3)."""
    import collections
    import decimal
    import fractions
    import pickle

    import numpy as np

    objects = [
        {"step": 7, "field": np.arange(12.0).reshape(3, 4), "name": "x"},
        [np.ones(5, dtype=np.int8), np.zeros(3, dtype=">f4"), b"raw", bytearray(b"ba")],
        np.zeros(4, dtype=[("x", "<f4"), ("y", "u1")]),
        {"s": {1, 2}, "f": frozenset({3}), "c": complex(1, 2), "t": (np.float32(1.5), np.int64(-2))},
        collections.OrderedDict(a=collections.deque([1, 2], maxlen=3)),
        np.asfortranarray(np.arange(6, dtype=np.complex64).reshape(2, 3)),
        # the staging unpickler's objects: bare dtypes, in-band arrays, subclasses, scalars
        {"f8": np.dtype(">f8"), "t": np.dtype("M8[ns]"), "r": np.dtype((np.record, [("a", "u1")])),
         "s": np.dtype({"names": ["a"], "formats": [("<f4", (2,))], "titles": ["A"]})},
        [np.arange(10)[::-3], np.broadcast_to(np.arange(3.0), (2, 3)),
         np.arange(24).reshape(2, 3, 4).transpose(1, 0, 2)],
        [np.ma.masked_array([1.0, 2.0], mask=[0, 1], fill_value=5.0),
         np.rec.fromarrays([np.arange(2), np.ones(2)], names="a,b"),
         np.datetime64("2020-01-01", "D"), np.void(b"ab"), decimal.Decimal("1.5"),
         fractions.Fraction(1, 3)],
    ]
    os.makedirs(directory, exist_ok=True)
    for i, obj in enumerate(objects):
        with cdtypes.dumps(obj) as f:
            frame = f.tobytes()
        for mode in (0, 1, 2):
            with open(os.path.join(directory, "frame%d_mode%d" % (i, mode)), "wb") as out:
                out.write(bytes([mode]) + frame)
        with open(os.path.join(directory, "stream%d" % i), "wb") as out:
            out.write(b"\x03" + pickle.dumps(obj, protocol=5))
    # the plain-stream scan (mode 4): plain objects, and one that runs code
    plain_objects = [{"k": [1, 2.5, "s", b"b", None, True], "t": (1, (2,)), "s": {1, frozenset([2])}},
                     [bytearray(b"ab"), {"n": {"m": list(range(40))}}], "x" * 300,
                     decimal.Decimal("1.5")]
    for i, obj in enumerate(plain_objects):
        with open(os.path.join(directory, "plain%d" % i), "wb") as out:
            out.write(b"\x04" + pickle.dumps(obj, protocol=5))
    with open(os.path.join(directory, "plain_oob"), "wb") as out:
        out.write(b"\x04" + pickle.dumps([pickle.PickleBuffer(b) for b in _BUFFERS], protocol=5,
                                         buffer_callback=[].append))
    # a stream that takes the two out-of-band buffers mode 3 frames it with
    oob = [np.frombuffer(b, dtype=np.uint8) for b in _BUFFERS]
    with open(os.path.join(directory, "stream_oob"), "wb") as out:
        out.write(b"\x03" + pickle.dumps(oob, protocol=5, buffer_callback=lambda b: False and b))
    with open(os.path.join(directory, "stream_nextbuffer"), "wb") as out:
        out.write(b"\x03" + pickle.dumps(oob, protocol=5, buffer_callback=[].append))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--make-corpus":
        make_corpus(sys.argv[2])
    elif atheris is None:
        sys.exit("fuzz_loads.py: atheris is not installed (python3 -m pip install atheris)")
    else:
        atheris.Setup(sys.argv, TestOneInput)
        atheris.Fuzz()

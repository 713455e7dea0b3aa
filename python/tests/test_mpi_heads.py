"""The backends' cdtypes.mpi heads of objects without out-of-band buffers (docs/MPI.md §4): the
same bytes and the same errors whichever path packs or reads them. The cffi backend packs and
reads such a head in one C call each (what most small tasks of a framework are: 66 us per
object through its general path, against 8.5 us for the C extension); the general path still
takes every other head, and every head the one call cannot handle, so that its errors are the
general path's."""
import os
import pickle
import struct
import subprocess
import sys

import pytest

import cdtypes
from cdtypes import _backend

impl = _backend.impl
MAGIC = 0x32544443
OBJECTS = [
    {"task": 12, "args": (1, 2.0, "abc"), "kw": {"x": [1, 2, 3]}},
    "just a string",
    b"raw bytes" * 1000,  # in band: bytes pickle into the stream
    None,
    list(range(5000)),  # a stream larger than the first guess of the head's size
]


@pytest.mark.parametrize("threshold", [0, 64 * 1024, -1])
@pytest.mark.parametrize("k", range(len(OBJECTS)))
def test_inband_head_is_the_prefix_and_the_frame(k, threshold):
    obj = OBJECTS[k]
    frame, head, parts, layout = impl.mpi_pack(obj, 4242 + k, threshold)
    try:
        assert parts == [] and layout is None
        with cdtypes.dumps(obj) as f:
            whole = f.tobytes()
        assert bytes(head) == struct.pack("<IIQ", MAGIC, 4242 + k, max(threshold, 0)) + whole
        assert frame.size == len(whole)
    finally:
        frame.close()
        frame.close()  # idempotent
    for limits in ((-1, -1), (len(head), 0)):
        inc, oid, dests, layout = impl.mpi_unpack(bytes(head), None, *limits)
        assert oid == 4242 + k and dests == [] and layout is None
        stream, buffers = inc.finish()
        assert buffers == [] and pickle.loads(stream) == obj
        with pytest.raises(ValueError):
            inc.finish()


@pytest.mark.skipif(impl.__name__ != "cdtypes._cffi", reason="the cffi backend's one call")
def test_cffi_inband_head_takes_one_call():
    """Fails where the cffi backend builds a Frame and drives a decoder from Python for such an
    object (the frame returned open, an MpiIncoming returned)."""
    frame, head, _, _ = impl.mpi_pack(OBJECTS[0], 1, 0)
    assert repr(frame) == "<cdtypes.Frame closed>"
    inc = impl.mpi_unpack(head, None, -1, -1)[0]
    assert type(inc).__name__ == "_Whole"
    assert impl.mpi_parts(head) == (1, [])
    # an object with an out-of-band buffer takes the general path
    frame, head, _, _ = impl.mpi_pack(pickle.PickleBuffer(bytearray(100)), 1, 0)
    assert repr(frame) != "<cdtypes.Frame closed>"
    frame.close()
    inc = impl.mpi_unpack(head, None, -1, -1)[0]
    assert type(inc).__name__ == "MpiIncoming"
    inc.finish()


class _Counting:
    """A stand-in for the cffi backend's ffi or lib that counts the calls made through it."""

    def __init__(self, real, calls):
        self._real, self._calls = real, calls

    def __getattr__(self, name):
        attr = getattr(self._real, name)
        if not callable(attr):
            return attr

        def counted(*a, **kw):
            self._calls.append(name)
            return attr(*a, **kw)
        return counted


@pytest.mark.skipif(impl.__name__ != "cdtypes._cffi", reason="the cffi backend's crossings")
def test_cffi_inband_receive_crossings(monkeypatch):
    """The cffi receiver of a head without buffers (a collective's small object, docs/MPI.md
    §14.5's cost): one export of the head and one C call that checks, decodes and scans it,
    with nothing made or handed back around it (the stream copied from the head's end), and
    the scans of a bytes stream (stream_plain, stream_needs_check: the early answer's checks)
    with no export. Fails where the call fills a cdtpy_inband struct (ffi.new) whose stream
    must be freed (cdtpy_free), or where a scan exports the bytes (ffi.from_buffer)."""
    from cdtypes._cffi import mpi as cffi_mpi, receive as cffi_receive
    obj = OBJECTS[0]
    frame, head, _, _ = impl.mpi_pack(obj, 77, 0)
    calls = []
    for mod in (cffi_mpi, cffi_receive):
        monkeypatch.setattr(mod, "ffi", _Counting(mod.ffi, calls))
        monkeypatch.setattr(mod, "lib", _Counting(mod.lib, calls))
    inc, oid, dests, layout = impl.mpi_unpack(head, None, -1, -1)
    assert calls == ["from_buffer", "cdtpy_mpi_unpack_inband", "buffer", "release"]
    stream, bufs, plain = inc.finish_plain()
    assert (oid, dests, layout, bufs, plain) == (77, [], None, [], True)
    assert pickle.loads(stream) == obj and type(stream) is bytes
    del calls[:]
    assert impl.stream_plain(stream, 0) and not impl.stream_needs_check(stream)
    assert calls == ["cdtpy_pickle_plain", "cdtpy_stream_needs_check"]
    # a bytearray is exported as before
    del calls[:]
    assert impl.stream_plain(bytearray(stream), 0)
    assert "from_buffer" in calls


ERRORS = r"""
import struct, sys
import cdtypes
from cdtypes import _backend
impl = _backend.impl
obj = {"task": 12, "args": (1, 2.0, "abc"), "kw": {"x": [1, 2, 3]}}
_, head, _, _ = impl.mpi_pack(obj, 7, 65536)
head = bytes(head)
cases = [head[:n] for n in (0, 15, 16, 40, len(head) - 1)] + [head + b"\0"]
cases += [head[:i] + bytes([head[i] ^ 0xA5]) + head[i + 1:] for i in range(0, 96, 3)]
cases += [struct.pack("<IIQ", 0x32544443, 7, 0) + head[16:]]
for data in cases:
    for limits in ((-1, -1), (40, -1), (-1, 0), (len(head), 0)):
        try:
            inc, oid, dests, _ = impl.mpi_unpack(data, None, *limits)
            out = "ok %d %d %r" % (oid, len(dests), inc.finish()[0][:8])
        except Exception as e:
            out = "%s: %s" % (type(e).__name__, e)
        print(out)
    try:
        print("parts", impl.mpi_parts(data))
    except Exception as e:
        print("parts %s: %s" % (type(e).__name__, e))
"""


@pytest.mark.skipif(sys.implementation.name == "pypy", reason="PyPy has the cffi backend only")
def test_backends_refuse_damaged_inband_heads_alike():
    """Every damaged head (cut, extended, a byte changed in the prefix or the frame, each under
    limits) gives the same result and the same error message on both backends, received
    (mpi_unpack) or read for its parts (mpi_parts)."""
    out = {}
    for b in _backend.BACKENDS:
        r = subprocess.run([sys.executable, "-c", ERRORS], capture_output=True, text=True,
                           env=dict(os.environ, CDTYPES_BACKEND=b), timeout=120)
        assert r.returncode == 0, r.stderr
        out[b] = r.stdout.splitlines()
    assert len(out["c"]) > 100
    for c_line, cffi_line in zip(out["c"], out["cffi"]):
        assert c_line == cffi_line


@pytest.mark.parametrize("k", range(len(OBJECTS)))
def test_pack_own_gives_the_stream_of_its_head(k):
    """mpi_pack_own (the root's own copy, docs/MPI.md §14.5): mpi_pack's head and the stream
    it was made from, which pickle.loads turns into an equal object; nothing to copy."""
    obj = OBJECTS[k]
    frame, head, parts, layout, stream, buffers = impl.mpi_pack_own(obj, 7, 64 * 1024)
    try:
        assert parts == [] and layout is None and buffers is None
        assert bytes(head) == bytes(impl.mpi_pack(obj, 7, 64 * 1024)[1])
        got, bufs = impl.mpi_unpack(head, None, -1, -1)[0].finish()
        assert type(stream) is bytes and stream == got and not bufs
        assert pickle.loads(stream) == obj
        assert "closed" in repr(frame)  # nothing reads it: returned closed (lean_root)
    finally:
        frame.close()


def test_pack_own_buffers_are_copies():
    """an object with out-of-band buffers in its head: mpi_pack_own's buffers are copies of
    them (as a receive of the head gives them), so that the copy pickle.loads makes shares no
    memory with the object: writing to one leaves the other as it was. With parts (a buffer
    over the threshold) it gives no stream: the head does not hold the object."""
    np = pytest.importorskip("numpy")
    obj = {"a": np.arange(10.0), "r": np.arange(4), "s": "x"}
    obj["r"].flags.writeable = False
    frame, head, parts, layout, stream, buffers = impl.mpi_pack_own(obj, 7, 64 * 1024)
    try:
        assert parts == [] and len(buffers) == 2
        got = pickle.loads(stream, buffers=buffers)
        assert (got["a"] == obj["a"]).all() and (got["r"] == obj["r"]).all()
        assert got["a"].flags.writeable and not got["r"].flags.writeable
        theirs, bufs = impl.mpi_unpack(head, None, -1, -1)[0].finish()
        assert theirs == stream and [type(b) for b in bufs] == [type(b) for b in buffers]
        assert [bytes(b) for b in bufs] == [bytes(b) for b in buffers]
        assert not np.shares_memory(got["a"], obj["a"])
        got["a"][:] = -1
        assert (obj["a"] == np.arange(10.0)).all()
        assert "closed" in repr(frame)  # the buffers copied: returned closed (lean_root)
    finally:
        frame.close()
    frame, head, parts, layout, stream, buffers = impl.mpi_pack_own(
        {"big": np.zeros(64 * 1024)}, 7, 64 * 1024)
    try:
        assert len(parts) == 1 and stream is None and buffers is None
        assert "closed" not in repr(frame)  # its part is read from the frame's memory
    finally:
        frame.close()


class _Code:  # a global: its stream is not plain (loading it looks a name up)
    pass


@pytest.mark.parametrize("threshold", [0, 64 * 1024])
def test_finish_plain_is_finish_and_the_scan(threshold):
    """finish_plain() (a collective receiver's early answer, docs/MPI.md §14.5): finish()'s
    stream and buffers and stream_plain()'s verdict on them, in the call that decodes the
    head: the one C call of a head without buffers (cffi) or the Incoming's (C extension),
    plain or not, with and without out-of-band buffers; once, as finish()."""
    np = pytest.importorskip("numpy")
    for obj in OBJECTS + [_Code(), {"a": np.arange(10.0)}, [{"k": 1.5}] * 3]:
        frame, head, parts, layout = impl.mpi_pack(obj, 9, threshold)
        frame.close()
        assert parts == []
        want_stream, want_bufs = impl.mpi_unpack(head, None, -1, -1)[0].finish()
        inc = impl.mpi_unpack(head, None, -1, -1)[0]
        stream, bufs, plain = inc.finish_plain()
        assert stream == want_stream and [bytes(b) for b in bufs] == [
            bytes(b) for b in want_bufs]
        assert plain is impl.stream_plain(stream, len(bufs)), obj
        with pytest.raises(ValueError, match="finished already"):
            inc.finish_plain()
    assert impl.mpi_unpack(impl.mpi_pack({"k": 1}, 9, 0)[1], None, -1, -1)[0].finish_plain()[2]
    assert not impl.mpi_unpack(impl.mpi_pack(_Code(), 9, 0)[1], None, -1, -1)[0].finish_plain()[2]

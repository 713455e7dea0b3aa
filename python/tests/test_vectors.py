"""Shared frame test vectors (tests/vectors/, see its README), at the frame level.

Every NAME.bin there was written by one binding (C, Python, Rust, Julia) and NAME.json is its
description, read from the bytes by docs/FORMAT.md alone (tests/vectors/describe.py, whose own
tests are julia/tools/tests/test_vectors.py). Here: libcdt's decoder, driven from Python, finds the same header,
stream and regions in every vector; the Python package still writes its own vectors byte for
byte and reads them back; and a frame that other bindings wrote (not a pickle stream) is a
clear error from cdtypes.loads, never a crash.
"""
import ctypes
import importlib.util
import json
import pathlib

import pytest

import cdtypes
from cdtypes import _lib

VECTORS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors"


def _load(name):
    spec = importlib.util.spec_from_file_location("vectors_" + name, VECTORS / (name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BINS = sorted(VECTORS.glob("*.bin"))
IDS = [b.stem for b in BINS]


def want(b):
    return json.loads(b.with_suffix(".json").read_text())


def libcdt_decode(data):
    """(info, stream, [(bytes, kind, offset)]) as libcdt's decoder delivers the frame, through the
    serialized-object adapter (in-band stream + one buffer per region)."""
    lib = _lib.lib
    dec = ctypes.c_void_p()
    buf = ctypes.create_string_buffer(data, len(data))
    rc = lib.cdt_decoder_create(buf, len(data), ctypes.byref(dec))
    assert rc == 0, _lib.lib.cdt_err_name(rc)
    obj = _lib.cdt_sobj()
    try:
        info = _lib.cdt_frame_info()
        assert lib.cdt_decoder_info(dec, ctypes.byref(info)) == 0
        offsets = []
        for i in range(info.region_count):
            n, kind, off = _lib.cdt_count(), _lib.cdt_kind(), _lib.cdt_count()
            assert lib.cdt_decoder_region_info(dec, i, ctypes.byref(n), ctypes.byref(kind),
                                               ctypes.byref(off)) == 0
            offsets.append((n.value, kind.value, off.value))
        assert lib.cdt_sobj_recv_prepare(ctypes.byref(obj), dec) == 0
        assert lib.cdt_decoder_bind(dec, ctypes.byref(obj), 1, lib.cdt_sobj_type()) == 0
        assert lib.cdt_decoder_write(dec, 0, buf, len(data)) == 0
        assert lib.cdt_decoder_finish(dec) == 0
        stream = ctypes.string_at(obj.inband, obj.inband_len) if obj.inband_len else b""
        regions = []
        for i in range(obj.nbuffers):
            r = obj.buffers[i]
            got = ctypes.string_at(r.base, r.len) if r.len else b""
            assert (r.len, r.kind) == offsets[i][:2]
            regions.append((got, r.kind, offsets[i][2]))
        return info, stream, regions
    finally:
        lib.cdt_sobj_release(ctypes.byref(obj))
        lib.cdt_decoder_free(dec)


@pytest.mark.parametrize("b", BINS, ids=IDS)
def test_libcdt_decoder_reads_every_vector(b):
    w = want(b)
    info, stream, regions = libcdt_decode(b.read_bytes())
    for key in ("version", "flags", "header_size", "packed_size", "region_count", "region_bytes",
                "frame_size"):
        assert getattr(info, key) == w[key], key
    assert stream.hex() == w["stream_hex"]
    assert [(r[0].hex(), r[1], r[2]) for r in regions] == \
        [(r["hex"], r["kind"], r["offset"]) for r in w["regions"]]


@pytest.mark.parametrize("b", BINS, ids=IDS)
def test_libcdt_decoder_refuses_every_vector_cut_short(b):
    data = b.read_bytes()
    for cut in (1, 8, len(data) // 2):
        short = data[:len(data) - cut]
        with pytest.raises(AssertionError):
            libcdt_decode(short)  # refused at create, write or finish: never a whole object
        with pytest.raises(cdtypes.CdtError):
            cdtypes.loads(short)


def test_python_vectors_are_written_byte_for_byte():
    make = _load("make_python")
    for name, obj in make.objects().items():
        with cdtypes.dumps(obj) as f:
            assert f.tobytes() == (VECTORS / ("python_%s.bin" % name)).read_bytes(), name


def test_python_vectors_read_back():
    make = _load("make_python")
    for name, obj in make.objects().items():
        back = cdtypes.loads((VECTORS / ("python_%s.bin" % name)).read_bytes())
        if name == "inband":
            assert back == obj
        else:  # PickleBuffers come back as their contents
            assert [bytes(memoryview(x)) for x in back] == [bytes(x.raw()) for x in obj], name


@pytest.mark.parametrize("b", [b for b in BINS if not b.name.startswith("python_")],
                         ids=[b.stem for b in BINS if not b.name.startswith("python_")])
def test_other_bindings_frames_are_a_clear_error_in_loads(b):
    """A frame of C, Rust or Julia says that cdtypes' Python side did not write it, and what
    did (before: UnpicklingFailed ... EOFError('Ran out of input'))."""
    for kwargs in ({}, {"allowed": True}):
        with pytest.raises(cdtypes.ForeignFrameError) as e:
            cdtypes.loads(b.read_bytes(), **kwargs)
        msg = str(e.value)
        assert "not written by cdtypes' Python side" in msg, msg
        assert "not a pickle stream" in msg, msg
        assert isinstance(e.value, cdtypes.UnpicklingFailed)
        if b.name.startswith("rust_"):
            stream = json.loads(b.with_suffix(".json").read_text())["stream_hex"]
            fp = int.from_bytes(bytes.fromhex(stream)[:8], "little")
            assert "fingerprint, here 0x%016x" % fp in msg, msg


def test_julia_stream_is_named():
    from cdtypes import _core
    msg = _core.foreign_writer(b"7JL\x0c\x04\x00\x00\x00\x00\x00")
    assert "Julia" in msg and "not written by cdtypes' Python side" in msg
    assert _core.foreign_writer(b"\x80\x05\x95") is None


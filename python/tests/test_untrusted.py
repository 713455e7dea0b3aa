"""Frames from peers that are not trusted: padding checks in every receive path, pickle streams
that would make pickle fail inside an allocation, receiver limits, and the restricted mode."""
import ctypes
import gc

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
    _lib.check(_lib.lib.cdt_frame_encode(ctypes.byref(so), 1, _core._SOBJ_TYPE, None, ctypes.byref(h)))
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
            _lib.check(_lib.lib.cdt_decoder_region_info(dec, i, ctypes.byref(ln), ctypes.byref(kd), ctypes.byref(off)))
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


# --- loads(inplace=True) checks the padding ---------------------------------------------


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


@pytest.mark.parametrize("how", ["copy", "inplace", "alloc"])
def test_overlong_bytearray8_is_refused_before_pickle(how, capfd):
    data = frame_with_stream(HUGE_BYTEARRAY8, [b"r" * 100])
    for _ in range(5):
        with pytest.raises(cdtypes.UnpicklingFailed) as info:
            if how == "copy":
                cdtypes.loads(data)
            elif how == "inplace":
                cdtypes.loads(bytearray(data), inplace=True)
            else:
                cdtypes.loads(data, alloc=bytearray)
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

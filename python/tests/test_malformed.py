"""Malformed input never crashes: every bad frame gives a CdtError subclass with a message."""
import numpy as np
import pytest

import cdtypes


@pytest.fixture(scope="module")
def frame_bytes():
    obj = {"a": np.arange(1000, dtype=np.float64), "b": [np.ones(300, dtype=np.int8)], "s": "x"}
    with cdtypes.dumps(obj) as f:
        return f.tobytes()


def test_every_truncation(frame_bytes):
    step = max(1, len(frame_bytes) // 400)
    for n in list(range(0, 200)) + list(range(200, len(frame_bytes), step)):
        with pytest.raises(cdtypes.FrameError) as info:
            cdtypes.loads(frame_bytes[:n])
        assert info.value.code is not None and str(info.value)


def test_trailing_bytes(frame_bytes):
    with pytest.raises(cdtypes.FrameMalformedError):
        cdtypes.loads(frame_bytes + b"\0")


def test_bad_magic(frame_bytes):
    with pytest.raises(cdtypes.FrameMagicError, match="magic"):
        cdtypes.loads(b"XXXX" + frame_bytes[4:])


def test_not_a_frame():
    for data in (b"", b"\0" * 47, b"\0" * 1000, b"hello world" * 20):
        with pytest.raises(cdtypes.CdtError):
            cdtypes.loads(data)


def test_corrupted_header_bytes(frame_bytes):
    rng = np.random.default_rng(1)
    header_size = int.from_bytes(frame_bytes[8:16], "little")
    for pos in range(header_size):
        for value in (0x00, 0xFF, int(rng.integers(0, 256))):
            data = bytearray(frame_bytes)
            if data[pos] == value:
                continue
            data[pos] = value
            try:
                cdtypes.loads(bytes(data))
            except cdtypes.CdtError as e:
                assert str(e)
            # some header bytes (a kind, or lengths that stay consistent) may still decode


def test_huge_announced_sizes_do_not_allocate(frame_bytes):
    data = bytearray(frame_bytes)
    data[32:40] = (1 << 62).to_bytes(8, "little")  # frame_size
    with pytest.raises(cdtypes.FrameError):
        cdtypes.loads(bytes(data))
    data = bytearray(frame_bytes)
    data[48:56] = (1 << 40).to_bytes(8, "little")  # region 0 length
    with pytest.raises(cdtypes.FrameError):
        cdtypes.loads(bytes(data))


def test_corrupted_pickle_stream(frame_bytes):
    header_size = int.from_bytes(frame_bytes[8:16], "little")
    data = bytearray(frame_bytes)
    data[header_size : header_size + 8] = b"\xff" * 8
    with pytest.raises(cdtypes.UnpicklingFailed):
        cdtypes.loads(bytes(data))


def test_nonzero_padding(frame_bytes):
    header_size = int.from_bytes(frame_bytes[8:16], "little")
    packed = int.from_bytes(frame_bytes[16:24], "little")
    end = header_size + packed
    if end % 8 == 0:
        pytest.skip("no padding after the stream in this frame")
    data = bytearray(frame_bytes)
    data[end] = 1
    with pytest.raises(cdtypes.FrameError):
        cdtypes.loads(bytes(data))


def test_allocator_errors_propagate(frame_bytes):
    def bad(nbytes):
        raise MemoryError("no")

    with pytest.raises(cdtypes.CdtError, match="allocator") as info:
        cdtypes.loads(frame_bytes, alloc=bad)
    assert isinstance(info.value.__cause__, MemoryError)

    with pytest.raises(cdtypes.CdtError, match="allocator"):
        cdtypes.loads(frame_bytes, alloc=lambda n: bytearray(n + 1))
    with pytest.raises(cdtypes.CdtError, match="allocator"):
        cdtypes.loads(frame_bytes, alloc=lambda n: b"\0" * n)  # not writable


def test_inplace_needs_writable(frame_bytes):
    with pytest.raises(BufferError):
        cdtypes.loads(frame_bytes, inplace=True)

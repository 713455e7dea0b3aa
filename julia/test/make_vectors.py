#!/usr/bin/env python3
"""Write the Python-written test vectors that the Julia tests decode at the frame level.

    CDTYPES_LIBCDT=build/libcdt/libcdt.so PYTHONPATH=python python3 julia/test/make_vectors.py

For each vector, tests/vectors/python_NAME.bin is one frame written by the cdtypes package and
tests/vectors/python_NAME.json what a decoder must find in it: the header's fields, the header
bytes, the packed stream (the pickle stream) and every region (length, element kind, bytes),
all as read from the frame by the layout of docs/FORMAT.md.
"""
import json
import pathlib
import pickle
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "vectors"


def objects():
    return {
        # no out-of-band buffer: header + pickle stream only
        "inband": {"step": 7, "name": "cdtypes", "values": [1.5, -2, None, True]},
        # two out-of-band buffers (16-bit aligned payloads of different lengths)
        "buffers": [pickle.PickleBuffer(bytearray(b"0123456789abcdef" * 4)),
                    pickle.PickleBuffer(bytearray(range(37)))],
        # an empty buffer between two others: alignment still applies around it
        "empty_region": (pickle.PickleBuffer(bytearray(b"abc")),
                         pickle.PickleBuffer(bytearray()),
                         pickle.PickleBuffer(bytearray(b"xyz" * 5))),
    }


def layout(frame, writer="python cdtypes"):
    """The fields of a frame, read with docs/FORMAT.md (independent of libcdt's decoder)."""
    magic, version, flags, header_size, packed_size, region_count, frame_size, reserved = \
        struct.unpack_from("<4sHHQQQQQ", frame, 0)
    assert magic == b"CDTF" and version == 1 and reserved == 0
    assert header_size == 48 + 16 * region_count and frame_size == len(frame)
    regions = []
    end = header_size + packed_size
    for i in range(region_count):
        length, kind, res = struct.unpack_from("<QII", frame, 48 + 16 * i)
        assert res == 0
        off = (end + 7) & ~7
        assert frame[end:off] == bytes(off - end)  # zero padding
        regions.append({"len": length, "kind": kind, "offset": off,
                        "hex": frame[off:off + length].hex()})
        end = off + length
    assert end == frame_size
    return {
        "writer": writer,
        "version": version,
        "flags": flags,
        "header_size": header_size,
        "packed_size": packed_size,
        "region_count": region_count,
        "region_bytes": sum(r["len"] for r in regions),
        "frame_size": frame_size,
        "header_hex": frame[:header_size].hex(),
        "stream_hex": frame[header_size:header_size + packed_size].hex(),
        "regions": regions,
    }


def main():
    import cdtypes

    OUT.mkdir(parents=True, exist_ok=True)
    for name, obj in objects().items():
        with cdtypes.dumps(obj) as f:
            data = f.tobytes()
        info = layout(data, "python cdtypes %s" % cdtypes.__version__)
        back = cdtypes.loads(data)  # the writer reads its own vector back
        assert pickle.dumps(back) is not None
        (OUT / ("python_%s.bin" % name)).write_bytes(data)
        (OUT / ("python_%s.json" % name)).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
        print("python_%s.bin: %d bytes, %d regions" % (name, len(data), info["region_count"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The shared description of a test-vector frame (tests/vectors/NAME.bin -> NAME.json).

Every binding checks its frame-level decoder against these descriptions, so they are read
from the bytes with the layout of docs/FORMAT.md alone, independent of libcdt's decoder:

    python3 tests/vectors/describe.py --write     # (re)write NAME.json for every NAME.bin
    python3 tests/vectors/describe.py --check     # every NAME.json matches its NAME.bin

Keys (the one schema every writer uses): writer, version, flags, header_size, packed_size,
region_count, region_bytes, frame_size, header_hex, stream_hex, and regions: a list of
{len, kind, offset, hex} in region-table order. `writer` comes from the file name's prefix
(c_, python_, rust_, julia_) unless the existing NAME.json says more (a version).
"""
import json
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
WRITERS = {"c": "C libcdt", "python": "python cdtypes", "rust": "rust cdtypes", "julia": "julia CDTypes.jl"}


class VectorError(ValueError):
    pass


def _need(cond, what):
    if not cond:
        raise VectorError(what)


def layout(frame, writer):
    """The fields of one frame (bytes), checked against every MUST of docs/FORMAT.md."""
    _need(len(frame) >= 48, "shorter than the 48-byte fixed header")
    magic, version, flags, header_size, packed_size, region_count, frame_size, reserved = \
        struct.unpack_from("<4sHHQQQQQ", frame, 0)
    _need(magic == b"CDTF", "bad magic %r" % magic)
    _need(version == 1, "version %d" % version)
    _need(flags & ~3 == 0, "reserved flag bits set: %#x" % flags)
    if flags & 2:  # OBJECT_COUNT: offset 40 is the sender's object count
        _need(reserved <= 2**63 - 1, "object_count %d above 2^63-1" % reserved)
    else:  # an earlier writer's frame: offset 40 reserved
        _need(reserved == 0, "reserved header field not zero")
    _need(header_size == 48 + 16 * region_count, "header_size %d for %d regions" % (header_size, region_count))
    _need(frame_size == len(frame), "frame_size %d, file %d bytes" % (frame_size, len(frame)))
    _need(header_size + packed_size <= len(frame), "packed stream past the end")
    regions = []
    end = header_size + packed_size
    for i in range(region_count):
        length, kind, res = struct.unpack_from("<QII", frame, 48 + 16 * i)
        _need(res == 0, "region %d: reserved field not zero" % i)
        _need(1 <= kind <= 15, "region %d: kind %d" % (i, kind))
        off = (end + 7) & ~7
        _need(off + length <= len(frame), "region %d past the end" % i)
        _need(frame[end:off] == bytes(off - end), "region %d: padding not zero" % i)
        regions.append({"len": length, "kind": kind, "offset": off, "hex": frame[off:off + length].hex()})
        end = off + length
    _need(end == frame_size, "frame ends at %d, frame_size says %d" % (end, frame_size))
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


def writer_of(bin_path):
    js = bin_path.with_suffix(".json")
    if js.exists():
        try:
            w = json.loads(js.read_text()).get("writer")
            if isinstance(w, str) and w:
                return w
        except ValueError:
            pass
    return WRITERS.get(bin_path.name.split("_", 1)[0], "unknown")


def dump(info):
    return json.dumps(info, indent=1, sort_keys=True) + "\n"


def vectors(directory=HERE):
    return sorted(pathlib.Path(directory).glob("*.bin"))


def main(argv):
    if len(argv) != 2 or argv[1] not in ("--write", "--check"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        print("usage: describe.py --write | --check", file=sys.stderr)
        return 2
    bad = 0
    for b in vectors():
        js = b.with_suffix(".json")
        try:
            info = layout(b.read_bytes(), writer_of(b))
        except VectorError as e:
            print("%s: not a valid frame: %s" % (b.name, e))
            bad += 1
            continue
        if argv[1] == "--write":
            js.write_text(dump(info))
            print("%s: %d bytes, %d regions" % (js.name, info["frame_size"], info["region_count"]))
        elif not js.exists():
            print("%s: no %s (run describe.py --write)" % (b.name, js.name))
            bad += 1
        elif json.loads(js.read_text()) != info:
            print("%s: does not match %s" % (js.name, b.name))
            bad += 1
    if argv[1] == "--check":
        print("describe: %d vectors, %s" % (len(vectors()), "ok" if not bad else "%d problems" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

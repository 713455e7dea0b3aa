#!/usr/bin/env python3
"""Write the test vectors encoded by the Python package (tests/vectors/python_NAME.bin + .json).

    python3 tests/vectors/make_python.py        (with the package installed: pip install ./python)

Each vector is one frame written by `cdtypes.dumps`; its .json is the shared description
(describe.py: header fields and bytes, the packed stream, which is the pickle stream, and every
region). python/tests/test_vectors.py checks that the package still writes these bytes and
reads them back into `objects()`.
"""
import pathlib
import pickle
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import describe  # noqa: E402


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


def main():
    import cdtypes

    for name, obj in objects().items():
        with cdtypes.dumps(obj) as f:
            data = f.tobytes()
        info = describe.layout(data, "python cdtypes %s" % cdtypes.__version__)
        cdtypes.loads(data)  # the writer reads its own vector back
        (HERE / ("python_%s.bin" % name)).write_bytes(data)
        (HERE / ("python_%s.json" % name)).write_text(describe.dump(info))
        print("python_%s.bin: %d bytes, %d regions" % (name, len(data), info["region_count"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Instructions per pack and unpack of every layout, from callgrind: libcdt's whole-message
calls (cdt_pack / cdt_unpack), its operation API (libcdt_op) and the hand-written loop.
Instruction counts do not swing with the machine's load, so they show small differences (a
fixed cost per call) that timings on a shared machine cannot.

usage: counts.py BENCH_PACK_CDT OUT.csv [LAYOUT ...]   (run by bench/run pack --counts)

bench_pack_cdt --counts runs each method COUNTED_CALLS times inside a function of its own
(counted_<method>_<direction>); callgrind collects only inside those functions
(--toggle-collect), one valgrind run per layout, and callgrind_annotate --inclusive=yes gives
each function's total.
"""
import csv
import os
import re
import subprocess
import sys
import tempfile

CALLS = 10  # COUNTED_CALLS in pack_cdt.c
METHODS = ["libcdt", "libcdt_op", "manual"]


def layouts(exe):
    """(name, packed bytes) of every layout, from the program's own listing on stderr"""
    out = []
    r = subprocess.run([exe, "--counts"], capture_output=True, text=True, check=True)
    for line in r.stderr.splitlines():
        m = re.match(r"(\S+)\s+(\d+) B ", line)
        if m:
            out.append((m.group(1), int(m.group(2))))
    return out


def count(exe, name):
    with tempfile.TemporaryDirectory() as d:
        cg = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg,
                        "--toggle-collect=counted_*", exe, "--counts", "--only", name],
                       capture_output=True, check=True)
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", cg],
                             capture_output=True, text=True, check=True).stdout
    got = {}
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+) .*counted_(\w+?)_(pack|unpack) ", line)
        if m:
            got[(m.group(2), m.group(3))] = int(m.group(1).replace(",", "")) / CALLS
    return got


def main():
    exe, out_csv = sys.argv[1:3]
    only = set(sys.argv[3:])
    rows, table = [], []
    for name, nbytes in layouts(exe):
        if only and name not in only:
            continue
        got = count(exe, name)
        for (method, direction), ins in sorted(got.items()):
            rows.append([name, method, nbytes, direction + "_instructions", "%.1f" % ins,
                         "instructions/call"])
        table.append((name, nbytes, got))
        print("%-22s done" % name, file=sys.stderr)
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "method", "size_bytes", "metric", "value", "unit"])
        w.writerows(rows)
    for direction in ("pack", "unpack"):
        print("# %s: instructions per call (callgrind), and libcdt's over the hand loop" % direction)
        print("%-22s%10s%12s%12s%12s%10s%10s%9s" % ("case", "bytes", "libcdt", "libcdt_op",
                                                    "manual", "+libcdt", "+op", "ins/B"))
        for name, nbytes, got in table:
            v = {m: got.get((m, direction)) for m in METHODS}
            if None in v.values():
                continue
            print("%-22s%10d%12.0f%12.0f%12.0f%+10.0f%+10.0f%9.3f" % (
                name, nbytes, v["libcdt"], v["libcdt_op"], v["manual"],
                v["libcdt"] - v["manual"], v["libcdt_op"] - v["manual"],
                v["libcdt"] / nbytes if nbytes else 0))
        print()


if __name__ == "__main__":
    main()

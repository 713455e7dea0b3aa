"""Markdown report of the Julia benchmark (bench/julia/pingpong.jl): the machine, the UCX
transports in use, and per case a table of every method with cdtypes' ratios to raw and to
serialize (what a Julia user does today).

usage: report.py CSV OUT.md [--text RUN_OUTPUT] [--load-before L] [--load-after L]
                            [--seconds S] [--quick]"""
import argparse
import csv
import os
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine as bench_machine  # noqa: E402  (bench/machine.py)

METHODS = ["raw", "serialize", "cdtypes"]


def julia_version():
    try:
        return subprocess.run(["julia", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "julia (unknown version)"


def size_label(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def load(path):
    data = defaultdict(lambda: defaultdict(dict))  # (case, metric) -> method -> size -> value
    with open(path) as f:
        for r in csv.DictReader(f):
            data[(r["case"], r["metric"])][r["method"]][int(r["size_bytes"])] = float(r["value"])
    return data


def transports(text_path):
    if not text_path or not os.path.exists(text_path):
        return "not recorded"
    with open(text_path) as f:
        for line in f:
            if line.startswith("# transports"):
                return line.split(":", 1)[1].strip()
    return "not recorded"


def table(data, case):
    lat = data[(case, "latency_us")]
    bw = data[(case, "bandwidth_mbs")]
    sizes = sorted({s for m in lat.values() for s in m})
    out = ["| size | " + " | ".join("%s us" % m for m in METHODS) + " | "
           + " | ".join("%s MB/s" % m for m in METHODS) + " | cdtypes/raw | cdtypes/serialize |",
           "|---" * (2 * len(METHODS) + 3) + "|"]
    for s in sizes:
        cells = [size_label(s)]
        cells += ["%.2f" % lat[m][s] if s in lat.get(m, {}) else "-" for m in METHODS]
        cells += ["%.0f" % bw[m][s] if s in bw.get(m, {}) else "-" for m in METHODS]
        c = bw.get("cdtypes", {}).get(s)
        for ref in ("raw", "serialize"):
            r = bw.get(ref, {}).get(s)
            cells.append("%.2f" % (c / r) if c and r else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--text")
    ap.add_argument("--load-before", default="?")
    ap.add_argument("--load-after", default="?")
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv[1:])
    data = load(a.csv)
    cases = sorted({c for c, _ in data})
    lines = ["# Julia benchmark%s: CDTypes.jl against serialize + one raw message" % (" (quick)" if a.quick else ""),
             "",
             "- Machine: %s, %s" % (bench_machine.summary(), julia_version()),
             "- UCX transports (client endpoint): `%s`" % transports(a.text),
             "- Load average before / after: %s / %s; %s s" % (a.load_before, a.load_after, a.seconds),
             "- Ping-pong between two processes; latency is half a round trip, bandwidth the object's"
             " payload bytes over it (MB = 10^6). Ratios are bandwidth ratios within this run.",
             ""]
    for case in cases:
        lines += ["## %s" % case, ""] + table(data, case) + [""]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

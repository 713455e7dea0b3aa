"""The lane's gain in the Rust benchmark: runs of `cdtypes-bench --quick` with CDT_UCX_LANE=off,
=on and the FIFO mode (CDT_UCX_SHARED_MEMORY=full, lane off), alternated (bench/rust/run --lane),
summed up per case, method and size (from 1 MiB) as min / median MB/s over the runs and the ratio of the
lane's median to the lane-off one.

usage: lane_compare.py OUT.md OUT.csv RUN.csv... (each RUN.csv named *-<mode>-<rep>.csv, mode off,
on or fifo); lines '# lane: lane_sent N ...' of RUN.txt beside each RUN.csv are reported."""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

MODES = ["off", "on", "fifo"]
METHODS = ["cdtypes", "c-transport", "raw"]
MIB = 1 << 20


def main():
    out_md, out_csv, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    bw = defaultdict(list)  # (case, method, size, mode) -> MB/s of each run
    lane_lines = defaultdict(list)
    for path in runs:
        m = re.search(r"-(off|on|fifo)-\d+\.csv$", path)
        if not m:
            continue
        mode = m.group(1)
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["metric"] == "bandwidth_mbs" and int(r["size_bytes"]) >= MIB:
                    bw[(r["case"], r["method"], int(r["size_bytes"]), mode)].append(float(r["value"]))
        txt = path[:-4] + ".txt"
        if os.path.exists(txt):
            lane_lines[mode] += [l.strip() for l in open(txt) if l.startswith("# lane:")]
    cases = sorted({k[0] for k in bw})
    sizes = sorted({k[2] for k in bw})  # the plan's bandwidth sizes from 1 MiB
    with open(out_csv, "w") as f:
        f.write("case,method,size_bytes,mode,runs,min_mbs,median_mbs\n")
        for k, v in sorted(bw.items()):
            f.write("%s,%s,%d,%s,%d,%.1f,%.1f\n" % (k + (len(v), min(v), statistics.median(v))))
    with open(out_md, "w") as f:
        f.write("| case | method | size | lane off MB/s (min / median) | lane on | FIFO mode "
                "| lane / off (medians) | lane / raw (lane runs) |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
        for case in cases:
            for size in sizes:
                raw = bw.get((case, "raw", size, "on"))
                for method in METHODS:
                    cells = []
                    for mode in MODES:
                        v = bw.get((case, method, size, mode))
                        cells.append("%.0f / %.0f" % (min(v), statistics.median(v)) if v else "-")
                    off, on = bw.get((case, method, size, "off")), bw.get((case, method, size, "on"))
                    ratio = "%.2f" % (statistics.median(on) / statistics.median(off)) if off and on else "-"
                    to_raw = ("%.2f" % (statistics.median(on) / statistics.median(raw))
                              if on and raw and method != "raw" else "-")
                    f.write("| %s | %s | %d MiB | %s | %s | %s | %s | %s |\n" % (
                        case, method, size >> 20, cells[0], cells[1], cells[2], ratio, to_raw))
        f.write("\nRuns per mode: %s. The client's lane counters at each run's end: %s\n" % (
            ", ".join("%s %d" % (m, len([p for p in runs if "-%s-" % m in p])) for m in MODES),
            "; ".join("%s: %s" % (m, ", ".join(sorted(set(l[len("# lane: "):] for l in lane_lines[m]))))
                      for m in MODES if lane_lines[m])))
    print(open(out_md).read())


if __name__ == "__main__":
    main()

"""The report of bench/mpi: report.py CSV PNG MD --command C --mpi M --load L

A table per case (latency us | bandwidth MB/s of every method), the ratios the goals of issue
29 name (cdt against raw MPI_Send of the same bytes, against the MPI's own derived-datatype
send, cdt's extra latency on small messages), and a plot: bandwidth of contiguous bytes by
size, and of every layout by method."""
import argparse
import csv
import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine  # noqa: E402

ORDER = ["raw", "mpi_ddt", "mpi_pack", "rsmpi_ddt", "rsmpi_vec", "cdt"]
METHODS = ORDER  # narrowed to the methods of the CSV in main()
DDT = ("mpi_ddt", "rsmpi_ddt")  # the MPI's own derived-datatype send, in C and in Rust


def load(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["case"], int(r["size_bytes"]), r["method"])
            rows.setdefault(key, {})[r["metric"]] = float(r["value"])
    return rows


def table(rows):
    cases = []
    for case, size, _ in rows:
        if (case, size) not in cases:
            cases.append((case, size))
    lines = ["| case | bytes | " + " | ".join(METHODS) + " | cdt / raw | cdt / ddt |",
             "|---|---:|" + "---:|" * (len(METHODS) + 2)]
    for case, size in cases:
        cells = []
        for m in METHODS:
            v = rows.get((case, size, m))
            cells.append("%.1f \\| %.0f" % (v["latency_us"], v["bandwidth_mbs"]) if v else "")
        cdt, raw = rows.get((case, size, "cdt")), rows.get((case, size, "raw"))
        ddt = rows.get((case, size, DDT[0])) or rows.get((case, size, DDT[1]))
        r_raw = "%.2f" % (raw["latency_us"] / cdt["latency_us"]) if cdt and raw else ""
        r_ddt = "%.2f" % (ddt["latency_us"] / cdt["latency_us"]) if cdt and ddt else ""
        lines.append("| %s | %d | %s | %s | %s |" % (case, size, " | ".join(cells), r_raw, r_ddt))
    return lines


def goals(rows):
    out = []
    big = [(s, rows[(c, s, "raw")]["latency_us"] / rows[(c, s, "cdt")]["latency_us"])
           for c, s, m in rows if c.endswith("bytes") and m == "cdt" and s >= 1 << 20]
    if big:
        worst = min(big, key=lambda x: x[1])
        out.append("- contiguous bytes from 1 MiB, cdt / raw bandwidth (goal >= 0.9): worst %.2f "
                   "at %d B; %s" % (worst[1], worst[0],
                                    ", ".join("%d B: %.2f" % b for b in sorted(big))))
    small = [(s, rows[(c, s, "cdt")]["latency_us"] - rows[(c, s, "raw")]["latency_us"])
             for c, s, m in rows if c.endswith("bytes") and m == "cdt" and s <= 4096]
    if small:
        out.append("- small messages (<= 4 KiB), cdt latency - raw latency (goal <= 1 us): %s"
                   % ", ".join("%d B: %+.2f us" % x for x in sorted(small)))
    own = [(s, rows[(c, s, "cdt")]["latency_us"] - rows[(c, s, "raw")]["latency_us"])
           for c, s, m in rows if c == "bytes_self" and m == "cdt"]
    if own:
        out.append("- CPU cost per object, one rank sending to itself (no scheduling of a second "
                   "process in it), cdt - raw (goal <= 1 us for small messages): %s"
                   % ", ".join("%d B: %+.2f us" % x for x in sorted(own)))
    for label, pick in (("two ranks", lambda c: not c.endswith("_self")),
                        ("one rank sending to itself, CPU cost", lambda c: c.endswith("_self"))):
        lay = [("%s %d B" % (c, s), rows[(c, s, d)]["latency_us"] / rows[(c, s, "cdt")]["latency_us"])
               for c, s, m in rows for d in DDT
               if m == "cdt" and (c, s, d) in rows and pick(c)]
        if lay:
            below = [x for x in lay if x[1] < 1.0]
            out.append("- layouts (%s), cdt / the MPI's derived-datatype send (goal >= 1 on every "
                       "layout): %d of %d at or above; below: %s"
                       % (label, len(lay) - len(below), len(lay),
                          ", ".join("%s %.2f" % x for x in below) or "none"))
    return out


def plot(rows, dst):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: matplotlib missing)")
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 5))
    for m in ("raw", "rsmpi_vec", "cdt"):
        pts = sorted((s, v["bandwidth_mbs"]) for (c, s, mm), v in rows.items()
                     if c.endswith("bytes") and mm == m)
        if pts:
            a.plot([p[0] for p in pts], [p[1] for p in pts], "--" if m == "raw" else "-",
                   marker="o", ms=3, label=m)
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xlabel("bytes")
    a.set_ylabel("bandwidth (MB/s)")
    a.set_title("contiguous bytes, 2 MPI ranks")
    a.grid(True, which="both", alpha=0.3)
    a.legend()
    cases = []
    for c, s, _ in rows:
        if "bytes" not in c and not c.endswith("_self") and (c, s) not in cases:
            cases.append((c, s))
    width = 0.8 / len(METHODS)
    for k, m in enumerate(METHODS):
        vals = [rows.get((c, s, m), {}).get("bandwidth_mbs", 0) for c, s in cases]
        b.bar([i + (k - (len(METHODS) - 1) / 2) * width for i in range(len(cases))], vals, width,
              label=m)
    b.set_xticks(range(len(cases)))
    labels = [c if sum(1 for c2, _ in cases if c2 == c) == 1 else "%s %d B" % (c, s)
              for c, s in cases]
    b.set_xticklabels(labels, rotation=70, ha="right", fontsize=7)
    b.set_yscale("log")
    b.set_ylabel("bandwidth (MB/s of packed bytes)")
    b.set_title("layouts (DDTBench, seed types)")
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("md")
    ap.add_argument("--command", default="bench/run mpi")
    ap.add_argument("--mpi", default="")
    ap.add_argument("--load", default="")
    ap.add_argument("--title", default="C objects between 2 MPI ranks: cdt_mpi.h against raw "
                    "MPI_Send, MPI_Pack + send and the MPI's derived-datatype send")
    a = ap.parse_args()
    rows = load(a.csv)
    global METHODS
    METHODS = [m for m in ORDER if any(k[2] == m for k in rows)]
    plot(rows, a.png)
    md = ["# " + a.title, "",
          "Generated by `%s` on %s." % (a.command, datetime.date.today().isoformat()), "",
          "- machine: %s" % machine.summary(),
          "- MPI: %s (2 processes on one node)" % a.mpi,
          "- load average before / after the run: %s (more than the core count: other jobs "
          "share the cores and the numbers are noisy)" % a.load, "",
          "Latency = half the median round trip, bandwidth = the case's bytes (a layout's "
          "packed bytes) / latency, MB = 10^6 bytes. Cells: latency us \\| bandwidth MB/s. "
          "Methods: raw = MPI_Send of the same bytes from a contiguous buffer; mpi_ddt = "
          "MPI_Send of the MPI derived datatype; mpi_pack = MPI_Pack + MPI_Send, MPI_Recv + "
          "MPI_Unpack; cdt = cdt_mpi_send / cdt_mpi_recv of the libcdt datatype (Rust: "
          "cdtypes::mpi::send / recv); rsmpi_ddt = rsmpi's send of a slice with the struct's MPI "
          "datatype, into a buffer the receiver has; rsmpi_vec = the same received with "
          "receive_vec (a new Vec). Ratios are of "
          "bandwidths (the inverse ratio of the latencies): above 1, cdt is faster.", "",
          "## Goals (issue 29)", ""] + goals(rows) + ["", "## Every case", ""] + table(rows)
    with open(a.md, "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()

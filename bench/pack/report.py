#!/usr/bin/env python3
"""Table and plot of bench/pack's CSV: GB/s per layout and method, ratios of libcdt to the
hand-written loop and to the faster MPI, geometric means.
usage: report.py raw.csv pack.csv pack.png (raw rows of several passes: the best of each
case/method/metric goes to pack.csv)

Every ratio is formed inside one process: libcdt / manual from bench_pack_cdt, and libcdt against
an MPI as (libcdt / manual) / (MPI / manual_<mpi>), the MPI program timing the same hand loop
interleaved with MPI_Pack. Per-call times of one method swing between processes (page
placement, address translation); the hand loop of each process cancels that."""
import csv
import math
import sys

METHODS = ["libcdt", "libcdt_op", "manual", "mpich", "openmpi", "memcpy"]
MPIS = ("mpich", "openmpi")
FIELDS = ["case", "method", "size_bytes", "metric", "value", "unit"]


def load(path):
    data, order = {}, []
    with open(path) as f:
        for r in csv.DictReader(f, fieldnames=FIELDS):
            if r["case"] == "case":
                continue
            if r["case"] not in order:
                order.append(r["case"])
            k = (r["case"], r["method"], r["metric"])
            data[k] = max(data.get(k, 0.0), float(r["value"]))
    return data, order


def gmean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(data, order):
    lines = []
    summary = {}
    for metric in ("pack_gbs", "unpack_gbs"):
        lines.append(f"# {metric[:-4]} (GB/s = 10^9 bytes/s; ratios: libcdt / manual, libcdt / faster MPI, "
                     "each through the hand loop of its own process)")
        head = f"{'case':<22}{'bytes':>10}" + "".join(f"{m:>10}" for m in METHODS)
        lines.append(head + f"{'/manual':>9}{'/MPI':>8}{'/memcpy':>9}")
        rm, rmpi = [], []
        for c in order:
            v = {m: data.get((c, m, metric)) for m in METHODS}
            cells = "".join(f"{v[m]:>10.2f}" if v[m] is not None else f"{'-':>10}" for m in METHODS)
            a = v["libcdt"] / v["manual"] if v["libcdt"] and v["manual"] else None
            mpis = []  # each MPI over the hand loop of its own process (absolute if not timed)
            for m in MPIS:
                own = data.get((c, "manual_" + m, metric))
                if v[m] and own and v["manual"]:
                    mpis.append(v[m] / own * v["manual"])
                elif v[m]:
                    mpis.append(v[m])
            b = v["libcdt"] / max(mpis) if v["libcdt"] and mpis else None
            cm = v["libcdt"] / v["memcpy"] if v["libcdt"] and v["memcpy"] else None
            if a:
                rm.append(a)
            if b:
                rmpi.append(b)
            lines.append(f"{c:<22}{sizes.get(c, 0):>10}" + cells
                         + (f"{a:>9.2f}" if a else f"{'-':>9}")
                         + (f"{b:>8.2f}" if b else f"{'-':>8}")
                         + (f"{cm:>9.2f}" if cm else f"{'-':>9}"))
        gm, gp = gmean(rm), gmean(rmpi)
        summary[metric] = (gm, gp, min(rm) if rm else float("nan"))
        lines.append(f"geometric mean: libcdt/manual {gm:.2f}, libcdt/faster MPI {gp:.2f}; "
                     f"worst libcdt/manual {summary[metric][2]:.2f}")
        lines.append("")
    return "\n".join(lines)


def plot(data, order, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: pip install matplotlib; no plot written)")
        return
    fig, axes = plt.subplots(2, 1, figsize=(max(12, len(order) * 0.7), 9), sharex=True)
    w = 0.14
    for ax, metric in zip(axes, ("pack_gbs", "unpack_gbs")):
        for k, m in enumerate(METHODS):
            ys = [data.get((c, m, metric), 0) for c in order]
            ax.bar([i + (k - 2.5) * w for i in range(len(order))], ys, w, label=m)
        ax.set_ylabel(f"{metric[:-4]} GB/s")
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(ncol=6, loc="upper right")
    axes[0].set_title("bench/pack: libcdt vs MPI_Pack (MPICH, Open MPI), hand-written loop, memcpy")
    axes[1].set_xticks(range(len(order)))
    axes[1].set_xticklabels(order, rotation=60, ha="right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    raw, out_csv, png = sys.argv[1:4]
    data, order = load(raw)
    sizes = {}
    with open(raw) as f:
        for r in csv.DictReader(f, fieldnames=FIELDS):
            if r["case"] != "case":
                sizes[r["case"]] = int(r["size_bytes"])
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for c in order:
            for metric in ("pack_gbs", "unpack_gbs"):
                for m in METHODS + ["manual_" + x for x in MPIS]:
                    if (c, m, metric) in data:
                        w.writerow([c, m, sizes[c], metric, f"{data[(c, m, metric)]:.4f}", "GB/s"])
    print(table(data, order))
    plot(data, order, png)

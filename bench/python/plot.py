"""Bandwidth plot of bench/python's CSV: plot.py CSV PNG"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    data = {}
    with open(src) as f:
        for r in csv.DictReader(f):
            if r["metric"] in ("bandwidth", "bandwidth_mbs"):
                data.setdefault(r["case"], {}).setdefault(r["method"], []).append(
                    (int(r["size_bytes"]), float(r["value"])))
    titles = {"array": "one NumPy array", "many": "object of 128 KiB NumPy arrays"}
    fig, axes = plt.subplots(1, len(data), figsize=(6 * len(data), 4.5), squeeze=False)
    for ax, (case, methods) in zip(axes[0], data.items()):
        for method, pts in methods.items():
            pts.sort()
            style = "--" if method.startswith("raw") else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=3, label=method)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("object size (bytes of array data)")
        ax.set_ylabel("bandwidth (MB/s, 10^6 B/s)")
        ax.set_title("Python ping-pong over mpi4py: " + titles.get(case, case))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Plot of the Rust transfer benchmark: one PNG with a panel per case and metric (seed 000's
Figures 1-7 and the double-vec bandwidths the goals name), every method side by side."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"raw": "k--", "cdtypes": "r-o", "c-transport": "m-^", "manual": "b-s",
         "serde-bincode": "g-d", "cdtypes-serde": "y-v", "cdtypes-recycle": "c-x"}


def main(csv_path, out_png):
    rows = defaultdict(lambda: defaultdict(list))
    order = []
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            key = (r["case"], r["metric"])
            if key not in rows:
                order.append(key)
            rows[key][r["method"]].append((int(r["size_bytes"]), float(r["value"])))
    cols = 3
    nrows = (len(order) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 4 * nrows), squeeze=False)
    for ax, (case, metric) in zip(axes.flat, order):
        for m, pts in rows[(case, metric)].items():
            xs, ys = zip(*sorted(pts))
            ax.plot(xs, ys, STYLE.get(m, "-"), label=m, markersize=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("Size (bytes)")
        ax.set_ylabel("Latency (us)" if metric == "latency_us" else "Bandwidth (MB/s)")
        ax.set_title(f"{case}: {'latency' if metric == 'latency_us' else 'bandwidth'}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(order):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out_png, dpi=80)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

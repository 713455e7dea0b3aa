"""Plots of bench/transfer results: one PNG per case and metric, methods side by side."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, out_dir):
    rows = defaultdict(lambda: defaultdict(list))
    raw = defaultdict(list)
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            key = (r["case"], r["metric"])
            rows[key][r["method"]].append((int(r["size_bytes"]), float(r["value"])))
            if r["case"] == "bytes":
                raw[r["metric"]].append((int(r["size_bytes"]), float(r["value"])))
    for (case, metric), methods in rows.items():
        fig, ax = plt.subplots(figsize=(7, 4.5))
        if case != "bytes" and metric in raw:
            xs, ys = zip(*sorted(raw[metric]))
            ax.plot(xs, ys, "k--", label="raw bytes (roofline)")
        for m, pts in sorted(methods.items()):
            xs, ys = zip(*sorted(pts))
            ax.plot(xs, ys, marker="o", label=m)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("Size (bytes)")
        ax.set_ylabel("Latency (us)" if metric == "latency_us" else "Bandwidth (MB/s, MB = 10^6 B)")
        ax.set_title(f"{case}: {'latency' if metric == 'latency_us' else 'bandwidth'}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(f"{out_dir}/transfer_{case}_{metric.split('_')[0]}.png", dpi=100)
        plt.close(fig)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

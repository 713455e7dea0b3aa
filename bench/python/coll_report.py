"""The table (markdown, on stdout) and plot of bench/pycoll's CSV: coll_report.py CSV PNG

Per rank count, case and operation: microseconds per call of each method, then the ratios
the goals are stated in, from the same run: pkl5 / cdtypes (above 1: cdtypes is faster) and
buffer / cdtypes (the fraction of the buffer collective's speed that cdtypes reaches)."""
import csv
import sys

CASES = {"dict1k": "1 KiB dict", "array64m": "one 64 MiB array", "arrays100": "100 arrays of 64 KiB"}


def load(src):
    data = {}
    with open(src) as f:
        for r in csv.DictReader(f):
            key = (int(r["ranks"]), r["case"], r["op"])
            data.setdefault(key, {})[r["method"]] = float(r["us_per_call"])
            data.setdefault(key, {})[r["method"] + "@min"] = float(r.get("us_min") or
                                                                  r["us_per_call"])
    return data


def table(data):
    print("Median of the samples (min: the fastest sample), microseconds per call; ratios from"
          " the same run.\n")
    print("| ranks | case | op | cdtypes us | pkl5 us | buffer us | pkl5 / cdtypes | "
          "buffer / cdtypes | pkl5 / cdtypes (min) | buffer / cdtypes (min) | "
          "allgather ring us |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (ranks, case, op), t in sorted(data.items(), key=lambda kv: (
            kv[0][0], list(CASES).index(kv[0][1]) if kv[0][1] in CASES else 9, kv[0][2])):
        cell = lambda m: "%.1f" % t[m] if m in t else ""  # noqa: E731

        def ratio(m, base="cdtypes"):
            return "%.2f" % (t[m] / t[base]) if t.get(base) and m in t else ""
        print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            ranks, CASES.get(case, case), op, cell("cdtypes"), cell("pkl5"), cell("buffer"),
            ratio("pkl5"), ratio("buffer"), ratio("pkl5@min", "cdtypes@min"),
            ratio("buffer@min", "cdtypes@min"), cell("cdtypes-ring")))


def plot(data, dst):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cases = [c for c in CASES if any(k[1] == c for k in data)]
    fig, axes = plt.subplots(1, len(cases), figsize=(7 * len(cases), 4.5), squeeze=False)
    for ax, case in zip(axes[0], cases):
        keys = sorted((k for k in data if k[1] == case), key=lambda k: (k[2], k[0]))
        labels = ["%s/%d" % (k[2], k[0]) for k in keys]
        methods = ("cdtypes", "pkl5", "buffer")
        width = 0.8 / len(methods)
        for i, m in enumerate(methods):
            ax.bar([x + i * width for x in range(len(keys))],
                   [data[k].get(m, 0) for k in keys], width, label=m)
        ax.set_xticks([x + width for x in range(len(keys))])
        ax.set_xticklabels(labels, rotation=70, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("us per call (lower is better)")
        ax.set_title("%s (operation/ranks)" % CASES[case])
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


def main(src, dst):
    data = load(src)
    table(data)
    try:
        plot(data, dst)
    except ImportError:
        print("\n(no plot: matplotlib missing)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Merge benchmark CSVs (case,method,size_bytes,metric,value,unit): for each point keep the
best value over the passes (lowest latency, highest bandwidth), in the first file's order.

usage: best_of.py OUT.csv IN.csv [IN.csv ...]"""
import csv
import sys


def main(out_path, paths):
    order, best, header = [], {}, None
    for path in paths:
        with open(path) as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames
            for r in reader:
                key = (r["case"], r["method"], r["size_bytes"], r["metric"])
                v = float(r["value"])
                if key not in best:
                    order.append(key)
                    best[key] = r
                else:
                    old = float(best[key]["value"])
                    better = v < old if r["metric"].startswith("latency") else v > old
                    if better:
                        best[key] = r
    with open(out_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for key in order:
            w.writerow(best[key])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

"""Ratios between ping-pong runs (CSV files of bench/run python), latency against latency.

  python3 bench/python/compare.py backends BASE.csv OTHER.csv
      OTHER / BASE for the cdtypes methods (e.g. python-cffi.csv against python.csv: the cffi
      backend against the C extension on CPython); > 1 means OTHER is slower
  python3 bench/python/compare.py pickle RUN.csv
      cdtypes / pickle-inband and cdtypes / pkl5 within one run (e.g. python-pypy3.csv); <= 1
      means cdtypes is at least as fast
"""
import csv
import sys


def load(path):
    lat = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["metric"] == "latency_us":
                lat[(r["case"], r["method"], int(r["size_bytes"]))] = float(r["value"])
    return lat


def sizes(lat, case):
    return sorted({s for (c, _, s) in lat if c == case})


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "backends":
        base, other = load(sys.argv[2]), load(sys.argv[3])
        print("# latency of %s / %s (> 1: slower)" % (sys.argv[3], sys.argv[2]))
        for case in ("array", "many"):
            print("\n# case %s\n%-12s%14s%14s" % (case, "# Size", "cdtypes", "cdtypes-ucx"))
            for s in sizes(base, case):
                cells = []
                for m in ("cdtypes", "cdtypes-ucx"):
                    a, b = base.get((case, m, s)), other.get((case, m, s))
                    cells.append("%14.2f" % (b / a) if a and b else "%14s" % "-")
                print("%-12d" % s + "".join(cells))
    elif len(sys.argv) == 3 and sys.argv[1] == "pickle":
        lat = load(sys.argv[2])
        print("# %s: cdtypes latency / pickle-inband and / pkl5 (<= 1: cdtypes as fast or faster)"
              % sys.argv[2])
        for case in ("array", "many"):
            print("\n# case %s\n%-12s%18s%18s%18s%18s" % (case, "# Size", "cdtypes/inband",
                                                        "cdtypes/pkl5", "ucx/inband", "ucx/pkl5"))
            for s in sizes(lat, case):
                cells = []
                for m in ("cdtypes", "cdtypes-ucx"):
                    for ref in ("pickle-inband", "pkl5"):
                        a, b = lat.get((case, ref, s)), lat.get((case, m, s))
                        cells.append("%18.2f" % (b / a) if a and b else "%18s" % "-")
                print("%-12d" % s + "".join(cells))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

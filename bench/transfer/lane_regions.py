#!/usr/bin/env python3
"""Large regions with the lane (docs/TRANSPORT.md §10.3, Regions): bench_transfer's double_vec
objects of one region size after another, each mode in its own run, the modes alternated round
by round, libcdt and raw in the same run. Prints a Markdown table: MB/s of libcdt (min-median)
and libcdt / raw of the same run (min-median), per region size and mode.

  bench/transfer/lane_regions.py BUILD_DIR [--rounds R] [--total-mib M] [--points CASE:SIZE,...]

Modes: default (lane off: am=tcp/lo rma=cma/memory), lane-zcopy (lane on, regions of 64 KiB and
more zero-copy: a cma rendezvous per region, its hand-shake over TCP), lane (lane on, the
library's region threshold), full (the FIFO mode, CDT_UCX_SHARED_MEMORY=full). MB = 10^6 B.
"""
import os
import statistics
import subprocess
import sys

MODES = {
    "default": {},
    "lane-zcopy": {"CDT_UCX_LANE": "on", "CDT_UCX_LANE_REGION_THRESHOLD": "65536"},
    "lane": {"CDT_UCX_LANE": "on"},
    "full": {"CDT_UCX_SHARED_MEMORY": "full"},
}
POINTS = ["double_vec_64k:8388608", "double_vec_128k:1048576", "double_vec_128k:8388608",
          "double_vec_512k:8388608", "double_vec_2m:8388608", "double_vec_8m:16777216"]
MALLOC = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296"


def run(build, mode, case, size, total):
    env = dict(os.environ, GLIBC_TUNABLES=MALLOC, **MODES[mode])
    for k in ("CDT_UCX_LANE", "CDT_UCX_LANE_REGION_THRESHOLD", "CDT_UCX_SHARED_MEMORY"):
        if k not in MODES[mode]:
            env.pop(k, None)
    out = subprocess.run([os.path.join(build, "bench/transfer/bench_transfer"), "--cases", case,
                          "--methods", "raw,libcdt", "--size", str(size), "--total-mib",
                          str(total), "--bandwidth-only"], env=env, capture_output=True,
                         text=True, timeout=300).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == str(size):
            return float(f[1]), float(f[3])
    raise SystemExit(f"no row for {case} {size} in mode {mode}:\n{out}")


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    build, rounds, total, points, modes = args[0], 3, 256, POINTS, list(MODES)
    i = 1
    while i < len(args):
        if args[i] == "--rounds":
            rounds = int(args[i + 1])
        elif args[i] == "--total-mib":
            total = int(args[i + 1])
        elif args[i] == "--points":
            points = args[i + 1].split(",")
        elif args[i] == "--modes":
            modes = args[i + 1].split(",")
        else:
            raise SystemExit(__doc__)
        i += 2
    res = {}
    for r in range(rounds):
        for p in points:
            case, size = p.split(":")
            for m in modes:
                raw, lib = run(build, m, case, int(size), total)
                res.setdefault((p, m), []).append((lib, lib / raw))
                print(f"# round {r + 1} {p} {m}: libcdt {lib:.0f} MB/s, raw {raw:.0f}, "
                      f"ratio {lib / raw:.2f}", file=sys.stderr, flush=True)
    print("| region size (object) | " + " | ".join(modes) + " |")
    print("|---|" + "---|" * len(modes))
    for p in points:
        case, size = p.split(":")
        cells = []
        for m in modes:
            v = res[(p, m)]
            mbs = sorted(x[0] for x in v)
            rat = sorted(x[1] for x in v)
            cells.append(f"{mbs[0]:,.0f}-{statistics.median(mbs):,.0f} "
                         f"({rat[0]:.2f}-{statistics.median(rat):.2f})")
        print(f"| {case} ({int(size) // 1024:,} KiB) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""Markdown report of the Rust transfer benchmark: the machine and the UCX transports in use,
the issue's goals (met or missed, by how much), and per case a table of every method with the
ratios that the goals name.

usage: report.py CSV OUT.md [--log UCX_LOG] [--load-before L] [--load-after L] [--seconds S]
                            [--quick]"""
import argparse
import csv
import os
import re
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine as bench_machine  # noqa: E402  (bench/machine.py)

METHODS = ["raw", "cdtypes", "c-transport", "manual", "serde-bincode", "cdtypes-serde", "cdtypes-recycle"]
MIB = 1 << 20


def machine():
    try:
        rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        rustc = "rustc (unknown version)"
    return f"{bench_machine.summary()}, {rustc}"


def transports(log_path):
    lanes = []
    if log_path and os.path.exists(log_path):
        with open(log_path) as f:
            for line in f:
                m = re.search(r"ep_cfg\[\d+\]: (.*)$", line)
                if m and m.group(1).strip() not in lanes:
                    lanes.append(m.group(1).strip())
    return lanes


def load(csv_path):
    data = defaultdict(lambda: defaultdict(dict))  # (case, metric) -> method -> size -> value
    order = []
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            key = (r["case"], r["metric"])
            if key not in data:
                order.append(key)
            data[key][r["method"]][int(r["size_bytes"])] = float(r["value"])
    return data, order


def ratio(data, case, metric, a, b, pred):
    """[(size, a/b)] over the sizes where both are measured and pred(size)."""
    sa, sb = data[(case, metric)].get(a, {}), data[(case, metric)].get(b, {})
    return [(s, sa[s] / sb[s]) for s in sorted(sa) if s in sb and pred(s) and sb[s] > 0]


def diff(data, case, metric, a, b, pred):
    sa, sb = data[(case, metric)].get(a, {}), data[(case, metric)].get(b, {})
    return [(s, sa[s] - sb[s]) for s in sorted(sa) if s in sb and pred(s)]


def fmt_size(s):
    if s >= MIB:
        return f"{s // MIB} MiB"
    if s >= 1024:
        return f"{s // 1024} KiB"
    return f"{s} B"


def goal_line(name, pts, want, better_high=True, unit="x"):
    """One goal: the worst point against `want`."""
    if not pts:
        return f"| {name} | not measured | - | - |"
    worst = min(pts, key=lambda p: p[1]) if better_high else max(pts, key=lambda p: p[1])
    ok = all((v >= want) if better_high else (v <= want) for _, v in pts)
    met = sum(1 for _, v in pts if (v >= want) if better_high) if better_high else \
        sum(1 for _, v in pts if v <= want)
    shown = f"{worst[1]:.2f}{unit} at {fmt_size(worst[0])}"
    verdict = "met" if ok else f"missed at {len(pts) - met} of {len(pts)} sizes"
    return f"| {name} | {shown} | {'>=' if better_high else '<='} {want}{unit} | {verdict} |"


def goals(data):
    bw, lat = "bandwidth_mbs", "latency_us"
    ge = lambda lo: (lambda s: s >= lo)  # noqa: E731
    small = lambda s: s <= 4096  # noqa: E731
    rows = [
        "| goal | worst point | wanted | verdict |",
        "|---|---:|---:|---|",
        goal_line("double-vec 128 KiB sub-vectors: cdtypes / raw bandwidth from 1 MiB",
                  ratio(data, "double_vec_128k", bw, "cdtypes", "raw", ge(MIB)), 0.9),
        goal_line("double-vec 1 KiB sub-vectors: cdtypes / raw bandwidth from 1 MiB",
                  ratio(data, "double_vec_1k", bw, "cdtypes", "raw", ge(MIB)), 0.6),
    ]
    for case in ["struct_simple", "struct_vec"]:
        rows.append(goal_line(f"{case}: cdtypes / manual bandwidth, every size",
                              ratio(data, case, bw, "cdtypes", "manual", lambda s: True), 1.0))
        rows.append(goal_line(f"{case}: manual / cdtypes latency (>= 1: cdtypes as fast), every size",
                              ratio(data, case, lat, "manual", "cdtypes", lambda s: True), 1.0))
        rows.append(goal_line(f"{case}: cdtypes / serde-bincode bandwidth from 64 KiB",
                              ratio(data, case, bw, "cdtypes", "serde-bincode", ge(65536)), 1.5))
    cases = sorted({c for c, _ in data})
    small_pts = []
    for case in cases:
        small_pts += diff(data, case, lat, "cdtypes", "c-transport", small)
    rows.append(goal_line("small objects (<= 4 KiB): cdtypes - c-transport latency, every case",
                          small_pts, 1.0, better_high=False, unit=" us"))
    over_bw, over_lat = [], []
    for case in cases:
        over_bw += ratio(data, case, bw, "cdtypes", "c-transport", ge(65536))
        over_lat += ratio(data, case, lat, "cdtypes", "c-transport", ge(65536))
    rows.append(goal_line("Rust layer from 64 KiB: cdtypes / c-transport bandwidth, every case",
                          over_bw, 0.95))
    rows.append(goal_line("Rust layer from 64 KiB: cdtypes / c-transport latency, every case",
                          over_lat, 1.05, better_high=False))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--log")
    ap.add_argument("--load-before", default="?")
    ap.add_argument("--load-after", default="?")
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--pinned", default="")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    data, order = load(a.csv)
    lanes = transports(a.log)
    cmd = "bench/run rust --quick" if a.quick else "bench/run rust"
    out = [
        "# bench/rust results", "",
        "Seed 000's Rust evaluation (Figures 1-7) on libcdt: two processes on one machine over UCX",
        "(endpoints from exchanged worker addresses), the seed's Rust types (`Vec<Vec<i32>>` with",
        "sub-vectors of 64 B, 1 KiB, 4 KiB or 128 KiB; `Vec<StructVec>`, `Vec<StructSimple>`,",
        "`Vec<StructSimpleNoGap>`, all `#[repr(C)]`). Methods, interleaved at every size:",
        "",
        "- `raw`: one contiguous UCX tag message of the same byte count into a reused buffer (the roofline);",
        "- `cdtypes`: `Endpoint::isend` / `Worker::irecv` of the value (derived `Pack` / `Unpack`;",
        "  the receiver allocates every vector from the frame header);",
        "- `c-transport`: libcdt's C transport on the same memory with the C twin of the type",
        "  (examples/c/seed_types.c; bench/transfer's `libcdt`);",
        "- `manual`: hand-written pack into one byte buffer, raw send, hand-written unpack;",
        "- `serde-bincode`: `bincode::serialize`, raw send, `bincode::deserialize` (what a Rust user does today);",
        "- `cdtypes-serde`: the same value through cdtypes' serde bridge (`cdtypes::serde::Serde`);",
        "- `cdtypes-recycle`: as `cdtypes`, each received value handed back with `cdtypes::recycle` once",
        "  checked, so the next receive of a `Vec` of derived fixed-size structs lands in its memory",
        "  (as `c-transport` receives into its slots again; for double-vec the same as `cdtypes`).",
        "",
        "The receivers of `manual` and `serde-bincode` are given the message length (a real one needs",
        "a probe or a second message). Latency: half the median round trip of a ping-pong; bandwidth:",
        "windows of non-blocking sends, each followed by an acknowledgement, the bytes of a window over",
        "the median window time (the median, not the mean: an iteration in which a process lost its",
        "core to other work is an outlier). Sizes are the object's data bytes asked for (a",
        "struct array holds as many whole elements as fit). MB = 10^6 bytes.",
        f"Command: `{cmd}`" + ("" if a.quick else " (each point measured twice, the methods interleaved, the better value kept)") + ".",
        "",
        f"Machine: {machine()}. Load average (1, 5, 15 min) {a.load_before} before and {a.load_after} "
        f"after the run ({a.seconds} s). The machine is shared with other work running at the same "
        "time and the two benchmark processes busy-poll on its 2 cores: absolute numbers swing "
        "from run to run; compare the methods' ratios within this run, not with other runs."
        + (f" Processes pinned: {a.pinned} (taskset)." if a.pinned else "")
        + f" Allocator: GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES') or '(glibc defaults)'}.",
        "",
        "UCX transports in use (UCX_LOG_LEVEL=info, lanes of the endpoints): "
        + ("; ".join(f"`{l}`" for l in lanes) if lanes else "(not recorded)") + ".",
        "",
        "What the numbers say, goal by goal, and what would close the gaps: "
        "[rust_findings.md](rust_findings.md).", "",
        "## The issue's goals", "",
    ]
    out += goals(data)
    out.append("")
    for case, metric in order:
        series = data[(case, metric)]
        sizes = sorted(set().union(*[set(v) for v in series.values()]))
        lat = metric == "latency_us"
        present = [m for m in METHODS if m in series]
        extras = (["cdtypes - raw (us)", "cdtypes - c (us)", "manual / cdtypes", "bincode / cdtypes"] if lat
                  else ["cdtypes / raw", "cdtypes / c", "cdtypes / manual", "cdtypes / bincode"])
        out.append(f"## {case}: {'latency (us)' if lat else 'bandwidth (MB/s)'}")
        out.append("")
        out.append("| size (B) | " + " | ".join(present + extras) + " |")
        out.append("|---:|" + "---:|" * (len(present) + len(extras)))
        for s in sizes:
            cells = [f"{series[m][s]:.2f}" if s in series[m] else "-" for m in present]
            g = lambda m: series.get(m, {}).get(s)  # noqa: E731
            c, r, mn, bc, cc = g("cdtypes"), g("raw"), g("manual"), g("serde-bincode"), g("c-transport")
            if lat:
                cells += [f"{c - r:+.2f}" if c and r else "-", f"{c - cc:+.2f}" if c and cc else "-",
                          f"{mn / c:.2f}" if c and mn else "-", f"{bc / c:.2f}" if c and bc else "-"]
            else:
                cells += [f"{c / r:.2f}" if c and r else "-", f"{c / cc:.2f}" if c and cc else "-",
                          f"{c / mn:.2f}" if c and mn else "-", f"{c / bc:.2f}" if c and bc else "-"]
            out.append(f"| {s} | " + " | ".join(cells) + " |")
        out.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()

"""Markdown report of bench/transfer results: per case, latency (libcdt minus raw, in us) and
bandwidth (libcdt / raw) next to the other methods, plus the machine the run was on.

usage: report.py CSV OUT.md [TRANSPORTS.txt]"""
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine as bench_machine  # noqa: E402  (bench/machine.py)


def machine():
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{bench_machine.summary()}, "
            f"load average {load:.2f} at the end of the run, "
            f"UCX_TLS={os.environ.get('UCX_TLS', '(default)')}, "
            f"CDT_UCX_PROTOCOL={os.environ.get('CDT_UCX_PROTOCOL', '(auto)')}, "
            f"allocator: GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '(glibc defaults)')}"
            + (", the sender writes every cache line of what it sends before each send "
               "(CDT_BENCH_REWRITE=1)" if os.environ.get("CDT_BENCH_REWRITE") == "1" else ""))


def machine_line(transports_path):
    """machine(), with the UCX version the benchmark's own transports file names (its first
    line, "UCX x.y.z, ..."), when it differs from the system's ucx_info"""
    line = machine()
    if transports_path and os.path.exists(transports_path):
        with open(transports_path) as f:
            first = f.readline().split(",")[0].strip()
        if first.startswith("UCX ") and first not in line:
            line = line.replace(f"UCX {bench_machine.ucx_version()}", f"{first} (the benchmark's build)")
    return line


def main(csv_path, out_path, transports_path=None):
    data = defaultdict(lambda: defaultdict(dict))  # (case, metric) -> method -> size -> value
    order = []
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            key = (r["case"], r["metric"])
            if key not in data:
                order.append(key)
            data[key][r["method"]][int(r["size_bytes"])] = float(r["value"])
    methods = ["raw", "raw_nopeer", "libcdt", "manual_pack", "ucx_iov", "ucx_generic"]
    # the UCX the benchmark ran against is the one its transports file names (a build against
    # another UCX than the system's ucx_info, e.g. the libucx-cu12 wheel's)
    out = ["# bench/transfer results", "",
           "Two processes on one machine over UCX (endpoints from exchanged worker addresses, so",
           "UCX picks shared memory). `raw`: one contiguous `ucp_tag_send_nbx` of the same byte",
           "count (the roofline); `libcdt`: `cdt_ucx_isend`/`cdt_ucx_irecv` of the object (one",
           "matched message); `manual_pack`: hand-written pack into bytes, raw send, hand-written",
           "unpack (one pack buffer per message in flight on each side); `ucx_iov`: one UCX IOV message (packed fields, then every region);",
           "`raw_nopeer`: `raw` on an endpoint without peer error handling; `ucx_generic`: one",
           "message of a UCX generic datatype whose callbacks drive libcdt's frame encoder",
           "(`cdt_op_pack` / `cdt_frame_gather`) and decoder (`cdt_op_unpack` /",
           "`cdt_decoder_write`), the prototype of single mode. Every send buffer is",
           "written before it is sent; at least 1 GiB per bandwidth point (256 MiB quick). Latency:",
           "half round trip of a ping-pong; bandwidth: windows of non-blocking sends then an",
           "acknowledgement. MB = 10^6 bytes. Command: `bench/run transfer` (two passes, the better value of each point).", "",
           f"Machine: {machine_line(transports_path)} (the two benchmark processes busy-poll, so the load is about 2 while it runs).", "",
           "What the numbers say, goal by goal: [transfer_findings.md](transfer_findings.md).", ""]
    if transports_path and os.path.exists(transports_path):
        with open(transports_path) as f:
            out += ["Transports that ran (`cdt_ucx_ep_transports`, `ucp_ep_print_info`):", "", "```"]
            out += [line.rstrip() for line in f if line.strip() not in ("", "#")]
            out += ["```", ""]
    for case, metric in order:
        series = data[(case, metric)]
        sizes = sorted(set().union(*[set(v) for v in series.values()]))
        lat = metric == "latency_us"
        title = "latency (us)" if lat else "bandwidth (MB/s)"
        present = [m for m in methods if m in series]
        extra = "libcdt - raw (us)" if lat else "libcdt / raw"
        out.append(f"## {case}: {title}")
        out.append("")
        out.append("| size (B) | " + " | ".join(present) + f" | {extra} |")
        out.append("|---:|" + "---:|" * (len(present) + 1))
        for s in sizes:
            cells = [f"{series[m][s]:.2f}" if s in series[m] else "-" for m in present]
            if "libcdt" in series and s in series["libcdt"] and s in series.get("raw", {}):
                a, b = series["libcdt"][s], series["raw"][s]
                cells.append(f"{a - b:+.2f}" if lat else f"{a / b:.2f}")
            else:
                cells.append("-")
            out.append(f"| {s} | " + " | ".join(cells) + " |")
        out.append("")
    out += allocation_rows(data)
    with open(out_path, "w") as f:
        f.write("\n".join(out))


def allocation_rows(data):
    """The receive type's allocation as its own row: each double_vec case beside its _reused
    case (every object received into the arrays of one double_vec), libcdt's MB/s in
    both and the time an object the allocation adds (fresh minus reused, in us per MiB)."""
    out = []
    for (case, metric), series in data.items():
        reused = data.get((case + "_reused", metric))
        if metric != "bandwidth_mbs" or reused is None or "libcdt" not in series \
                or "libcdt" not in reused:
            continue
        sizes = sorted(set(series["libcdt"]) & set(reused["libcdt"]))
        if not sizes:
            continue
        out += [f"## {case}: the receiver's allocation (libcdt, fresh arrays against reused)", "",
                "| size (B) | fresh MB/s | reused MB/s | fresh / reused | allocation's cost (us per MiB) |",
                "|---:|---:|---:|---:|---:|"]
        for s in sizes:
            a, b = series["libcdt"][s], reused["libcdt"][s]
            # MB/s = bytes per us: us per MiB = 1,048,576 / (MB/s)
            cost = 1048576 / a - 1048576 / b if a > 0 and b > 0 else float("nan")
            out.append(f"| {s} | {a:.2f} | {b:.2f} | {a / b:.2f} | {cost:+.1f} |")
        out.append("")
    return out


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)

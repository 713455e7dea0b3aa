#!/usr/bin/env python3
"""One NumPy array between two local processes over cdtypes.ucx, with the lane on and off
(docs/TRANSPORT.md §10.3): what bounds a single large array through the lane's stream.

Two processes (fork, no MPI), one endpoint pair per mode (CDT_UCX_LANE=off / on, each on its own
worker), ping-pong of one array (the receiver sends back the array it got), the modes alternated
round by round. Per mode: MB/s of one way (bytes / half the round trip, median and min of the
rounds' medians), and each process's CPU time per object (time.process_time: user + system, so
a side that spins shows it). --reuse: the receives go into one buffer per process (recv's
``alloc``), so no new memory is faulted in per object; without it each receive allocates its
array as cdtypes does by default. --bytes: a Python bytes object of the size instead, which
pickle keeps in band: the packed stream of one large object, not a region (--reuse has no
effect there: the receiver makes a new bytes object).

  lane_array.py [--size BYTES] [--iters N] [--rounds R] [--reuse] [--bytes] [--lane off|on]
  (--lane: that mode alone, e.g. under a profiler)
"""
import argparse
import os
import statistics
import struct
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8 << 20)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--bytes", action="store_true", help="a bytes object (in band), not an array")
    ap.add_argument("--lane", choices=["off", "on"], help="that mode alone (default: both)")
    a = ap.parse_args()
    port_r, port_w = os.pipe()
    res_r, res_w = os.pipe()
    kid = os.fork()
    rank = 0 if kid else 1
    import numpy as np
    from cdtypes import ucx

    modes = [a.lane] if a.lane else ["off", "on"]
    eps = {}
    for m in modes:
        os.environ["CDT_UCX_LANE"] = m
        if rank == 0:
            lis = ucx.listen(host="127.0.0.1")
            os.write(port_w, struct.pack("i", lis.port))
            ep = lis.accept(timeout=60)
            ep.recv(tag=0, timeout=60)
            eps[m] = (ep, lis)
        else:
            port = struct.unpack("i", os.read(port_r, 4))[0]
            ep = ucx.connect("127.0.0.1", port, timeout=60)
            ep.send("hello", tag=0, timeout=60)
            eps[m] = (ep, None)
    obj = bytes(range(256)) * (a.size // 256) if a.bytes else np.ones(a.size, dtype=np.uint8)
    keep = np.empty(a.size + 64, dtype=np.uint8) if a.reuse else None
    alloc = (lambda n: keep[:n]) if a.reuse else None
    out = {m: [] for m in modes}
    for r in range(a.rounds):
        for m in modes:
            ep = eps[m][0]
            for _ in range(3):  # warm up this mode's path
                if rank == 0:
                    ep.send(obj, 1)
                    ep.recv(2, alloc=alloc)
                else:
                    ep.send(ep.recv(1, alloc=alloc), 2)
            times = []
            c0 = time.process_time()
            for _ in range(a.iters):
                t0 = time.perf_counter()
                if rank == 0:
                    ep.send(obj, 1)
                    back = ep.recv(2, alloc=alloc)
                else:
                    back = ep.recv(1, alloc=alloc)
                    ep.send(back, 2)
                del back
                times.append(time.perf_counter() - t0)
            cpu = (time.process_time() - c0) / a.iters / 2  # per object moved (two per trip)
            out[m].append((statistics.median(times) / 2, cpu))
    if rank == 1:
        n = len(modes) * a.rounds
        os.write(res_w, struct.pack("%dd" % n, *[c for m in modes for _, c in out[m]]))
        for m in modes:
            eps[m][0].close()
        os._exit(0)
    n = len(modes) * a.rounds
    peer = struct.unpack("%dd" % n, os.read(res_r, 8 * n))
    os.waitpid(kid, 0)
    what = "bytes object (in band)" if a.bytes else "array"
    print("# one %d-byte %s, %s receiver memory, %d round trips x %d rounds alternated, "
          "load %s" % (a.size, what, "reused" if a.reuse and not a.bytes
                       else "fresh (cdtypes' default)", a.iters, a.rounds,
                       open("/proc/loadavg").read().split()[0]))
    print("| lane | min MB/s | median MB/s | CPU us / object, process 0 (median) | "
          "CPU us / object, process 1 (median) |")
    print("|---|---:|---:|---:|---:|")
    for i, m in enumerate(modes):
        mbs = sorted(a.size / t / 1e6 for t, _ in out[m])
        c0 = statistics.median(c for _, c in out[m]) * 1e6
        c1 = statistics.median(peer[i * a.rounds:(i + 1) * a.rounds]) * 1e6
        print("| %s | %.0f | %.0f | %.0f | %.0f |" % (m, mbs[0], statistics.median(mbs), c0, c1))
    for m in modes:
        eps[m][0].close()
        if eps[m][1] is not None:
            eps[m][1].close()


if __name__ == "__main__":
    sys.exit(main())

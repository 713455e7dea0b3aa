"""Python object ping-pong between 2 MPI processes (run by bench/python/run under mpiexec -n 2).

Cases: `array` - one NumPy array of the size; `many` - an object (dict of a list) of 128 KiB
NumPy arrays adding up to the size (one array of the size below 128 KiB).
Methods:
  raw            MPI Send/Recv of a preallocated byte buffer: the roofline, no object at all
  pickle-inband  pickle.dumps(protocol=5) without buffer_callback, one message, Mprobe + Recv
  pickle-oob     mpi4py.util.pkl5: out-of-band buffers, N + 2 messages per object
  cdtypes        cdtypes.mpi: one message per object (frame pieces in place via hindexed;
                 frames below 16 KiB gathered)
  cdtypes-gather the same message, gathered into one contiguous buffer before MPI_Send
  cdtypes-ucx    cdtypes.ucx over libcdt's UCX transport (MPI only starts the processes and
                 passes the port); buffers >= 64 KiB zero-copy on both ends
Latency is half the median round trip (the receiver sends the object it rebuilt back);
bandwidth is size / latency in MB/s (10^6 bytes).
"""
import argparse
import pickle
import sys
import time

import numpy as np
from mpi4py import MPI
from mpi4py.util import pkl5

from cdtypes import mpi as cmpi

try:
    from cdtypes import ucx
except ImportError:  # libcdt built without UCX
    ucx = None

comm = MPI.COMM_WORLD
rank = comm.rank
peer = 1 - rank
KiB = 1024
CHUNK = 128 * KiB


def make(case, size):
    if case == "array":
        return np.ones(size, dtype=np.uint8)
    n = max(1, size // CHUNK)
    return {"arrays": [np.ones(min(size, CHUNK), dtype=np.uint8) for _ in range(n)]}


def obj_bytes(case, size):
    return size if case == "array" or size < CHUNK else (size // CHUNK) * CHUNK


# each method: send(obj, dest, tag) and recv(source, tag) -> obj
def raw_methods(size):
    buf = np.ones(size, dtype=np.uint8)
    return (lambda o, d, t: comm.Send([buf, MPI.BYTE], d, t),
            lambda s, t: (comm.Recv([buf, MPI.BYTE], s, t), buf)[1])


def inband_send(obj, dest, tag):
    data = pickle.dumps(obj, protocol=5)
    comm.Send([data, MPI.BYTE], dest, tag)


def inband_recv(source, tag):
    st = MPI.Status()
    msg = comm.Mprobe(source, tag, st)
    buf = bytearray(st.Get_count(MPI.BYTE))
    msg.Recv([buf, MPI.BYTE])
    return pickle.loads(buf)


pcomm = pkl5.Intracomm(comm)
METHODS = {
    "raw": None,
    "pickle-inband": (inband_send, inband_recv),
    "pickle-oob": (lambda o, d, t: pcomm.send(o, d, t), lambda s, t: pcomm.recv(None, s, t)),
    "cdtypes": (lambda o, d, t: cmpi.send(o, d, t), lambda s, t: cmpi.recv(s, t)),
    "cdtypes-gather": (lambda o, d, t: cmpi.send(o, d, t, gather=True), lambda s, t: cmpi.recv(s, t)),
}


def ucx_endpoint():
    """Rank 0 listens on loopback, rank 1 connects; the port travels over MPI."""
    if rank == 0:
        listener = ucx.listen(host="127.0.0.1")
        comm.bcast(listener.port, root=0)
        ep = listener.accept(timeout=60)
        ep.recv(tag=0, timeout=60)  # progress until the connection is up on both sides
        return ep, listener
    port = comm.bcast(None, root=0)
    ep = ucx.connect("127.0.0.1", port, timeout=60)
    ep.send("hello", tag=0, timeout=60)
    return ep, None


if ucx is not None:
    _ep, _listener = ucx_endpoint()
    METHODS["cdtypes-ucx"] = (lambda o, d, t: _ep.send(o, t), lambda s, t: _ep.recv(t))


def pingpong(send, recv, obj, iters):
    """Median one-way time over `iters` round trips (rank 0's clock; rank 1 returns 0)."""
    times = []
    comm.Barrier()
    for _ in range(iters):
        t0 = time.perf_counter()
        if rank == 0:
            send(obj, peer, 1)
            recv(peer, 2)
        else:
            back = recv(peer, 1)
            send(back, peer, 2)
            del back
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    if args.quick:
        sizes = [KiB << s for s in (0, 4, 8, 12, 16)]  # 1 KiB .. 64 MiB, x16
        target, max_iters = 0.05, 200
    else:
        sizes = [KiB << s for s in range(17)]  # 1 KiB .. 64 MiB, doubling
        target, max_iters = 0.4, 2000
    rows = []
    for case in ("array", "many"):
        if rank == 0:
            print("\n# case %s (%s)" % (case, "one NumPy array" if case == "array"
                                        else "128 KiB NumPy arrays adding up to the size"))
            print("%-12s" % "# Size" + "".join("%16s" % m for m in METHODS) + "   (latency us | MB/s)")
        for size in sizes:
            line = {}
            for method, fns in METHODS.items():
                send, recv = fns if fns else raw_methods(size)
                obj = make(case, size) if method != "raw" else None
                pingpong(send, recv, obj, 2)  # warm up (allocations, connections)
                t = pingpong(send, recv, obj, 2)
                iters = int(min(max_iters, max(5, target / max(t * 2, 1e-9))))
                iters = comm.bcast(iters, root=0)
                lat = pingpong(send, recv, obj, iters)
                nbytes = obj_bytes(case, size)
                line[method] = (lat * 1e6, nbytes / lat / 1e6)
                rows.append((case, method, nbytes, "latency", lat * 1e6, "us"))
                rows.append((case, method, nbytes, "bandwidth", nbytes / lat / 1e6, "MB/s"))
            if rank == 0:
                print("%-12d" % obj_bytes(case, size)
                      + "".join("%9.1f|%6.0f" % line[m] for m in METHODS))
                sys.stdout.flush()
    if rank == 0:
        with open(args.csv, "w") as f:
            f.write("case,method,size_bytes,metric,value,unit\n")
            for r in rows:
                f.write("%s,%s,%d,%s,%.6g,%s\n" % r)
    comm.Barrier()
    if ucx is not None:  # the worker closes its listener and endpoint
        _ep.worker.close()


if __name__ == "__main__":
    main()

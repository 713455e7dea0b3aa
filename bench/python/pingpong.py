"""Python object ping-pong between 2 MPI processes (run by bench/python/run under mpiexec -n 2).

Cases: `array` - one NumPy array of the size; `many` - an object (dict of a list) of 128 KiB
NumPy arrays adding up to the size (one array of the size below 128 KiB).
Methods:
  raw            MPI Send/Recv of a preallocated byte buffer: the MPI roofline, no object at all
  pickle-inband  pickle.dumps(protocol=5) without buffer_callback, one message, Mprobe + Recv
  pkl5           mpi4py.util.pkl5: out-of-band buffers, N + 2 messages per object
  cdtypes        cdtypes.mpi: a head message (header, stream, buffers < 64 KiB) matched once,
                 plus one message of the larger buffers on a duplicated communicator
  cdtypes-ucx    cdtypes.ucx over libcdt's UCX transport (MPI only starts the processes and
                 passes the port); buffers >= 64 KiB zero-copy on both ends
                 with libcdt's lane off (CDT_UCX_LANE=off when its worker is made)
  cdtypes-ucx-lane  the same on a second worker and endpoint made with CDT_UCX_LANE=on: the
                 object's stream and its buffers through libcdt's lane (docs/TRANSPORT.md §10),
                 measured in the same run, interleaved with cdtypes-ucx per size; its metric
                 lane_share is the part of its objects that went through the lane (the worker's
                 lane_sent counter: 0 where an object fits one head message)
  raw-ucx        ucp_tag_send_nbx / ucp_tag_recv_nbx of a preallocated buffer on the same UCX
                 endpoint and worker as cdtypes-ucx: the UCX roofline
Latency is half the median round trip (the receiver sends the object it rebuilt back);
bandwidth is size / latency in MB/s (10^6 bytes). At the largest size, the receiving rank's
peak RSS above its resident size before the method ran (VmHWM reset through clear_refs) is
recorded as metric peak_rss_bytes.
"""
import argparse
import ctypes
import os
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
    if case == "array" or size < CHUNK:
        return np.ones(size, dtype=np.uint8) if case == "array" else {"arrays": [np.ones(size, dtype=np.uint8)]}
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
    "pkl5": (lambda o, d, t: pcomm.send(o, d, t), lambda s, t: pcomm.recv(None, s, t)),
    "cdtypes": (lambda o, d, t: cmpi.send(o, d, t), lambda s, t: cmpi.recv(s, t)),
}


def ucx_endpoint(lane):
    """Rank 0 listens on loopback, rank 1 connects; the port travels over MPI. `lane`: the
    value of CDT_UCX_LANE while the endpoint's worker is made (read there)."""
    before = os.environ.get("CDT_UCX_LANE")
    os.environ["CDT_UCX_LANE"] = lane
    try:
        return _ucx_endpoint()
    finally:
        if before is None:
            del os.environ["CDT_UCX_LANE"]
        else:
            os.environ["CDT_UCX_LANE"] = before


def _ucx_endpoint():
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


class RawUcx:
    """ucp_tag_send_nbx / ucp_tag_recv_nbx of a contiguous buffer on the transport's own UCX
    worker and endpoint (tags in a range the cdtypes receives of this benchmark never post)."""

    TAG = 1 << 62

    def __init__(self, ep):
        from cdtypes import _lib

        self.ucp = ucp = ctypes.CDLL("libucp.so.0")
        for name, res, args in (
            ("ucp_tag_send_nbx", ctypes.c_void_p, [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_void_p]),
            ("ucp_tag_recv_nbx", ctypes.c_void_p, [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p]),
            ("ucp_worker_progress", ctypes.c_uint, [ctypes.c_void_p]),
            ("ucp_request_check_status", ctypes.c_int, [ctypes.c_void_p]),
            ("ucp_request_free", None, [ctypes.c_void_p]),
        ):
            f = getattr(ucp, name)
            f.restype, f.argtypes = res, args
        lib = _lib.load_ucx()  # the transport's library (the core has no cdt_ucx_ symbol)
        lib.cdt_ucx_worker_handle.restype = lib.cdt_ucx_ep_handle.restype = ctypes.c_void_p
        lib.cdt_ucx_worker_handle.argtypes = lib.cdt_ucx_ep_handle.argtypes = [ctypes.c_void_p]
        self.worker = lib.cdt_ucx_worker_handle(ep.worker._handle())
        self.ep = lib.cdt_ucx_ep_handle(ep._handle())
        self.param = ctypes.create_string_buffer(256)  # op_attr_mask 0: contiguous bytes
        self.buf = None

    def _wait(self, req):
        if req is None:
            return
        if req >= 2**64 - 4096:  # UCS_PTR_IS_ERR
            raise RuntimeError("raw UCX request failed")
        while self.ucp.ucp_request_check_status(req) == 1:  # UCS_INPROGRESS
            self.ucp.ucp_worker_progress(self.worker)
        self.ucp.ucp_request_free(req)

    def methods(self, size):
        buf = np.ones(size, dtype=np.uint8)
        addr, n, ucp, p = buf.ctypes.data, buf.nbytes, self.ucp, self.param

        def send(o, d, t):
            self._wait(ucp.ucp_tag_send_nbx(self.ep, addr, n, self.TAG + t, p))

        def recv(s, t):
            self._wait(ucp.ucp_tag_recv_nbx(self.worker, addr, n, self.TAG + t, 2**64 - 1, p))
            return buf

        return send, recv


if ucx is not None:
    _ep, _listener = ucx_endpoint("off")
    _lane_ep, _lane_listener = ucx_endpoint("on")
    _raw_ucx = RawUcx(_ep)
    METHODS["cdtypes-ucx"] = (lambda o, d, t: _ep.send(o, t), lambda s, t: _ep.recv(t))
    METHODS["cdtypes-ucx-lane"] = (lambda o, d, t: _lane_ep.send(o, t),
                                   lambda s, t: _lane_ep.recv(t))
    METHODS["raw-ucx"] = None


def rss_reset():
    """Reset the peak RSS (VmHWM) to the current RSS; returns the current RSS in bytes."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return rss("VmRSS")


def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def lane_sent():
    """Objects the lane endpoint's worker packed into its lane so far (0 without UCX)."""
    if ucx is None:
        return 0
    _lane_ep.worker.progress()  # a send's end is counted by the progress after it
    return _lane_ep.worker.stats()["lane_sent"]


def lane_ratio(line):
    """The lane's gain of a table line: cdtypes-ucx-lane's MB/s over cdtypes-ucx's."""
    if "cdtypes-ucx-lane" not in line or "cdtypes-ucx" not in line:
        return ""
    return "   lane x%.2f (%.0f%%)" % (line["cdtypes-ucx-lane"][1] / line["cdtypes-ucx"][1],
                                     100 * line.get("lane_share", 0))


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
    ap.add_argument("--smoke", action="store_true",
                    help="two tiny sizes, one round each: checks that every method runs")
    ap.add_argument("--suffix", default="",
                    help="appended to every method's name (a second set: --suffix=-fifo)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--sizes", help="comma-separated sizes in bytes (default: the run's list)")
    ap.add_argument("--methods", help="comma-separated methods (default: all)")
    ap.add_argument("--cases", help="comma-separated cases: array, many (default: both)")
    args = ap.parse_args()
    if args.smoke:
        sizes = [KiB, 256 * KiB]
        target, max_iters = 0, 1
    elif args.quick:
        sizes = [1, KiB, 16 * KiB, 256 * KiB, 4 * KiB * KiB, 64 * KiB * KiB]
        target, max_iters = 0.05, 200
    else:
        sizes = [1 << s for s in range(0, 27, 2)]  # 1 B .. 64 MiB, x4
        target, max_iters = 0.3, 2000
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    if args.methods:
        unknown = set(args.methods.split(",")) - set(METHODS)
        if unknown:
            sys.exit("pingpong.py: unknown method(s) %s (have: %s)" % (
                ",".join(sorted(unknown)), ",".join(METHODS)))
        for m in list(METHODS):
            if m not in args.methods.split(","):
                del METHODS[m]
    cases = args.cases.split(",") if args.cases else ["array", "many"]
    rows = []
    out = open(args.csv, "w") if rank == 0 else None  # written row by row: a stopped run keeps its rows
    if out is not None:
        out.write("case,method,size_bytes,metric,value,unit\n")
    for case in cases:
        if rank == 0:
            print("\n# case %s (%s)" % (case, "one NumPy array" if case == "array"
                                        else "128 KiB NumPy arrays adding up to the size"))
            print("%-12s" % "# Size" + "".join("%16s" % (m + args.suffix) for m in METHODS)
                  + "   (latency us | MB/s%s)" % (
                      "; lane: cdtypes-ucx-lane / cdtypes-ucx in MB/s, share of its objects in"
                      " the lane" if "cdtypes-ucx-lane" in METHODS and "cdtypes-ucx" in METHODS
                      else ""))
        for size in sizes:
            line = {}
            for method, fns in METHODS.items():
                if fns is None:
                    send, recv = (_raw_ucx.methods(size) if method == "raw-ucx"
                                  else raw_methods(size))
                else:
                    send, recv = fns
                obj = make(case, size) if fns is not None else None
                base = rss_reset() if size == sizes[-1] else 0
                lane0 = lane_sent()
                rounds = 1 if args.smoke else 2
                pingpong(send, recv, obj, rounds)  # warm up (allocations, connections)
                t = pingpong(send, recv, obj, rounds)
                iters = int(min(max_iters, max(rounds if args.smoke else 5,
                                               target / max(t * 2, 1e-9))))
                iters = comm.bcast(iters, root=0)
                lat = pingpong(send, recv, obj, iters)
                nbytes = obj_bytes(case, size)
                line[method] = (lat * 1e6, nbytes / lat / 1e6)
                label = method + args.suffix
                rows.append((case, label, nbytes, "latency_us", lat * 1e6, "us"))
                rows.append((case, label, nbytes, "bandwidth_mbs", nbytes / lat / 1e6, "MB/s"))
                if method == "cdtypes-ucx-lane":
                    share = (lane_sent() - lane0) / (2 * rounds + iters)
                    rows.append((case, label, nbytes, "lane_share", share, "objects"))
                    line["lane_share"] = share
                if size == sizes[-1]:
                    peak = comm.bcast(rss("VmHWM") - base if rank == 1 else None, root=1)
                    rows.append((case, label, nbytes, "peak_rss_bytes", peak, "B"))
                    line[method] += (peak,)
            if rank == 0:
                for r in rows:
                    out.write("%s,%s,%d,%s,%.6g,%s\n" % r)
                out.flush()
                rows = []
                print("%-12d" % obj_bytes(case, size)
                      + "".join("%9.1f|%6.0f" % line[m][:2] for m in METHODS)
                      + lane_ratio(line))
                if size == sizes[-1]:
                    print("%-12s" % "# peak RSS"
                          + "".join("%13.1f MiB" % (line[m][2] / 2**20) for m in METHODS)
                          + "   (receiver, above its RSS before the method)")
                sys.stdout.flush()
    if out is not None:
        out.close()
    comm.Barrier()
    if ucx is not None:  # the worker closes its listener and endpoint
        _ep.worker.close()
        _lane_ep.worker.close()


if __name__ == "__main__":
    main()

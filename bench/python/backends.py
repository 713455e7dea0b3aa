"""The cost of a cdtypes backend, in one process (no transport, no second process to schedule).

Per object {"a": one NumPy uint8 array of the size}:
  dumps+loads   cdtypes.dumps(obj).tobytes(), then cdtypes.loads of those bytes
  mpi-path      what cdtypes.mpi does around the messages: mpi_pack, mpi_unpack of the head,
                the separate parts copied to their destinations (the transfer), finish, unpickle
  pickle        pickle.dumps(protocol 5, in-band) + pickle.loads, for scale
Median time of one object over repetitions, in us.

  python3 bench/python/backends.py [--quick] [--csv FILE]  (CSV columns as python.csv, the case
  naming interpreter/backend) compares every backend and interpreter
  (it starts one process per interpreter and backend: CPython with c and cffi, and pypy3 with
  cffi when present; PYPY= leaves PyPy out)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

KiB = 1024


def measure(sizes, target):
    import pickle

    import numpy as np

    import cdtypes
    from cdtypes import _backend, _core

    b = _backend.impl

    def dumps_loads(obj):
        with cdtypes.dumps(obj) as f:
            data = f.tobytes()
        return cdtypes.loads(data)

    def mpi_path(obj):
        frame, head, parts, _ = b.mpi_pack(obj, 7, 64 * KiB)
        inc, _, dests, _ = b.mpi_unpack(head, None, -1, -1)
        for d, p in zip(dests, parts):
            memoryview(d)[:] = p
        stream, buffers = inc.finish()
        frame.close()
        return _core._unpickle(stream, buffers)

    def pickle_inband(obj):
        return pickle.loads(pickle.dumps(obj, protocol=5))

    out = []
    for size in sizes:
        obj = {"a": np.ones(size, dtype=np.uint8)}
        for method, fn in (("dumps+loads", dumps_loads), ("mpi-path", mpi_path),
                           ("pickle", pickle_inband)):
            for _ in range(20):  # warm up (the JIT on PyPy, the buffer cache)
                assert fn(obj)["a"].nbytes == size
            times = []
            end = time.perf_counter() + target
            while len(times) < 5 or (time.perf_counter() < end and len(times) < 2000):
                t0 = time.perf_counter()
                fn(obj)
                times.append(time.perf_counter() - t0)
            times.sort()
            out.append((method, size, times[len(times) // 2] * 1e6))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--csv")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [64 * KiB, KiB * KiB, 16 * KiB * KiB] if args.quick else \
        [KiB, 16 * KiB, 64 * KiB, 256 * KiB, KiB * KiB, 4 * KiB * KiB, 16 * KiB * KiB, 64 * KiB * KiB]
    target = 0.2 if args.quick else 1.0
    if args.child:
        json.dump(measure(sizes, target), sys.stdout)
        return
    runs = [("python3", "c"), ("python3", "cffi")]
    pypy = os.environ.get("PYPY", "pypy3")
    if pypy and shutil.which(pypy):
        runs.append((pypy, "cffi"))
    cols, res = [], {}
    for interp, backend in runs:
        env = dict(os.environ, CDTYPES_BACKEND=backend)
        argv = [interp, os.path.abspath(__file__), "--child"] + (["--quick"] if args.quick else [])
        got = json.loads(subprocess.run(argv, env=env, check=True, stdout=subprocess.PIPE).stdout)
        label = "%s/%s" % (os.path.basename(interp), backend)
        cols.append(label)
        for method, size, us in got:
            res[(method, size, label)] = us
    print("# median us per object, one process; columns: interpreter/backend")
    for method in ("dumps+loads", "mpi-path", "pickle"):
        print("\n# %s" % method)
        print("%-12s" % "# Size" + "".join("%18s" % c for c in cols)
              + ("   cffi/c" if "python3/c" in cols else ""))
        for size in sizes:
            row = [res[(method, size, c)] for c in cols]
            ratio = ("   %6.2f" % (res[(method, size, "python3/cffi")] / res[(method, size, "python3/c")])
                     if "python3/c" in cols else "")
            print("%-12d" % size + "".join("%18.1f" % v for v in row) + ratio)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("case,method,size_bytes,metric,value,unit\n")
            for (method, size, label), us in sorted(res.items()):
                f.write("%s,%s,%d,latency_us,%.6g,us\n" % (label, method, size, us))


if __name__ == "__main__":
    main()

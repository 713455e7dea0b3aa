"""The Python benchmarks of bench/run in their smoke mode (two tiny sizes, one round each,
nothing timed is judged): every method of each still runs on this interpreter and backend, so
that no benchmark breaks unnoticed. bench/run python measures libcdt's default UCX mode and,
as a second set, the FIFO mode (methods named -fifo)."""
import csv
import os
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def smoke(name, tmp_path):
    env = dict(os.environ, PYTHON=sys.executable, BENCH_SMOKE_DIR=str(tmp_path))
    r = subprocess.run([os.path.join(ROOT, "bench", "run"), name, "--smoke"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "bench/run %s --smoke failed:\n%s\n%s" % (name, r.stdout, r.stderr)
    (table,) = [p for p in tmp_path.iterdir() if p.suffix == ".csv"]
    with open(table) as f:
        return list(csv.DictReader(f))


def test_bench_python_smoke(tmp_path):
    rows = smoke("python", tmp_path)
    methods = {row["method"] for row in rows}
    want = {"raw", "pickle-inband", "pkl5", "cdtypes"}
    try:
        import cdtypes.ucx  # noqa: F401
        want |= {"cdtypes-ucx", "raw-ucx", "cdtypes-ucx-fifo", "raw-ucx-fifo"}
    except ImportError:
        pass
    assert want <= methods, methods
    assert {row["case"] for row in rows} == {"array", "many"}


def test_bench_pycoll_smoke(tmp_path):
    rows = smoke("pycoll", tmp_path)
    assert {row["method"] for row in rows} == {"cdtypes", "cdtypes-ring", "pkl5", "buffer"}
    assert {row["ranks"] for row in rows} == {"2", "3"}
    assert {row["op"] for row in rows} == {"bcast", "gather", "scatter", "allgather", "alltoall"}


def test_bench_framework_smoke(tmp_path):
    """mpi4py.futures' MPICommExecutor with use_pkl5, on pkl5's classes and on cdtypes.mpi's
    (bench/run framework --smoke)"""
    rows = smoke("framework", tmp_path)
    assert {(row["impl"], row["part"]) for row in rows} == {
        (impl, part) for impl in ("pkl5", "cdtypes") for part in ("arrays", "small")}

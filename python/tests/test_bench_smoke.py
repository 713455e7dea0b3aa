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


def test_bench_inline_wait_smoke(tmp_path):
    """bench/python/inline_wait.py --smoke (the polled wait of in-line receives beside a
    blocking one and pkl5; run by hand, results in bench/results/inline_wait.md)"""
    from test_mpi import mpi_launcher
    out = tmp_path / "inline_wait.csv"
    r = subprocess.run(mpi_launcher() + ["-n", "2", sys.executable,
                                         os.path.join(ROOT, "bench", "python", "inline_wait.py"),
                                         "--smoke", "-o", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, "inline_wait.py --smoke failed:\n%s\n%s" % (r.stdout, r.stderr)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert {(row["impl"], row["part"]) for row in rows} == {
        (impl, part) for impl in ("pkl5 (Split)", "cdtypes in line (Split)",
                                  "cdtypes attached (Dup)")
        for part in ("small", "large", "late", "late cpu")}


def test_bench_bcast_agreement_smoke(tmp_path):
    """bench/python/bcast_agreement.py --smoke (the 2-rank bcast of a small dict: pkl5 beside
    cdtypes with the agreement's exchange answered early and late, with the MPI calls from C
    off for the communicator, the root on the general path, with MPI_Allreduce, and with
    none; run by hand, results in bench/results/pycoll_findings.md)"""
    from test_mpi import mpi_launcher
    out = tmp_path / "bcast_agreement.csv"
    r = subprocess.run(mpi_launcher() + ["-n", "2", sys.executable,
                                         os.path.join(ROOT, "bench", "python",
                                                      "bcast_agreement.py"),
                                         "--smoke", "-o", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, "bcast_agreement.py --smoke failed:\n%s\n%s" % (r.stdout, r.stderr)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert {row["method"] for row in rows if row["part"] == "bcast"} == {
        "pkl5", "cdtypes", "cdtypes-noc", "cdtypes-general", "cdtypes-late",
        "cdtypes-allreduce", "cdtypes-none"}
    assert any(row["part"] == "chain" and row["method"] == "one call" for row in rows)

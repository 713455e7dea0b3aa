"""cdtypes.mpi between two MPI processes (mpiexec -n 2), one message per object."""
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")


def mpi_launcher():
    """mpiexec of the MPI library mpi4py was built against (asked in a child process, so
    this test process never initialises MPI)."""
    r = subprocess.run(
        [sys.executable, "-c", "from mpi4py import MPI; print(MPI.Get_library_version())"],
        capture_output=True, text=True, timeout=60,
    )
    if r.returncode != 0:
        pytest.skip("mpi4py does not load: %s" % r.stderr.strip()[-300:])
    if "Open MPI" in r.stdout:
        names, extra = ("mpiexec.openmpi", "mpiexec"), ["--allow-run-as-root", "--oversubscribe"]
    else:
        names, extra = ("mpiexec.mpich", "mpiexec"), []
    for name in names:
        path = shutil.which(name)
        if path:
            return [path] + extra
    pytest.skip("no mpiexec for %s" % r.stdout.strip()[:40])


def test_mpi_one_message_round_trips():
    script = os.path.join(os.path.dirname(__file__), "mpi_roundtrip.py")
    r = subprocess.run(
        mpi_launcher() + ["-n", "2", sys.executable, script],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert "ok" in r.stdout


@pytest.mark.parametrize("nranks,seed", [(2, 1), (3, 2)])
def test_mpi_hostile_rank(nranks, seed):
    """A rank that writes heads and parts messages by hand (truncated, extended, wrong ids and
    counts, parts that never come or come late): each receive gives the object meant or a clear
    error, in bounded time, and no part reaches another object (mpi_hostile.py)."""
    script = os.path.join(os.path.dirname(__file__), "mpi_hostile.py")
    r = subprocess.run(
        mpi_launcher() + ["-n", str(nranks), sys.executable, script, str(seed)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert ": ok" in r.stdout

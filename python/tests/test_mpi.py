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


# mpi4py built against Open MPI, beside the MPICH one the interpreter imports (scripts/setup
# builds it once per machine into the folder scripts/mpi4py_openmpi_dir.py names, in the user's
# cache): the scripts below also run under Open MPI with it first on PYTHONPATH
OPENMPI_MPI4PY_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "scripts",
                                  "mpi4py_openmpi_dir.py")


def openmpi():
    """(launcher, environment) of Open MPI with its mpi4py, or skip"""
    r = subprocess.run([sys.executable, OPENMPI_MPI4PY_DIR], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        pytest.skip("no folder for an Open MPI mpi4py here: %s" % r.stderr[-300:])
    path = r.stdout.strip()
    launcher = shutil.which("mpiexec.openmpi")
    if not os.path.isdir(os.path.join(path, "mpi4py")) or launcher is None:
        pytest.skip("no mpi4py for Open MPI in %s (scripts/setup) or no mpiexec.openmpi" % path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [path] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    r = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; "
                        "print(MPI.Get_library_version())"],
                       capture_output=True, text=True, timeout=60, env=env)
    if r.returncode != 0 or "Open MPI" not in r.stdout:
        pytest.skip("the Open MPI mpi4py in %s does not load here: %s" % (path, r.stderr[-300:]))
    return [launcher, "--allow-run-as-root", "--oversubscribe"], env


@pytest.mark.parametrize("script,nranks", [
    ("mpi_hostile.py", 2), ("mpi_hostile.py", 3), ("mpi_coll.py", 2), ("mpi_coll.py", 3),
    ("mpi_pkl5.py", 2), ("mpi_pkl5.py", 3)])
def test_mpi_under_openmpi(script, nranks):
    """The drains, refused heads and collectives under Open MPI 4.1, whose single-copy
    shared-memory path writes a whole message into the buffer of a zero-byte receive: every
    discard receives a small message whole and a large one into no buffer (a zero-byte receive
    into a 1-byte buffer overflowed the heap here)."""
    launcher, env = openmpi()
    args = [os.path.join(os.path.dirname(__file__), script)]
    if script == "mpi_hostile.py":
        args.append(str(nranks))
    r = subprocess.run(launcher + ["-n", str(nranks), sys.executable] + args,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert r.stdout.count(": ok") >= 1, r.stdout + r.stderr

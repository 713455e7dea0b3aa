"""mpi4py's own suite of mpi4py.util.pkl5 (vendored in mpi4py_suite/, its import line pointed
at cdtypes.mpi) against cdtypes.mpi's pkl5 API, under mpiexec at 1, 2 and 3 ranks."""
import os
import subprocess
import sys

import pytest

from test_mpi import mpi_launcher

pytest.importorskip("mpi4py")


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_mpi4py_pkl5_suite(nranks):
    script = os.path.join(os.path.dirname(__file__), "mpi4py_suite", "run_pkl5.py")
    r = subprocess.run(
        mpi_launcher() + ["-n", str(nranks), sys.executable, script],
        capture_output=True, text=True, timeout=180,
    )
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert r.stdout.count(": ok") == nranks, r.stdout + r.stderr


@pytest.mark.parametrize("nranks", [2, 3])
def test_pkl5_api_large_objects(nranks):
    """What the pkl5 suite does not reach (mpi_pkl5.py): objects with parts messages in every
    send mode, mprobe/irecv/testall/waitall, every collective on intra- and intercommunicators,
    attached or not, statuses, and collectives leaving a user's ANY_TAG message alone."""
    script = os.path.join(os.path.dirname(__file__), "mpi_pkl5.py")
    r = subprocess.run(
        mpi_launcher() + ["-n", str(nranks), sys.executable, script],
        capture_output=True, text=True, timeout=180,
    )
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert r.stdout.count(": ok") == nranks, r.stdout + r.stderr


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_collectives_fail_on_every_rank(nranks):
    """The collectives when one rank fails (mpi_coll.py): a receive over max_bytes /
    max_regions, an object outside the allow-list, the root's object that does not pickle, a
    scatter or alltoall list of the wrong length, a head that is not a frame. The failed rank
    raises its error, every other rank PeerError, none hangs, and the next collective works;
    bcast's tree from every root and allgather's ring, on intra- and intercommunicators."""
    script = os.path.join(os.path.dirname(__file__), "mpi_coll.py")
    r = subprocess.run(
        mpi_launcher() + ["-n", str(nranks), sys.executable, script],
        capture_output=True, text=True, timeout=180,
    )
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert r.stdout.count(": ok") == nranks, r.stdout + r.stderr


@pytest.mark.parametrize("nranks", [2, 3])
def test_pkl5_api_raises_what_pkl5_raises(nranks):
    """An object whose __setstate__ raises (mpi_exceptions.py): every receive of the pkl5 API
    raises what mpi4py.util.pkl5 raises (both run side by side), with the original traceback;
    cdtypes.mpi.recv chains it to UnpicklingFailed; the collectives raise it where it was
    rebuilt; cdtypes' errors survive pickling."""
    script = os.path.join(os.path.dirname(__file__), "mpi_exceptions.py")
    r = subprocess.run(
        mpi_launcher() + ["-n", str(nranks), sys.executable, script],
        capture_output=True, text=True, timeout=180,
    )
    assert r.returncode == 0, "mpiexec failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert r.stdout.count(": ok") == nranks, r.stdout + r.stderr

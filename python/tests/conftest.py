import contextlib
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# mpi4py's pkl5 suite runs under mpiexec (test_pkl5_suite.py), never in this process, which
# must not initialise MPI
collect_ignore = ["mpi4py_suite"]


@pytest.fixture
def repo_root():
    return REPO


@contextlib.contextmanager
def echo_peer(env=None, **connect_args):
    """An endpoint connected to ucx_peer.py (an echo in its own process, which sends every
    object back with tag + 1); `env`: extra environment of the peer; `connect_args`: of
    ucx.connect. The peer is told to stop, and must exit cleanly, when the block ends."""
    from cdtypes import ucx

    script = os.path.join(os.path.dirname(__file__), "ucx_peer.py")
    peer = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))
    try:
        port = int(peer.stdout.readline())
        with ucx.connect("127.0.0.1", port, timeout=30, **connect_args) as ep:
            yield ep
            ep.send("stop", tag=0)
        assert peer.wait(timeout=30) == 0
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()

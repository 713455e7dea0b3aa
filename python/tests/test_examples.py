"""The Python examples (examples/python) run as their docstrings say and end well."""
import os
import subprocess
import sys

import pytest

from test_mpi import mpi_launcher

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, "failed:\n%s\n%s" % (r.stdout, r.stderr)
    return r.stdout


def test_example_single_process():
    assert "decoded:" in run([sys.executable, os.path.join(EXAMPLES, "example.py")])


def test_example_two_ranks():
    pytest.importorskip("mpi4py")
    run(mpi_launcher() + ["-n", "2", sys.executable, os.path.join(EXAMPLES, "example.py")])


@pytest.mark.parametrize("nranks", [1, 3])
def test_collectives_example(nranks):
    pytest.importorskip("mpi4py")
    out = run(mpi_launcher() + ["-n", str(nranks), sys.executable,
                                os.path.join(EXAMPLES, "collectives.py")])
    assert out.strip().endswith("ok"), out

"""python/README.md (the package's page on PyPI) as a user reads it: its first programs run as
written, and it describes the MPI protocol of docs/PYTHON.md (a head and one message of the
large buffers), not the older one (one message per large buffer)."""
import os
import re
import subprocess
import sys

import pytest

from test_mpi import mpi_launcher

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def blocks():
    with open(README) as f:
        text = f.read()
    return text, re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_names_the_current_mpi_protocol():
    text, _ = blocks()
    assert "per large buffer" not in text
    assert "at most two MPI messages" in text


def test_readme_has_a_first_program_for_each_module():
    _, code = blocks()
    assert any("cdtypes.dumps" in c and "cdtypes.loads" in c for c in code)
    assert any("from cdtypes import ucx" in c for c in code)
    assert any("from cdtypes import mpi" in c for c in code)


def test_readme_frames_program_runs(tmp_path):
    pytest.importorskip("numpy")
    _, code = blocks()
    prog = next(c for c in code if "cdtypes.dumps" in c)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_readme_mpi_program_runs(tmp_path):
    pytest.importorskip("numpy")
    pytest.importorskip("mpi4py")
    _, code = blocks()
    prog = tmp_path / "prog.py"
    prog.write_text(next(c for c in code if "from cdtypes import mpi" in c)
                    + "\nif MPI.COMM_WORLD.Get_rank() == 1:\n    assert obj['x'][-1] == 10**6 - 1\n")
    r = subprocess.run(mpi_launcher() + ["-n", "2", sys.executable, str(prog)],
                       capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr

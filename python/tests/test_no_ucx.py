"""`import cdtypes` and cdtypes.mpi load libcdt's core only: no UCX library and no UCX transport
library is mapped into the process until cdtypes.ucx is imported (issue 28). An MPI library
that uses a UCX of its own (MPICH's ch4:ucx, Open MPI's pml ucx) then never meets a second
copy brought in by cdtypes. Each check runs in a fresh interpreter (this process has imported
cdtypes.ucx through other tests) with the backend under test, and reads /proc/self/maps."""
import json
import os
import subprocess
import sys

import pytest

from cdtypes import _backend

if not os.path.exists("/proc/self/maps"):
    pytest.skip("no /proc/self/maps", allow_module_level=True)

# the mapped files of UCX (libucp, libuct, libucs, libucm and UCX's transport modules) and of
# libcdt's transport library
MAPPED = r"""
import json, os
def ucx_files():
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split(None, 5)[5].strip() if len(line.split(None, 5)) == 6 else ""
            base = os.path.basename(path)
            if base.startswith(("libucp", "libuct", "libucs", "libucm", "libcdtypes-ucx")):
                found.add(path)
    return sorted(found)
"""


def run(body, **extra_env):
    """Run `body` (after MAPPED) in a fresh interpreter; the JSON it prints last."""
    env = dict(os.environ, CDTYPES_BACKEND=_backend.name, **extra_env)
    done = subprocess.run([sys.executable, "-c", MAPPED + body], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_cdtypes_maps_no_ucx():
    mapped = run("""
import numpy, cdtypes
obj = {"a": numpy.arange(100000, dtype="f8"), "s": "text"}
back = cdtypes.loads(cdtypes.dumps(obj).tobytes())
assert (back["a"] == obj["a"]).all() and back["s"] == "text"
print(json.dumps(ucx_files()))
""")
    assert mapped == [], "import cdtypes mapped UCX: %s" % mapped


def test_cdtypes_mpi_adds_no_ucx():
    pytest.importorskip("mpi4py")
    # mpi4py's MPI library may load a UCX itself: cdtypes.mpi must add nothing to what it maps
    mapped = run("""
from mpi4py import MPI
before = ucx_files()
import numpy, cdtypes, cdtypes.mpi
obj = {"a": numpy.arange(100000, dtype="f8")}
req = cdtypes.mpi.isend(obj, 0, tag=5)
back = cdtypes.mpi.recv(0, tag=5)
req.wait()
assert (back["a"] == obj["a"]).all()
print(json.dumps([before, ucx_files()]))
""")
    before, after = mapped
    added = sorted(set(after) - set(before))
    assert added == [], "cdtypes.mpi mapped UCX files that MPI did not: %s" % added


def test_import_cdtypes_ucx_maps_the_transport():
    # the same probe sees the transport and UCX once cdtypes.ucx is imported
    if not _backend.HAVE_UCX:
        pytest.skip("libcdt built without the UCX transport")
    mapped = run("""
import cdtypes, cdtypes.ucx
print(json.dumps(ucx_files()))
""")
    bases = {os.path.basename(p) for p in mapped}
    assert any(b.startswith("libcdtypes-ucx") for b in bases), mapped
    assert any(b.startswith("libucp") for b in bases), mapped


@pytest.mark.parametrize("case", ["missing", "not_a_library"])
def test_unloadable_transport_is_an_import_error(tmp_path, case):
    # cdtypes itself still works; cdtypes.ucx says which file it could not load, and why
    path = tmp_path / "libcdtypes-ucx.so"
    if case == "not_a_library":
        path.write_bytes(b"not an ELF file")
    out = run("""
import cdtypes
assert cdtypes.loads(cdtypes.dumps([1, 2]).tobytes()) == [1, 2]
try:
    import cdtypes.ucx
except ImportError as e:
    print(json.dumps(str(e)))
else:
    print(json.dumps(None))
""", CDTYPES_LIBCDT_UCX=str(path))
    assert out is not None, "import cdtypes.ucx succeeded with %s" % case
    assert str(path) in out
    want = "built without the UCX transport" if case == "missing" else "cannot be loaded"
    assert want in out, out

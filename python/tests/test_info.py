"""python -m cdtypes --info: version, backend, the libcdt and UCX files a process loaded."""

import os
import subprocess
import sys

import cdtypes
from cdtypes import __main__ as cli
from cdtypes import _backend


def run_info():
    env = dict(os.environ, CDTYPES_BACKEND=_backend.name)
    return subprocess.run([sys.executable, "-m", "cdtypes", "--info"], capture_output=True,
                          text=True, env=env, timeout=60)


def test_info_names_version_backend_and_files():
    done = run_info()
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "cdtypes %s" % cdtypes.__version__
    assert lines[1] == "backend: %s" % _backend.name
    assert lines[2].startswith("libcdt: %s (" % cdtypes.__version__)
    libcdt = lines[2].split("(", 1)[1].rstrip(")")
    assert os.path.isfile(libcdt)
    # the library of this installation, not one from elsewhere
    assert os.path.dirname(libcdt) == os.path.dirname(os.path.realpath(cdtypes.__file__)) or \
        os.environ.get("CDTYPES_LIBCDT")
    if _backend.HAVE_UCX:
        assert any(line.startswith("transport: UCX ") for line in lines)
        # the lane (docs/TRANSPORT.md §10): on by default, and how to turn it off
        lane = [line for line in lines if line.startswith("lane: ")]
        assert len(lane) == 1, done.stdout
        if os.environ.get("CDT_UCX_LANE", "") in ("", "on"):
            assert lane[0].startswith("lane: on (the default"), done.stdout
        else:
            assert lane[0].startswith("lane: off"), done.stdout
        ucp = [line for line in lines if line.startswith("libucp: ")]
        assert len(ucp) == 1 and "," not in ucp[0], done.stdout  # one copy of UCX


def test_info_says_whether_bcast_calls_mpi_from_c():
    """docs/MPI.md §14.5.1: on where mpi4py loads (the C extension, and the cffi backend on
    PyPy or with CDTYPES_MPI_C=1), off with the reason under CDTYPES_MPI_C=0, for the cffi
    backend on CPython by default, and for a misspelt value; MPI is not initialised for it"""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        mpi4py = None
    # off by default for the cffi backend on CPython (docs/MPI.md §14.5.1), on with 1
    cffi_cpython = _backend.name == "cffi" and sys.implementation.name == "cpython"
    default = "off (the cffi backend on CPython" if cffi_cpython else "on ("
    for value, want in (("", default if mpi4py else "off (no mpi4py"),
                        ("1", "on (" if mpi4py else "off (no mpi4py"),
                        ("0", "off (CDTYPES_MPI_C=0)" if mpi4py else "off (no mpi4py"),
                        ("yes", "off (CDTYPES_MPI_C='yes' is neither" if mpi4py
                         else "off (no mpi4py")):
        env = dict(os.environ, CDTYPES_BACKEND=_backend.name, CDTYPES_MPI_C=value)
        done = subprocess.run([sys.executable, "-m", "cdtypes", "--info"], capture_output=True,
                              text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        line = [x for x in done.stdout.splitlines() if x.startswith("mpi bcast C calls: ")]
        assert len(line) == 1 and line[0].startswith("mpi bcast C calls: " + want), done.stdout


def test_two_copies_of_ucx_are_reported(monkeypatch, capsys):
    maps = [
        "7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libucp.so.0.0.0",
        "7f20-7f30 r-xp 00000000 08:01 2 /opt/wheel/libucx/lib/libucp.so.0",
        "7f40-7f50 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libucs.so.0.0.0",
        "7f60-7f70 rw-p 00000000 00:00 0 [heap]",
    ]
    found = cli._mapped_libraries(["libucp", "libucs"], maps)
    assert len(found["libucp"]) == 2 and len(found["libucs"]) == 1
    monkeypatch.setattr(cli, "_mapped_libraries", lambda names: found)
    assert cli.info() == 1
    assert "2 copies of libucp in one process" in capsys.readouterr().out


def test_info_without_the_ucx_extra(tmp_path):
    """A wheel installed without the ``ucx`` extra: the transport library is there but cannot
    load (its UCX is missing). --info reports it and how to get the transport, exit status 0
    (it raised ImportError with a traceback)."""
    broken = tmp_path / "libcdtypes-ucx.so"
    broken.write_bytes(b"not a shared library")  # loads like a transport whose UCX is missing
    env = dict(os.environ, CDTYPES_BACKEND=_backend.name, CDTYPES_LIBCDT_UCX=str(broken))
    done = subprocess.run([sys.executable, "-m", "cdtypes", "--info"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "cdtypes %s" % cdtypes.__version__
    assert any(line.startswith("transport: not loaded (") for line in lines), done.stdout
    assert "pip install 'cdtypes[ucx]'" in done.stdout
    assert "UCX files: none loaded" in done.stdout


def test_without_info_prints_usage():
    done = subprocess.run([sys.executable, "-m", "cdtypes"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "--info" in done.stdout

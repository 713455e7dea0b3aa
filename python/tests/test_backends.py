"""The two backends (the C extension and cffi) behind one Python layer: selection, agreement on
the bytes of a frame, and the cffi module's C source."""
import os
import shutil
import subprocess
import sys

import pytest

import cdtypes
from cdtypes import _backend

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_FRAME = (
    "import sys, numpy as np, cdtypes\n"
    # 'big': a bytes payload the pickler hands over by reference, sent in pieces (cdt_sobj's
    # inband_parts) by both backends: the frames must be the same as of the joined stream
    "obj = {'a': np.arange(1000.0), 'b': [np.ones(70000, np.uint8), b'x' * 100], 's': 'text',\n"
    "       'big': bytes(range(256)) * 800}\n"
    "with cdtypes.dumps(obj) as f:\n"
    "    sys.stdout.buffer.write(f.tobytes())\n"
)


def run_with(backend, code, **kw):
    env = dict(os.environ, CDTYPES_BACKEND=backend)
    return subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=HERE, **kw)


def test_backend_names():
    assert cdtypes.backend in _backend.BACKENDS
    assert _backend.DEFAULT == ("cffi" if sys.implementation.name == "pypy" else "c")
    assert _backend.impl.CALLS and _backend.impl.UCX_CALLS


def test_unknown_backend_is_an_import_error():
    r = run_with("fortran", "import cdtypes")
    assert r.returncode != 0
    assert b"ImportError" in r.stderr and b"'c', 'cffi'" in r.stderr


@pytest.mark.skipif(sys.implementation.name != "pypy", reason="the C extension exists on CPython")
def test_c_backend_on_pypy_says_why():
    r = run_with("c", "import cdtypes")
    assert r.returncode != 0 and b"CPython only" in r.stderr


CFFI_PIECES = (
    "import sys, cdtypes\n"
    "from cdtypes._cffi.send import _Out\n"
    "from cdtypes._cffi import receive\n"
    "obj = {'big': bytes(range(256)) * 4096, 'n': 1}\n"
    # the send: the pickler's pieces, the 1 MiB payload one of them (not joined); a small
    # object's stream joined as before
    "out = _Out(obj, 5)\n"
    "assert out.parts is not None and 2 <= len(out.parts) <= 64, len(out.parts or ())\n"
    "assert any(len(p) == 1 << 20 for p in out.parts)\n"
    "assert out.so.inband_nparts == len(out.parts) and out.so.inband_len > 1 << 20\n"
    "out.release()\n"
    "small = _Out({'n': 1}, 5)\n"
    "assert small.parts is None and type(small.stream) is bytes\n"
    "small.release()\n"
    # the receive: a large stream lands in a bytearray, which pickle reads as it is
    "f = cdtypes.dumps(obj).tobytes()\n"
    "s1, bufs = receive.decode(f)\n"
    "assert type(s1) is bytearray and len(s1) > 1 << 20 and not bufs\n"
    "ref = bytes(s1)\n"
    "assert cdtypes.loads(f) == obj\n"
    "small_stream, _ = receive.decode(cdtypes.dumps({'n': 1}).tobytes())\n"
    "assert type(small_stream) is bytes\n"
    # CPython: the last large stream is received into again once nothing else holds it;
    # never while something does
    "if hasattr(sys, 'getrefcount'):\n"
    "    s2, _ = receive.decode(f)\n"
    "    assert s2 is not s1 and s2 == s1\n"
    "    last = id(s2)\n"
    "    del s1, s2\n"
    "    s3, _ = receive.decode(f)\n"
    "    assert id(s3) == last and s3 == ref\n"
    "print('ok')\n"
)


def test_cffi_sends_pieces_and_receives_into_a_bytearray():
    """The cffi backend as the C extension: a large in-band payload is sent as the pickler's
    pieces (cdt_sobj's inband_parts) and a large stream received into a bytearray, reused on
    CPython once nothing holds it."""
    r = run_with("cffi", CFFI_PIECES)
    if r.returncode != 0 and b"cffi backend" in r.stderr and b"not" in r.stderr:
        pytest.skip("the cffi backend is not built here: %s" % r.stderr.decode()[-200:])
    assert r.returncode == 0 and r.stdout.strip() == b"ok", r.stderr.decode()


@pytest.mark.skipif(sys.implementation.name == "pypy", reason="PyPy has the cffi backend only")
def test_backends_make_the_same_frames_and_read_each_other():
    pytest.importorskip("numpy")
    frames = {}
    for b in _backend.BACKENDS:
        r = run_with(b, MAKE_FRAME)
        assert r.returncode == 0, r.stderr.decode()
        frames[b] = r.stdout
    assert frames["c"] == frames["cffi"]
    out = cdtypes.loads(frames["c" if cdtypes.backend == "cffi" else "cffi"])
    assert out["s"] == "text" and out["a"][999] == 999.0 and out["b"][0].sum() == 70000
    assert out["big"] == bytes(range(256)) * 800


def test_both_backends_call_the_same_functions():
    from cdtypes import _cffi_build

    if cdtypes.backend == "c":
        assert tuple(_backend.impl.CALLS) == _cffi_build.CORE_CALLS
        assert tuple(_backend.impl.UCX_CALLS) == _cffi_build.UCX_CALLS


def test_cffi_source_is_formatted():
    """The C part of the cffi module is kept as clang-format (the repository's style) writes it."""
    fmt = shutil.which("clang-format")
    style = os.path.join(HERE, "..", "..", ".clang-format")
    if fmt is None or not os.path.exists(style):
        pytest.skip("clang-format or the repository's .clang-format not found")
    from cdtypes import _cffi_build

    src = _cffi_build.source()
    r = subprocess.run([fmt, "--style=file:" + os.path.abspath(style), "--assume-filename=x.c"],
                       input=src.encode(), stdout=subprocess.PIPE, check=True)
    assert r.stdout.decode() == src


MPIC_BEFORE_SETUP = (
    "from cdtypes._backend import impl\n"
    "for call, args in ((impl.mpic_start, (0,)), (impl.mpic_isend, (bytearray(4), 0, 1, 0)),\n"
    "                   (impl.mpic_head, (impl.mpic_buffer(bytearray(8)), 0, 1, 0))):\n"
    "    try:\n"
    "        call(*args)\n"
    "    except RuntimeError as e:\n"
    "        assert 'not set up' in str(e), e\n"
    "    else:\n"
    "        raise AssertionError('%s ran before mpic_init' % call.__name__)\n"
    "a = __import__('array').array('i', [0] * 5)\n"
    "r = impl.mpic_root_end(0, 0, 0, impl.mpic_buffer(a), impl.mpic_buffer(a))\n"
    "assert r < 0 and r & 3 == 0, r\n"
    "print('ok')\n"
)


@pytest.mark.parametrize("backend", ["c", "cffi"])
def test_mpi_calls_from_c_before_setup_raise(backend):
    """docs/MPI.md §14.5.1: a backend's MPI call made before mpic_init resolved the entry
    points is a RuntimeError (the end calls: a negative code), not a call through a null
    pointer"""
    if backend == "cffi" and run_with("cffi", "import cdtypes").returncode != 0:
        pytest.skip("no cffi backend here")
    if backend == "c" and sys.implementation.name != "cpython":
        pytest.skip("the C extension is CPython's")
    r = run_with(backend, MPIC_BEFORE_SETUP, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == b"ok", r.stderr.decode()[-2000:]

"""The Julia checks must pass on the package and fail on deliberately broken copies."""
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

TOOLS = pathlib.Path(__file__).resolve().parent.parent
PKG = TOOLS.parent
ROOT = PKG.parent
sys.path.insert(0, str(TOOLS))

import check_abi  # noqa: E402
import check_syntax  # noqa: E402


def run(script, *args):
    return subprocess.run([sys.executable, str(TOOLS / script), *map(str, args)],
                          capture_output=True, text=True)


@pytest.fixture
def pkg_copy(tmp_path):
    dst = tmp_path / "jl"
    shutil.copytree(PKG / "src", dst / "src")
    shutil.copytree(PKG / "ext", dst / "ext")
    return dst


def edit(path, old, new, count=1):
    text = path.read_text()
    assert old in text, "fixture text not found: %r" % old
    path.write_text(text.replace(old, new, count))


# --- syntax ---------------------------------------------------------------------------------


def test_syntax_ok_on_the_package():
    r = run("check_syntax.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout


@pytest.mark.parametrize("old,new", [
    ("\nend\n", "\n\n"),                           # a block never closed
    ("function _handle(f::Frame)", "function _handle(f::Frame"),   # unbalanced parenthesis
    ("return (len = Int(len[])", "return (len = Int(len[]) ]"),
    ("if index < 0", "if index < 0)"),             # a stray closing parenthesis
])
def test_syntax_fails_on_a_broken_copy(pkg_copy, old, new):
    f = pkg_copy / "src" / "frame.jl"
    edit(f, old, new)
    r = run("check_syntax.py", f)
    assert r.returncode == 1, r.stdout
    assert re.search(r"frame\.jl:\d+:\d+: (syntax error|missing)", r.stdout)


def test_syntax_problems_api():
    assert check_syntax.problems(b"x = f(1, 2)\n") == []
    assert check_syntax.problems(b"x = f(1, 2\n")


# --- ABI ------------------------------------------------------------------------------------


def test_abi_ok_on_the_package():
    r = run("check_abi.py")
    assert r.returncode == 0, r.stdout + r.stderr
    n = int(re.search(r"(\d+) ccalls", r.stdout).group(1))
    assert n >= 40
    assert "11 mirrored structs" in r.stdout


BREAKS = [
    # (file, old, new, expected message)
    ("frame.jl", "cfn(:cdt_frame_iov_count)", "cfn(:cdt_frame_iov_counts)", "is not in bindings/abi.txt"),
    ("lib.jl", "ccall(cfn(:cdt_kind_size), Int64,", "ccall(cfn(:cdt_kind_size), Cint,", "returns cdt_count"),
    ("ucx.jl", "(Ptr{Cvoid}, Int64, Ref{Ptr{Cvoid}}),\n", "(Ptr{Cvoid}, Cint, Ref{Ptr{Cvoid}}),\n", "argument 2 is int64_t"),
    ("frame.jl", "cfn(:cdt_frame_region_count), Cint, (Ptr{Cvoid}, Ref{Int64}), _handle(f), n)",
     "cfn(:cdt_frame_region_count), Cint, (Ptr{Cvoid},), _handle(f))", "takes 2 arguments"),
    ("lib.jl", "    kind::Cint\nend", "    kind::Int64\nend", "CdtSobjBuffer.kind"),
    ("lib.jl", "    version::UInt32\n    flags::UInt32", "    flags::UInt32\n    version::UInt32", "fields"),
    ("lib.jl", "    zcopy_threshold::Int64\n    buffer_cache_bytes::Csize_t\n", "    zcopy_threshold::Int64\n", "CdtUcxWorkerParams fields"),
]


@pytest.mark.parametrize("fname,old,new,message", BREAKS)
def test_abi_fails_on_a_broken_copy(pkg_copy, fname, old, new, message):
    f = pkg_copy / "src" / fname
    edit(f, old, new)
    r = run("check_abi.py", pkg_copy / "src", pkg_copy / "ext")
    assert r.returncode == 1, r.stdout
    assert message in r.stdout, r.stdout


def fake_root(tmp_path):
    root = tmp_path / "repo"
    for rel in check_abi.HEADERS + ["bindings/abi.txt", "bindings/gen_abi.py"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, root / rel)
    return root


def test_abi_reads_the_headers_at_run_time(tmp_path):
    """A field added to a params struct in the C header is a mismatch of the Julia mirror."""
    root = fake_root(tmp_path)
    h = root / "libcdt/include/cdt_ucx.h"
    edit(h, "    size_t buffer_cache_bytes;\n", "    size_t buffer_cache_bytes;\n    int new_field;\n")
    r = run("check_abi.py", "--root", root)
    assert r.returncode == 1 and "CdtUcxWorkerParams fields" in r.stdout, r.stdout


def test_abi_header_change_of_a_function(tmp_path):
    """A parameter added in the header (abi.txt not regenerated yet) is caught from the header."""
    root = fake_root(tmp_path)
    h = root / "libcdt/include/cdt.h"
    edit(h, "CDT_API int cdt_frame_size(cdt_frame frame, cdt_count *bytes);",
         "CDT_API int cdt_frame_size(cdt_frame frame, cdt_count *bytes, int flags);")
    r = run("check_abi.py", "--root", root)
    assert r.returncode == 1 and "cdt_frame_size takes 3 arguments in the headers" in r.stdout, r.stdout


def test_abi_list_is_read_at_run_time(tmp_path):
    root = fake_root(tmp_path)
    abi = root / "bindings/abi.txt"
    edit(abi, "fn cdt_frame_free | int | cdt_frame frame\n", "")
    r = run("check_abi.py", "--root", root)
    assert r.returncode == 1 and "cdt_frame_free is not in bindings/abi.txt" in r.stdout, r.stdout


def test_abi_ccall_forms(tmp_path):
    src = tmp_path / "forms.jl"
    src.write_text(
        'a = ccall((:cdt_err_name, "libcdt"), Cstring, (Cint,), c)\n'
        "b = @ccall libcdt.cdt_kind_size(k::Cint)::Int64\n"
        "c = ccall(:cdt_version_number, Cuint, ())\n"
        "d = @ccall libcdt.cdt_kind_size(k::Int64)::Int64\n"
        "e = ccall(:strlen, Csize_t, (Cstring,), s)\n"
        "f = ccall(fptr, Cint, (Cint,), 1)\n"
    )
    problems, n, _ = check_abi.check([src], ROOT, ROOT / "bindings/abi.txt")
    assert n == 4
    text = "\n".join(problems)
    assert "forms.jl:4: cdt_kind_size argument 1 is cdt_kind" in text
    assert "forms.jl:6: cannot tell which C function" in text
    assert len([p for p in problems if "forms.jl:4" in p]) == 2  # abi.txt and the headers
    assert not [p for p in problems if re.search(r"forms\.jl:[1235]:", p)], text


def test_abi_type_mapping():
    m = check_abi.CModel([(ROOT / h).read_text() for h in check_abi.HEADERS])
    assert m.accepted("cdt_count") == {"Int64"}
    assert m.accepted("const cdt_count *") == {"Ptr{Int64}", "Ref{Int64}"}
    assert "Ref{Ptr{Cvoid}}" in m.accepted("cdt_type *")
    assert m.accepted("const char*", "ret") == check_abi.CHAR_PTR
    assert m.accepted("cdt_sobj_alloc_func_t *", "field") == {"Ptr{Cvoid}"}
    assert m.accepted("cdt_kind") == {"Cint", "Int32"}
    assert m.accepted("cdt_ucx_tag") == {"UInt64"}
    assert m.accepted("const cdt_frame_params *") == {"Ptr{CdtFrameParams}", "Ref{CdtFrameParams}"}


def test_fatou_lint_and_format():
    fatou = shutil.which("fatou")
    if fatou is None:
        pytest.skip("fatou not installed")
    for cmd in (["lint"], ["format", "--check"]):
        r = subprocess.run([fatou, *cmd, "src", "ext", "test"], cwd=PKG, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr

"""check_docs.py must pass on the package and fail on broken copies of it."""
import pathlib
import shutil
import subprocess
import sys

import pytest

TOOLS = pathlib.Path(__file__).resolve().parent.parent
PKG = TOOLS.parent
sys.path.insert(0, str(TOOLS))

import check_docs  # noqa: E402


@pytest.fixture
def pkg(tmp_path):
    dst = tmp_path / "jl"
    for sub in ("src", "ext", "docs"):
        shutil.copytree(PKG / sub, dst / sub, ignore=shutil.ignore_patterns("build"))
    return dst


def check(pkg):
    r = subprocess.run([sys.executable, str(TOOLS / "check_docs.py"), str(pkg)],
                       capture_output=True, text=True)
    return r.returncode, r.stdout


def edit(path, old, new):
    text = path.read_text()
    assert old in text, "fixture text not found: %r" % old
    path.write_text(text.replace(old, new, 1))


def test_package_passes():
    rc, out = check(PKG)
    assert rc == 0, out


def test_definitions_are_recognised():
    src = b'''
"a"
const X = 1
"b"
mutable struct S{T} <: Foo
end
"c"
f(x::T) where {T} = 1
"d"
@inline function g(x)::Int
end
"e"
function h end
"f"
function CDTypes.k(x) end
not_documented(x) = 2
'''
    f = pathlib.Path(__file__).parent / "_defs.jl"
    try:
        f.write_bytes(src)
        documented, _ = check_docs.documented_and_exported([f])
    finally:
        f.unlink()
    assert documented == {"X", "S", "f", "g", "h", "k"}


BREAKS = [
    # (file, old, new, what the report says)
    ("src/lib.jl", '"""\n    CDTypesError(code, name, message, context)', '"""\n    CDTypesError(code)',
     None),  # a changed docstring still documents it: passes
    ("src/CDTypes.jl", "export CDTypesError, Frame, RawFrame", "export CDTypesError, Frame, RawFrame, nodoc",
     "nodoc is exported but has no docstring"),
    ("docs/src/index.md", "CDTypes.decode_frame\n", "CDTypes.decode_frame\nCDTypes.no_such_name\n",
     "@docs entry no_such_name has no docstring"),
    ("docs/src/index.md", "CDTypes.set_library!\n", "",
     "set_library! has a docstring but is in no @docs block"),
    ("docs/src/index.md", "Frame\nRawFrame\n", "Frame\n", "RawFrame has a docstring but is in no @docs block"),
    ("docs/make.jl", "modules = [CDTypes]", "modules = []", "no makedocs"),
    ("docs/Project.toml", 'Documenter = "1"\n', "", "Documenter needs [deps] and a [compat] bound"),
]


@pytest.mark.parametrize("rel,old,new,says", BREAKS, ids=[str(b[3])[:40] for b in BREAKS])
def test_broken_copy(pkg, rel, old, new, says):
    assert check(pkg)[0] == 0
    edit(pkg / rel, old, new)
    rc, out = check(pkg)
    if says is None:
        assert rc == 0, out
    else:
        assert rc == 1 and says in out, out


def test_undocumented_export_fails(pkg):
    # the docstring of an exported struct removed
    text = (pkg / "src/frame.jl").read_text()
    i = text.index("mutable struct Frame")
    j = text.rindex('"""', 0, text.rindex('"""', 0, i)) if text[:i].rstrip().endswith('"""') else None
    assert j is not None, "Frame's docstring is not a triple-quoted string right before it"
    (pkg / "src/frame.jl").write_text(text[:j] + text[i:])
    rc, out = check(pkg)
    assert rc == 1 and "Frame is exported but has no docstring" in out, out

"""check_recipe.py must pass on the recipe and Project.toml and fail on broken copies."""
import pathlib
import shutil
import subprocess
import sys

import pytest

TOOLS = pathlib.Path(__file__).resolve().parent.parent
PKG = TOOLS.parent
ROOT = PKG.parent
RECIPE = "julia/deps/yggdrasil/L/libcdtypes/build_tarballs.jl"
sys.path.insert(0, str(TOOLS))

import check_recipe  # noqa: E402


@pytest.fixture
def tree(tmp_path):
    """A copy of what the check reads: the recipe, Project.toml and the CMake files."""
    for rel in (RECIPE, "julia/Project.toml", "julia/src/binary.jl", "CMakeLists.txt",
                "libcdt/CMakeLists.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


def check(root):
    r = subprocess.run([sys.executable, str(TOOLS / "check_recipe.py"), "--root", str(root)],
                       capture_output=True, text=True)
    return r.returncode, r.stdout


def edit(path, old, new):
    text = path.read_text()
    assert old in text, "fixture text not found: %r" % old
    path.write_text(text.replace(old, new, 1))


def test_repository_passes():
    rc, out = check(ROOT)
    assert rc == 0, out


def test_jll_uuid_is_binarybuilders():
    # known JLLs: Zlib_jll, UCX_jll
    assert check_recipe.jll_uuid("Zlib") == "83775a58-1f1d-513f-b197-d71354ab007a"
    assert check_recipe.jll_uuid("UCX") == "16e4e860-d6b8-5056-a518-93e88b6392ae"


BREAKS = [
    # (file, old, new, what the report says)
    (RECIPE, 'version = v"0.2.0"', 'version = v"0.1.0"', "the CMake project's is"),
    (RECIPE, 'LibraryProduct("libcdtypes-ucx", :libcdtypes_ucx; dont_dlopen = true),\n', "",
     "CMake builds libcdtypes-ucx, which is not a LibraryProduct"),
    (RECIPE, 'LibraryProduct("libcdtypes", :libcdtypes)', 'LibraryProduct("libcdt", :libcdt)',
     "LibraryProduct libcdt is not a shared library CMake builds"),
    (RECIPE, ":libcdtypes_ucx;", ":libcdtypes;", "has the symbol :libcdtypes, not :libcdtypes_ucx"),
    (RECIPE, "-DCDT_BUILD_BENCH=OFF", "-DCDT_BUILD_BENCHMARKS=OFF",
     "CDT_BUILD_BENCHMARKS, which the CMake project does not have"),
    (RECIPE, "-DCDT_WITH_UCX=ON", "-DCDT_WITH_UCX=MAYBE", "CDT_WITH_UCX=MAYBE, CMake takes"),
    (RECIPE, "16e4e860-d6b8-5056-a518-93e88b6392ae", "16e4e860-d6b8-5056-a518-93e88b6392af",
     "UCX_jll has uuid"),
    (RECIPE, 'Platform("aarch64", "linux"; libc = "glibc"),', "", "platform aarch64/linux/glibc missing"),
    (RECIPE, "products = [", "products = [[", "syntax error"),
    ("CMakeLists.txt", "project(cdtypes VERSION 0.2.0", "project(cdtypes VERSION 0.3.0",
     "the CMake project's is 0.3.0"),
    ("libcdt/CMakeLists.txt", "OUTPUT_NAME cdtypes-ucx EXPORT_NAME ucx\n",
     "OUTPUT_NAME cdt-ucx EXPORT_NAME ucx\n", "CMake builds libcdt-ucx"),
    ("julia/Project.toml", 'Preferences = "1"\n', "", "[deps] Preferences has no [compat] bound"),
    ("julia/Project.toml", 'MPI = "0.20"\n', "", "[weakdeps] MPI has no [compat] bound"),
    # the JLL as a hard (or weak) dependency: Pkg cannot resolve it from the General registry
    ("julia/Project.toml", '[weakdeps]\n',
     '[weakdeps]\nlibcdtypes_jll = "42fccd27-48ff-5aef-b108-8d688682e9a1"\n',
     "libcdtypes_jll is in [weakdeps]: it is not in the General registry"),
    ("julia/Project.toml", 'Serialization = "9e88b42a',
     'libcdtypes_jll = "42fccd27-48ff-5aef-b108-8d688682e9a1"\nSerialization = "9e88b42a',
     "libcdtypes_jll is in [deps]: it is not in the General registry"),
    ("julia/Project.toml", 'Serialization = "9e88b42a',
     'Unregistered = "11111111-2222-3333-4444-555555555555"\nSerialization = "9e88b42a',
     "[deps] Unregistered is neither a standard library nor a package of the General registry"),
    ("julia/Project.toml", 'MPI = "da04e1cc-30fd', 'MPI = "da04e1cc-30fe',
     "[weakdeps] MPI has uuid da04e1cc-30fe"),
    ("julia/src/binary.jl", 'UUID("42fccd27', 'UUID("42fccd28', "binary.jl: libcdtypes_jll has uuid 42fccd28"),
    ("julia/src/binary.jl", '"libcdtypes_jll")', '"libcdt_jll")', "no Base.PkgId(Base.UUID(...)"),
    ("julia/Project.toml", 'Preferences = "21216c6a-2e73-6563-6e65-726566657250"\n', "",
     "Preferences (21216c6a-2e73-6563-6e65-726566657250) is not in [deps]"),
]


@pytest.mark.parametrize("rel,old,new,says", BREAKS, ids=[b[3][:40] for b in BREAKS])
def test_broken_copy_fails(tree, rel, old, new, says):
    assert check(tree)[0] == 0
    edit(tree / rel, old, new)
    rc, out = check(tree)
    assert rc == 1 and says in out, out

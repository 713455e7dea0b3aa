#!/usr/bin/env python3
"""Static check of the JLL recipe and of Project.toml against the CMake project, no Julia needed.

    check_recipe.py [--root REPO] [RECIPE]   (default: julia/deps/yggdrasil/L/*/build_tarballs.jl)

The recipe (BinaryBuilder's build_tarballs.jl) is read with the Julia grammar (tree-sitter-julia)
and checked against the repository as it is now:
  - `version` is the CMake project's VERSION (CMakeLists.txt);
  - the LibraryProducts are exactly the shared libraries CMake builds, by their OUTPUT_NAMEs
    (libcdt/CMakeLists.txt: `cdtypes` -> LibraryProduct("libcdtypes", :libcdtypes)), each
    product's symbol being its name with '-' as '_';
  - every -DCDT_... option of the build script exists in the CMake project (option() or a
    CACHE variable), with a value CMake accepts for it;
  - every Dependency's uuid is the one BinaryBuilder gives its JLL;
  - the platforms are Linux x86_64 and aarch64 with glibc.
Project.toml: every dependency (deps, weakdeps, extras) has a [compat] bound; [deps] and
[weakdeps] name only Julia's standard libraries and packages of the General registry (the tables
below, name and UUID: a user with the General registry alone must be able to add, develop and
test the package), so the recipe's JLL (`NAME_jll`, not registered until Yggdrasil builds it) is
in neither: the package finds it in the user's environment when it is there; it depends on
Preferences. The package's own reference to the JLL (src/binary.jl:
`Base.PkgId(Base.UUID("..."), "NAME_jll")`, which finds it without loading it) has the UUID
BinaryBuilder will give it. Exit status 1 on any problem.
"""
import argparse
import hashlib
import pathlib
import re
import sys
import tomllib
import uuid

import tree_sitter
import tree_sitter_julia

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent
ROOT = PKG.parent
PREFERENCES_UUID = "21216c6a-2e73-6563-6e65-726566657250"
# Julia's standard libraries the package may name (their UUIDs in Julia's stdlib folder)
STDLIBS = {
    "Artifacts": "56f22d72-fd6d-98f1-02f0-08ddc0907c33",
    "Libdl": "8f399da3-3557-5675-b5ff-fb832c97cbdb",
    "Serialization": "9e88b42a-f829-5b0c-bbe9-9e923198166b",
    "Test": "8dfed614-e22c-5e08-85e1-65c5234f0b40",
}
# packages of the General registry the package may name (their entries in General's
# Registry.toml); a new dependency is added here after checking that it is registered there
GENERAL = {
    "Preferences": PREFERENCES_UUID,
    "MPI": "da04e1cc-30fd-572f-bb4f-1f8673147195",
}
PLATFORMS = {("x86_64", "linux", "glibc"), ("aarch64", "linux", "glibc")}

# BinaryBuilder's JLL UUIDs (BinaryBuilder.jl, JLLTools: jll_uuid): a UUID5-like hash of the
# name with "_jll" appended twice, under a fixed namespace, with its own byte order.
_JLL_NAMESPACE = uuid.UUID("cfb74b52-ec16-5bb7-a574-95d9e393895e")


def jll_uuid(name):
    """The UUID of `NAME_jll` (name without the suffix), as BinaryBuilder computes it."""
    data = _JLL_NAMESPACE.int.to_bytes(16, "little") + ("%s_jll_jll" % name).encode()
    u = int.from_bytes(hashlib.sha1(data).digest()[:16], "little")
    u &= 0xFFFFFFFFFFFF0FFF3FFFFFFFFFFFFFFF
    u |= 0x00000000000050008000000000000000
    return str(uuid.UUID(int=u))


# --- the CMake side -------------------------------------------------------------------------


def cmake_version(root):
    m = re.search(r"^project\(\w+ VERSION (\d+\.\d+\.\d+)", (root / "CMakeLists.txt").read_text(), re.M)
    return m.group(1) if m else None


def cmake_options(root):
    """{name: set of accepted values, or None for any} of the top-level project's options."""
    text = (root / "CMakeLists.txt").read_text()
    opts = {}
    for m in re.finditer(r"^\s*option\((\w+)\s", text, re.M):
        opts[m.group(1)] = {"ON", "OFF", "TRUE", "FALSE", "YES", "NO", "1", "0"}
    for m in re.finditer(r"^\s*set\((\w+)\s+\"[^\"]*\"\s+CACHE\s+(\w+)", text, re.M):
        opts[m.group(1)] = None
        s = re.search(r"set_property\(CACHE %s PROPERTY STRINGS ([^)]*)\)" % m.group(1), text)
        if s:
            opts[m.group(1)] = {v.upper() for v in s.group(1).split()}
        else:  # "ON, OFF or AUTO" in the doc string
            doc = re.search(r"set\(%s\s+\"[^\"]*\"\s+CACHE\s+\w+\s+\"([^\"]*)\"" % m.group(1), text)
            choices = doc.group(1).rpartition(":")[2] if doc else ""
            words = set(re.findall(r"\b[A-Z]{2,}\b", choices))
            opts[m.group(1)] = words or None
    return opts


def cmake_shared_libraries(root):
    """The file names (lib + OUTPUT_NAME) of the shared libraries libcdt/CMakeLists.txt builds."""
    text = (root / "libcdt/CMakeLists.txt").read_text()
    shared = re.findall(r"add_library\((\w+)\s+SHARED\b", text)
    names = {}
    for m in re.finditer(r"set_target_properties\((\w+)\s+PROPERTIES\s+([^)]*)\)", text, re.S):
        o = re.search(r"\bOUTPUT_NAME\s+([\w.-]+)", m.group(2))
        if o:
            names[m.group(1)] = o.group(1)
    return {"lib" + names.get(t, t) for t in shared}


# --- the recipe -----------------------------------------------------------------------------


def jparser():
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_julia.language()))


def text(n):
    return n.text.decode()


def walk(n):
    yield n
    for c in n.children:
        yield from walk(c)


def string_value(n):
    """The value of a plain string literal node, or None."""
    if n is None or n.type != "string_literal":
        return None
    return "".join(text(c) for c in n.children if c.type == "content")


def call_args(call):
    """(positional nodes, {keyword: node}) of a call_expression."""
    args = next((c for c in call.children if c.type == "argument_list"), None)
    pos, kw = [], {}
    if args is None:
        return pos, kw
    for c in args.named_children:
        if c.type == "keyword_parameters":
            items = c.named_children
        else:
            items = [c]
        for a in items:
            if a.type in ("assignment", "named_argument", "keyword_argument") or (
                a.type == "binary_expression" and "=" in [text(x) for x in a.children]
            ):
                kids = a.named_children
                kw[text(kids[0])] = kids[-1]
            else:
                pos.append(a)
    return pos, kw


def calls(tree, fname):
    for n in walk(tree.root_node):
        if n.type == "call_expression" and n.children and text(n.children[0]) == fname:
            yield n


def top_assignments(tree):
    out = {}
    for n in tree.root_node.named_children:
        if n.type == "assignment" and n.named_children[0].type == "identifier":
            out[text(n.named_children[0])] = n.named_children[-1]
    return out


def check_recipe(path, root):
    """(problems, recipe name, recipe version)."""
    problems = []
    src = path.read_bytes()
    tree = jparser().parse(src)
    if tree.root_node.has_error:
        return ["%s: syntax error" % path], None, None
    top = top_assignments(tree)
    name = string_value(top.get("name"))
    if name is None:
        problems.append("%s: no `name = \"...\"`" % path)
    vnode = top.get("version")
    version = None
    if vnode is not None:
        m = re.fullmatch(r'v"(\d+\.\d+\.\d+)"', text(vnode))
        version = m.group(1) if m else None
    want = cmake_version(root)
    if version != want:
        problems.append("%s: version %s, the CMake project's is %s" % (path, version, want))

    # products <-> CMake's shared libraries
    products = {}
    for c in calls(tree, "LibraryProduct"):
        pos, _ = call_args(c)
        if len(pos) < 2 or string_value(pos[0]) is None:
            problems.append("%s: LibraryProduct without a file name and a symbol" % path)
            continue
        products[string_value(pos[0])] = text(pos[1])
    shared = cmake_shared_libraries(root)
    for lib in sorted(shared - set(products)):
        problems.append("%s: CMake builds %s, which is not a LibraryProduct" % (path, lib))
    for lib in sorted(set(products) - shared):
        problems.append("%s: LibraryProduct %s is not a shared library CMake builds" % (path, lib))
    for lib, sym in sorted(products.items()):
        if sym != ":" + lib.replace("-", "_"):
            problems.append("%s: LibraryProduct %s has the symbol %s, not :%s"
                            % (path, lib, sym, lib.replace("-", "_")))

    # the build script's CMake options
    script = top.get("script")
    body = text(script) if script is not None else ""
    if not body:
        problems.append("%s: no build `script`" % path)
    opts = cmake_options(root)
    for m in re.finditer(r"-D(CDT_\w+)=(\S+)", body):
        opt, value = m.group(1), m.group(2)
        if opt not in opts:
            problems.append("%s: the script sets %s, which the CMake project does not have" % (path, opt))
        elif opts[opt] is not None and value.upper() not in opts[opt]:
            problems.append("%s: %s=%s, CMake takes %s" % (path, opt, value, "/".join(sorted(opts[opt]))))

    # dependencies' UUIDs
    for c in calls(tree, "PackageSpec"):
        _, kw = call_args(c)
        dep, u = string_value(kw.get("name")), string_value(kw.get("uuid"))
        if dep and dep.endswith("_jll") and u is not None and u != jll_uuid(dep[: -len("_jll")]):
            problems.append("%s: %s has uuid %s, BinaryBuilder's is %s"
                            % (path, dep, u, jll_uuid(dep[: -len("_jll")])))

    # platforms
    found = set()
    for c in calls(tree, "Platform"):
        pos, kw = call_args(c)
        if len(pos) >= 2:
            found.add((string_value(pos[0]), string_value(pos[1]), string_value(kw.get("libc"))))
    for p in sorted(PLATFORMS - found):
        problems.append("%s: platform %s missing" % (path, "/".join(p)))
    return problems, name, version


# --- Project.toml ---------------------------------------------------------------------------


def check_project(project_path, jll_name, version):
    problems = []
    proj = tomllib.loads(project_path.read_text())
    compat = proj.get("compat", {})
    for table in ("deps", "weakdeps", "extras"):
        for dep in proj.get(table, {}):
            if dep not in compat:
                problems.append("%s: [%s] %s has no [compat] bound" % (project_path, table, dep))
    deps = proj.get("deps", {})
    if deps.get("Preferences") != PREFERENCES_UUID:
        problems.append("%s: Preferences (%s) is not in [deps]" % (project_path, PREFERENCES_UUID))
    for table in ("deps", "weakdeps", "extras"):
        for dep, u in proj.get(table, {}).items():
            known = STDLIBS.get(dep) or GENERAL.get(dep)
            if known is None:
                problems.append("%s: [%s] %s is neither a standard library nor a package of the "
                                "General registry (a user with General alone cannot resolve it)"
                                % (project_path, table, dep))
            elif u != known:
                problems.append("%s: [%s] %s has uuid %s, the registered one is %s"
                                % (project_path, table, dep, u, known))
    if jll_name:
        jll = jll_name + "_jll"
        for table in ("deps", "weakdeps"):
            if jll in proj.get(table, {}):
                problems.append("%s: %s is in [%s]: it is not in the General registry, so "
                                "Pkg cannot resolve the package" % (project_path, jll, table))
    return problems


def check_source_reference(src_dir, jll_name):
    """The PkgId the package's source builds for the JLL has BinaryBuilder's UUID."""
    if not jll_name:
        return []
    jll = jll_name + "_jll"
    refs = []
    for f in sorted(pathlib.Path(src_dir).rglob("*.jl")):
        for m in re.finditer(r'Base\.PkgId\(\s*Base\.UUID\("([0-9a-f-]+)"\)\s*,\s*"%s"\s*\)' % jll,
                             f.read_text()):
            refs.append((f, m.group(1)))
    if not refs:
        return ["%s: no Base.PkgId(Base.UUID(...), \"%s\") in the package's source" % (src_dir, jll)]
    return ["%s: %s has uuid %s, BinaryBuilder will give it %s" % (f, jll, u, jll_uuid(jll_name))
            for f, u in refs if u != jll_uuid(jll_name)]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(ROOT))
    ap.add_argument("--project", default=None)
    ap.add_argument("recipe", nargs="*")
    a = ap.parse_args(argv[1:])
    root = pathlib.Path(a.root)
    recipes = [pathlib.Path(r) for r in a.recipe] or sorted(
        (root / "julia/deps/yggdrasil").glob("*/*/build_tarballs.jl"))
    if len(recipes) != 1:
        print("check_recipe: expected one recipe, found %d" % len(recipes))
        return 1
    problems, name, version = check_recipe(recipes[0], root)
    problems += check_project(pathlib.Path(a.project or root / "julia/Project.toml"), name, version)
    problems += check_source_reference(root / "julia/src", name)
    for p in problems:
        print(p)
    print("check_recipe: %s_jll %s, %s" % (name, version, "ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

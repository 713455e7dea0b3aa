#!/usr/bin/env python3
"""Static check of CDTypes.jl's API reference (Documenter, julia/docs/), no Julia needed.

    check_docs.py [PKG]      (default: the julia/ folder)

With the Julia grammar (tree-sitter-julia), the names that carry a docstring are collected from
src/ and ext/ (a string literal right before a function, method, struct, const or macro
definition). Then:
  - every exported name has a docstring;
  - every entry of an @docs block in docs/src/*.md (`CDTypes.encode`, `CDTypesError`,
    `CDTypes.send(obj, ::MPI.Comm)`: the name before any signature) names a documented name
    (Documenter's makedocs fails on a missing docstring, which this finds without Julia);
  - every exported name and every documented public function (not starting with `_`) is listed
    in an @docs block, so the reference is the whole API;
  - docs/make.jl calls makedocs with `modules = [CDTypes]` and docs/Project.toml has Documenter
    with a [compat] bound.
Exit status 1 on any problem.
"""
import pathlib
import re
import sys
import tomllib

import tree_sitter
import tree_sitter_julia

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent
MODULE = "CDTypes"
DEFINITIONS = {"function_definition", "macro_definition", "assignment", "const_statement",
               "struct_definition", "abstract_definition", "module_definition"}


def parser():
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_julia.language()))


def text(n):
    return n.text.decode()


def callee_name(n):
    """The name a signature or left-hand side defines: `f` of `f(x) where T`, `Base.show` of
    `Base.show(io, x)`; None when it is not a definition of a name."""
    while n is not None and n.type in ("where_expression", "typed_expression", "signature"):
        n = n.named_children[0] if n.named_children else None
    if n is None:
        return None
    if n.type == "call_expression":
        n = n.children[0]
    if n.type in ("identifier", "field_expression"):
        return text(n)
    return None


def type_name(head):
    n = head.named_children[0] if head.named_children else None
    while n is not None and n.type in ("binary_expression", "parametrized_type_expression"):
        n = n.named_children[0]
    return text(n) if n is not None and n.type == "identifier" else None


def defined_name(n):
    """The name a definition node defines, or None."""
    if n.type == "macrocall_expression":  # `@inline function f ... end`
        args = next((c for c in n.named_children if c.type == "macro_argument_list"), None)
        inner = [c for c in args.named_children if c.type in DEFINITIONS] if args else []
        return defined_name(inner[0]) if inner else None
    if n.type in ("function_definition", "macro_definition"):
        sig = next((c for c in n.named_children if c.type == "signature"), None)
        if sig is None:  # `function name end`
            ids = [c for c in n.named_children if c.type == "identifier"]
            return text(ids[0]) if ids else None
        return callee_name(sig)
    if n.type == "const_statement":
        inner = next((c for c in n.named_children if c.type == "assignment"), None)
        return defined_name(inner) if inner is not None else None
    if n.type == "assignment":
        return callee_name(n.named_children[0])
    if n.type in ("struct_definition", "abstract_definition"):
        head = next((c for c in n.named_children if c.type == "type_head"), None)
        return type_name(head) if head is not None else None
    if n.type == "module_definition":
        ids = [c for c in n.named_children if c.type == "identifier"]
        return text(ids[0]) if ids else None
    return None


def documented_and_exported(files, p=None):
    """({documented name}, [exported name]) of the Julia files; `CDTypes.f` counts as `f`."""
    p = p or parser()
    documented, exported = set(), []
    for f in files:
        stack = [p.parse(f.read_bytes()).root_node]
        while stack:
            node = stack.pop()
            kids = node.named_children
            for i, c in enumerate(kids):
                if c.type == "export_statement":
                    exported += [text(x) for x in c.named_children if x.type == "identifier"]
                if c.type == "string_literal" and i + 1 < len(kids):
                    name = defined_name(kids[i + 1])
                    if name:
                        documented.add(name[len(MODULE) + 1:] if name.startswith(MODULE + ".") else name)
                if c.type == "module_definition":
                    stack.append(c)
    return documented, exported


def docs_entries(md_files):
    """[(file, line, name)] of every @docs block entry."""
    out = []
    for f in md_files:
        inside = False
        for no, line in enumerate(f.read_text().splitlines(), 1):
            s = line.strip()
            if s.startswith("```"):
                inside = s == "```@docs"
                continue
            if inside and s:
                name = re.split(r"[({]", s, maxsplit=1)[0].strip()
                out.append((f, no, name[len(MODULE) + 1:] if name.startswith(MODULE + ".") else name))
    return out


def check(pkg):
    pkg = pathlib.Path(pkg)
    problems = []
    p = parser()
    files = sorted((pkg / "src").rglob("*.jl")) + sorted((pkg / "ext").rglob("*.jl"))
    documented, exported = documented_and_exported(files, p)
    for name in exported:
        if name not in documented:
            problems.append("%s is exported but has no docstring" % name)

    md = sorted((pkg / "docs" / "src").rglob("*.md"))
    if not md:
        problems.append("docs/src: no pages")
    entries = docs_entries(md)
    listed = set()
    for f, no, name in entries:
        listed.add(name)
        if name not in documented and name != MODULE:
            problems.append("%s:%d: @docs entry %s has no docstring in src/ or ext/" % (f, no, name))
    public = {n for n in documented if not n.startswith("_") and "." not in n and n != MODULE}
    for name in sorted(set(exported) | public):
        if name not in listed:
            problems.append("%s has a docstring but is in no @docs block of docs/src" % name)

    make = pkg / "docs" / "make.jl"
    if not make.is_file():
        problems.append("docs/make.jl missing")
    else:
        tree = p.parse(make.read_bytes())
        src = text(tree.root_node)
        if tree.root_node.has_error:
            problems.append("docs/make.jl: syntax error")
        if not re.search(r"makedocs\s*\(", src) or not re.search(r"modules\s*=\s*\[\s*%s\s*\]" % MODULE, src):
            problems.append("docs/make.jl: no makedocs(...; modules = [%s])" % MODULE)
    proj = pkg / "docs" / "Project.toml"
    if not proj.is_file():
        problems.append("docs/Project.toml missing")
    else:
        t = tomllib.loads(proj.read_text())
        if "Documenter" not in t.get("deps", {}) or "Documenter" not in t.get("compat", {}):
            problems.append("docs/Project.toml: Documenter needs [deps] and a [compat] bound")
    return problems, len(documented), len(entries)


def main(argv):
    problems, ndoc, nentries = check(argv[1] if len(argv) > 1 else PKG)
    for pr in problems:
        print(pr)
    print("check_docs: %d documented names, %d @docs entries, %s"
          % (ndoc, nentries, "ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

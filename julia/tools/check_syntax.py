#!/usr/bin/env python3
"""Syntax check of Julia files with a real Julia grammar (tree-sitter-julia), no Julia needed.

    check_syntax.py [PATH ...]      (default: every .jl file under julia/)

Prints each ERROR or MISSING node as FILE:LINE:COL and exits 1 when any file has one.
"""
import pathlib
import sys

import tree_sitter
import tree_sitter_julia

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent


def parser():
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_julia.language()))


def jl_files(paths):
    out = []
    for p in paths:
        p = pathlib.Path(p)
        out += sorted(p.rglob("*.jl")) if p.is_dir() else [p]
    return out


def problems(source, p=None):
    """(line, col, what) of every syntax error in `source` (bytes)."""
    tree = (p or parser()).parse(source)
    found = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_error:
            found.append((n.start_point[0] + 1, n.start_point[1] + 1, "syntax error"))
        elif n.is_missing:
            found.append((n.start_point[0] + 1, n.start_point[1] + 1, "missing %s" % n.type))
        if n.has_error:
            stack.extend(n.children)
    return sorted(found)


def main(argv):
    files = jl_files(argv[1:] or [PKG])
    if not files:
        print("check_syntax: no .jl files")
        return 1
    p = parser()
    bad = 0
    for f in files:
        for line, col, what in problems(f.read_bytes(), p):
            print("%s:%d:%d: %s" % (f, line, col, what))
            bad += 1
    print("check_syntax: %d files, %s" % (len(files), "ok" if not bad else "%d errors" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""ABI check of the Julia package against libcdt's C headers and bindings/abi.txt, no Julia needed.

    check_abi.py [--root REPO] [--abi ABI_TXT] [PATH ...]   (default PATHs: julia/src, julia/ext)

Every `ccall` and `@ccall` in the .jl files is found with a real Julia grammar (tree-sitter-julia)
and checked:
  - the C function it names (`cfn(:name)`, `(:name, lib)`, `:name`, `lib.name`) is in
    bindings/abi.txt AND in the public headers as they are now (parsed at run time);
  - it passes as many arguments as the C function has parameters;
  - each argument type and the return type is one the C type maps to (cdt_count/int64_t ->
    Int64, int -> Cint, size_t -> Csize_t, T * -> Ptr{T'} or Ref{T'}, char * -> Cstring,
    handles -> Ptr{Cvoid}, void -> Cvoid, structs -> their CamelCase mirror, ...).
Every Julia struct that mirrors a C struct (CdtFrameInfo <-> cdt_frame_info) must have the
same fields, in the same order, with mapped types. Calls of functions not named cdt_* (the
Julia runtime, libc) are not checked. Exit status 1 on any problem.
"""
import argparse
import importlib.util
import pathlib
import re
import sys

import tree_sitter
import tree_sitter_julia

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent
ROOT = PKG.parent
HEADERS = ["libcdt/include/cdt.h", "libcdt/include/cdt_ucx.h", "libcdt/include/cdt_sobj.h"]

SCALARS = {
    "int": {"Cint", "Int32"},
    "unsigned": {"Cuint", "UInt32"},
    "unsigned int": {"Cuint", "UInt32"},
    "size_t": {"Csize_t", "UInt"},
    "int64_t": {"Int64"},
    "uint64_t": {"UInt64"},
    "int32_t": {"Int32", "Cint"},
    "uint32_t": {"UInt32"},
    "uint16_t": {"UInt16"},
    "uint8_t": {"UInt8"},
    "double": {"Float64", "Cdouble"},
    "void": {"Cvoid", "Nothing"},
}
CHAR_PTR = {"Cstring", "Ptr{UInt8}", "Ptr{Cchar}"}
VOID_PTR = {"Ptr{Cvoid}", "Ptr{UInt8}"}


def camel(c_name):
    return "".join(p[:1].upper() + p[1:] for p in c_name.split("_") if p)


# --- the C side -----------------------------------------------------------------------------


def strip_c(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


class CModel:
    """Types and structs of the headers, read at run time."""

    def __init__(self, texts):
        self.handles, self.aliases, self.enums, self.funcs = set(), {}, set(), set()
        self.structs = {}  # name -> [(field, ctype)]
        for raw in texts:
            t = strip_c(raw)
            for m in re.finditer(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)\s*;", t):
                self.handles.add(m.group(1))
            for m in re.finditer(r"typedef\s+enum\s+\w*\s*\{[^}]*\}\s*(\w+)\s*;", t):
                self.enums.add(m.group(1))
            for m in re.finditer(r"typedef\s+[^;{}()]*?\(\s*\*?\s*(\w+)\s*\)\s*\(", t):
                self.funcs.add(m.group(1))
            for m in re.finditer(r"typedef\s+((?:unsigned\s+)?\w+)\s+(\w+)\s*;", t):
                if m.group(1) not in ("struct", "enum"):
                    self.aliases[m.group(2)] = m.group(1)
            for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", t, flags=re.S):
                fields = []
                for decl in m.group(2).split(";"):
                    decl = " ".join(decl.split())
                    if decl:
                        fields.append((c_name_of(decl), c_type_of(decl)))
                self.structs[m.group(3)] = fields

    def resolve(self, base):
        seen = 0
        while base in self.aliases and seen < 10:
            base, seen = self.aliases[base], seen + 1
        return base

    def accepted(self, ctype, where="arg"):
        """Julia spellings accepted for C type `ctype` ("const cdt_count *")."""
        base, depth = split_type(ctype)
        base = self.resolve(base)
        return self._acc(base, depth, where)

    def _acc(self, base, depth, where):
        if depth == 0:
            if base in SCALARS:
                return set(SCALARS[base])
            if base in self.enums:
                return {"Cint", "Int32"}
            if base in self.handles:
                return {"Ptr{Cvoid}"}
            if base in self.structs:
                return {camel(base)}
            return set()
        if depth == 1 and base == "char":
            return set(CHAR_PTR)
        if depth == 1 and base == "void":
            return set(VOID_PTR)
        if depth == 1 and base in self.funcs:
            return {"Ptr{Cvoid}"}
        inner = self._acc(base, depth - 1, "field")
        out = {"Ptr{%s}" % j for j in inner}
        if where == "arg":
            out |= {"Ref{%s}" % j for j in inner}
        return out


def split_type(ctype):
    s = ctype.replace("*", " * ")
    toks = [t for t in s.split() if t != "const"]
    depth = toks.count("*")
    return " ".join(t for t in toks if t != "*"), depth


def c_name_of(decl):
    decl = decl.strip()
    m = re.search(r"(\w+)\s*(\[\s*\])?$", decl)
    return m.group(1)


def c_type_of(decl):
    """Type part of a declaration with a name ("const cdt_count lens[]" -> "const cdt_count *")."""
    decl = decl.strip()
    arr = decl.endswith("[]")
    if arr:
        decl = decl[:-2].rstrip()
    m = re.match(r"(.*?)(\w+)$", decl)
    t = m.group(1).strip()
    return t + (" *" if arr else "")


def parse_abi(lines):
    fns = {}
    for line in lines:
        line = line.strip()
        if line.startswith("fn "):
            name, ret, params = (s.strip() for s in line[3:].split("|"))
            ps = [] if params == "void" else [c_type_of(p) for p in params.split(",")]
            fns[name] = (ret, ps)
    return fns


def header_abi(root):
    """What bindings/gen_abi.py derives from the headers now (its own parser)."""
    gen = root / "bindings" / "gen_abi.py"
    if not gen.exists():
        return None
    spec = importlib.util.spec_from_file_location("cdt_gen_abi", gen)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.ROOT = root
    mod.HEADERS = [root / h for h in HEADERS]
    return parse_abi(mod.abi_lines())


# --- the Julia side ---------------------------------------------------------------------------


def jparser():
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_julia.language()))


def text(n):
    return "".join(n.text.decode().split())


def args_of(arglist):
    return [c for c in arglist.named_children if c.type not in ("comment", "line_comment", "block_comment")]


def quoted_symbol(n):
    """The name in `:name` somewhere in n (first one, depth first), or None."""
    if n.type == "quote_expression":
        ids = [c for c in n.named_children if c.type == "identifier"]
        if ids:
            return ids[0].text.decode()
    for c in n.named_children:
        r = quoted_symbol(c)
        if r:
            return r
    return None


class Call:
    def __init__(self, file, line, name, ret, argtypes, problem=None):
        self.file, self.line, self.name, self.ret, self.argtypes = file, line, name, ret, argtypes
        self.problem = problem


def find_calls(tree, file):
    calls, structs = [], {}
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        stack.extend(reversed(n.children))
        line = n.start_point[0] + 1
        if n.type == "call_expression" and n.named_children and text(n.named_children[0]) == "ccall":
            al = [c for c in n.named_children if c.type == "argument_list"]
            a = args_of(al[0]) if al else []
            if len(a) < 3:
                calls.append(Call(file, line, None, None, None, "ccall with fewer than 3 arguments"))
                continue
            target, ret, types = a[0], a[1], a[2]
            name = target.text.decode().lstrip(":") if target.type == "quote_expression" else quoted_symbol(target)
            if types.type != "tuple_expression":
                calls.append(Call(file, line, name, text(ret), None,
                                  "argument types must be a literal tuple, got %s" % text(types)))
                continue
            calls.append(Call(file, line, name, text(ret), [text(t) for t in args_of(types)]))
        elif n.type == "macrocall_expression":
            mi = [c for c in n.named_children if c.type == "macro_identifier"]
            if not mi or text(mi[0]) != "@ccall":
                continue
            mal = [c for c in n.named_children if c.type == "macro_argument_list"]
            body = args_of(mal[0])[0] if mal and args_of(mal[0]) else None
            if body is None or body.type != "typed_expression":
                calls.append(Call(file, line, None, None, None, "@ccall without a return type"))
                continue
            call, ret = body.named_children[0], body.named_children[-1]
            if call.type != "call_expression":
                calls.append(Call(file, line, None, None, None, "unrecognised @ccall form"))
                continue
            callee = call.named_children[0]
            if callee.type == "field_expression":
                name = callee.named_children[-1].text.decode()
            elif callee.type == "identifier":
                name = callee.text.decode()
            else:
                name = quoted_symbol(callee)
            al = [c for c in call.named_children if c.type == "argument_list"]
            types = []
            for arg in args_of(al[0]) if al else []:
                if arg.type != "typed_expression":
                    types.append("<untyped %s>" % text(arg))
                else:
                    types.append(text(arg.named_children[-1]))
            calls.append(Call(file, line, name, text(ret), types))
        elif n.type == "struct_definition":
            head = [c for c in n.named_children if c.type == "type_head"]
            if not head:
                continue
            sname = text(head[0]).split("<:")[0].split("{")[0]
            fields = []
            for c in n.named_children:
                if c.type == "typed_expression":
                    fields.append((c.named_children[0].text.decode(), text(c.named_children[-1])))
                elif c.type == "identifier" and c is not head[0]:
                    fields.append((c.text.decode(), "Any"))
            structs[sname] = (file, line, fields)
    return calls, structs


# --- the check --------------------------------------------------------------------------------


def check(paths, root, abi_path):
    problems = []
    headers = [root / h for h in HEADERS]
    missing = [str(h) for h in headers if not h.exists()]
    if missing:
        return ["headers not found: %s" % ", ".join(missing)], 0, 0
    model = CModel([h.read_text() for h in headers])
    abi = parse_abi(abi_path.read_text().splitlines())
    hdr = header_abi(root)
    p = jparser()
    calls, jstructs = [], {}
    files = []
    for path in paths:
        path = pathlib.Path(path)
        files += sorted(path.rglob("*.jl")) if path.is_dir() else [path]
    for f in files:
        tree = p.parse(f.read_bytes())
        c, s = find_calls(tree, f)
        calls += c
        jstructs.update(s)
    checked = 0
    for c in calls:
        where = "%s:%d" % (c.file, c.line)
        if c.problem:
            problems.append("%s: %s" % (where, c.problem))
            continue
        if c.name is None:
            problems.append("%s: cannot tell which C function this ccall calls" % where)
            continue
        if not c.name.startswith("cdt_"):
            continue
        checked += 1
        sources = [("bindings/abi.txt", abi)] + ([("the headers", hdr)] if hdr is not None else [])
        for label, table in sources:
            if c.name not in table:
                problems.append("%s: %s is not in %s" % (where, c.name, label))
                continue
            ret, params = table[c.name]
            if len(params) != len(c.argtypes):
                problems.append("%s: %s takes %d arguments in %s, the ccall passes %d"
                                % (where, c.name, len(params), label, len(c.argtypes)))
                continue
            ok_ret = model.accepted(ret, "ret")
            if c.ret not in ok_ret:
                problems.append("%s: %s returns %s (%s): Julia %s is not one of %s"
                                % (where, c.name, ret, label, c.ret, sorted(ok_ret)))
            for i, (ct, jt) in enumerate(zip(params, c.argtypes)):
                ok = model.accepted(ct, "arg")
                if jt not in ok:
                    problems.append("%s: %s argument %d is %s (%s): Julia %s is not one of %s"
                                    % (where, c.name, i + 1, ct.strip(), label, jt, sorted(ok)))
    # mirrored structs
    by_camel = {camel(n): n for n in model.structs}
    nstructs = 0
    for jname, (f, line, jfields) in sorted(jstructs.items()):
        if jname not in by_camel:
            continue
        nstructs += 1
        cname = by_camel[jname]
        cfields = model.structs[cname]
        where = "%s:%d" % (f, line)
        if [n for n, _ in jfields] != [n for n, _ in cfields]:
            problems.append("%s: struct %s fields %s differ from C %s fields %s"
                            % (where, jname, [n for n, _ in jfields], cname, [n for n, _ in cfields]))
            continue
        for (fname, jt), (_, ct) in zip(jfields, cfields):
            ok = model.accepted(ct, "field")
            if jt not in ok:
                problems.append("%s: %s.%s is %s in C: Julia %s is not one of %s"
                                % (where, jname, fname, ct, jt, sorted(ok)))
    # every struct a ccall passes must be mirrored
    for c in calls:
        for t in (c.argtypes or []):
            for m in re.finditer(r"\b(Cdt\w+)\b", t):
                if m.group(1) not in jstructs:
                    problems.append("%s:%d: %s is used but not defined in the checked files"
                                    % (c.file, c.line, m.group(1)))
    return problems, checked, nstructs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(ROOT), help="repository root (headers, bindings/)")
    ap.add_argument("--abi", default=None, help="ABI list (default ROOT/bindings/abi.txt)")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args(argv[1:])
    root = pathlib.Path(a.root)
    abi = pathlib.Path(a.abi) if a.abi else root / "bindings" / "abi.txt"
    paths = a.paths or [PKG / "src", PKG / "ext"]
    problems, n, ns = check(paths, root, abi)
    for p in problems:
        print(p)
    print("check_abi: %d ccalls of libcdt, %d mirrored structs, %s"
          % (n, ns, "ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

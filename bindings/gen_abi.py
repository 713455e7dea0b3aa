#!/usr/bin/env python3
"""The machine-readable ABI list of libcdt, generated from the public headers.

bindings/abi.txt lists every exported function (name, return type, parameter list), every
status code and every element kind, one per line. The Python, Rust and Julia declarations are
checked against it, and a test checks it against the headers and the shared library's exports,
so no binding can drift from the C ABI unnoticed.

  gen_abi.py            print the list
  gen_abi.py --write    rewrite bindings/abi.txt
  gen_abi.py --check [CORE [TRANSPORT]]   fail if abi.txt is stale, or if the core library
                        (libcdtypes) exports other than the cdt_ functions that are not cdt_ucx_,
                        or the transport (libcdtypes-ucx) other than the cdt_ucx_ functions
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADERS = [
    ROOT / "libcdt/include/cdt.h",
    ROOT / "libcdt/include/cdt_ucx.h",
    ROOT / "libcdt/include/cdt_sobj.h",
]
LIST = ROOT / "bindings/abi.txt"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # preprocessor lines (with their continuations) hold no declarations
    return re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def functions(text):
    for m in re.finditer(r"\bCDT_API\s+([^;{]*?)\(([^;{]*?)\)\s*;", text, flags=re.S):
        head, params = " ".join(m.group(1).split()), " ".join(m.group(2).split())
        nm = re.match(r"(.*?)([A-Za-z_][A-Za-z0-9_]*)$", head)
        ret, name = nm.group(1).strip(), nm.group(2)
        ret = ret.replace(" *", "*")
        yield f"fn {name} | {ret} | {params}"


def constants(text):
    for m in re.finditer(r"X\((CDT_[A-Z_]+),\s*(-?\d+),", text):
        yield f"status {m.group(1)} = {m.group(2)}"
    for m in re.finditer(r"\b(CDT_KIND_[A-Z0-9_]+)\s*=\s*(\d+)", text):
        if not m.group(1).endswith("_"):  # sentinels such as CDT_KIND_COUNT_ are not ABI
            yield f"kind {m.group(1)} = {m.group(2)}"


def abi_lines():
    lines = []
    for h in HEADERS:
        if not h.exists():
            continue
        raw = re.sub(r"/\*.*?\*/", " ", h.read_text(), flags=re.S)
        text = strip_comments(h.read_text())
        lines += [f"# {h.relative_to(ROOT)}"] + list(functions(text)) + list(constants(raw))
    return lines


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    return {l.split()[-1] for l in out.splitlines() if re.search(r" [TDBR] ", l)}


def check_private_binding(core, transport):
    """The internals the transport calls in the core are bound to the core's release: the core
    defines them under one version node CDTYPES_PRIVATE_<version> (its version script), and the
    transport needs each of them at that node, so a transport and a core of different releases
    refuse to load together (docs/ABI.md, "The SONAME policy")."""
    out = subprocess.run(["nm", "-D", "--defined-only", core], check=True, capture_output=True,
                         text=True).stdout
    defined = {}
    for l in out.splitlines():
        sym = l.split()[-1]
        if sym.startswith("cdt__"):
            name, _, node = sym.partition("@@")
            defined[name] = node
    nodes = set(defined.values())
    ok = True
    if len(nodes) != 1 or not next(iter(nodes)).startswith("CDTYPES_PRIVATE_"):
        print(core + ": the cdt__ exports are not bound to one CDTYPES_PRIVATE_ version node:",
              sorted("%s@@%s" % kv for kv in defined.items()))
        ok = False
    out = subprocess.run(["nm", "-D", "--undefined-only", transport], check=True,
                         capture_output=True, text=True).stdout
    for l in out.splitlines():
        sym = l.split()[-1]
        if sym.startswith("cdt__"):
            name, _, node = sym.partition("@")
            if name not in defined or node != defined[name]:
                print(transport + ": needs %s, which the core does not define at that node (%s)"
                      % (sym, defined.get(name, "not exported")))
                ok = False
    return ok


def check_exports(lines, core, transport):
    """Each library exports exactly its part of the declared functions: the core everything but
    cdt_ucx_*, the transport (when built) cdt_ucx_* only. The core's cdt__* functions are the
    internal interface the transport calls (src/core/type.h): not ABI, not listed."""
    declared = {l.split()[1] for l in lines if l.startswith("fn ")}
    parts = [(core, {n for n in declared if not n.startswith("cdt_ucx_")}, "cdt__")]
    if transport:
        parts.append((transport, {n for n in declared if n.startswith("cdt_ucx_")}, None))
    ok = True
    for lib, expected, internal in parts:
        syms = {s for s in exported(lib) if not s.startswith("_") and
                not (internal and s.startswith(internal))}
        if syms != expected:
            print(lib + ": exported but not declared for it:", sorted(syms - expected))
            print(lib + ": declared for it but not exported:", sorted(expected - syms))
            ok = False
    if transport:
        ok = check_private_binding(core, transport) and ok
    return ok


def main(argv):
    lines = abi_lines()
    text = "\n".join(lines) + "\n"
    if len(argv) > 1 and argv[1] == "--write":
        LIST.write_text(text)
        return 0
    if len(argv) > 1 and argv[1] == "--check":
        ok = True
        if not LIST.exists() or LIST.read_text() != text:
            print("bindings/abi.txt is stale: run bindings/gen_abi.py --write")
            ok = False
        if len(argv) > 2:
            ok = check_exports(lines, argv[2], argv[3] if len(argv) > 3 else None) and ok
        print("abi check:", "ok" if ok else "FAILED", f"({sum(l.startswith('fn ') for l in lines)} functions)")
        return 0 if ok else 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

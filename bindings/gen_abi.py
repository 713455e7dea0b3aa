#!/usr/bin/env python3
"""The machine-readable ABI list of libcdt, generated from the public headers.

bindings/abi.txt lists every exported function (name, return type, parameter list), every
status code and every element kind, one per line. The Python, Rust and Julia declarations are
checked against it, and a test checks it against the headers and the shared library's exports,
so no binding can drift from the C ABI unnoticed.

  gen_abi.py            print the list
  gen_abi.py --write    rewrite bindings/abi.txt
  gen_abi.py --check [LIB]   fail if abi.txt is stale, or if LIB exports other symbols
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADERS = [
    ROOT / "libcdt/include/cdt.h",
    ROOT / "libcdt/include/cdt_ucx.h",
    ROOT / "bindings/cdt_sobj.h",
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
            declared = {l.split()[1] for l in lines if l.startswith("fn ")}
            syms = {s for s in exported(argv[2]) if not s.startswith("_")}
            if syms != declared:
                print("exported but not declared:", sorted(syms - declared))
                print("declared but not exported:", sorted(declared - syms))
                ok = False
        print("abi check:", "ok" if ok else "FAILED", f"({sum(l.startswith('fn ') for l in lines)} functions)")
        return 0 if ok else 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

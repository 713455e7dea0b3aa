"""Every C function cdtypes declares exists in the C ABI list with the same parameter count."""
import os
import subprocess
import sys

import pytest

import cdtypes._lib as L

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def parse(lines, fns, statuses):
    for line in lines:
        line = line.strip()
        if line.startswith("fn "):
            name, ret, params = (s.strip() for s in line[3:].split("|"))
            n = 0 if params == "void" else len(params.split(","))
            fns[name] = (ret, n)
        elif line.startswith("status "):
            name, value = line[len("status ") :].split("=")
            statuses[name.strip()] = int(value)


def abi_list(generated_too=False):
    """The committed ABI list (bindings/abi.txt, or the copy installed with the package);
    generated_too: also what bindings/gen_abi.py derives from the headers now."""
    path = os.path.join(REPO, "bindings", "abi.txt")
    if not os.path.exists(path):  # outside a checkout: the copy installed with the package
        path = os.path.join(os.path.dirname(L.__file__), "cdt_abi.txt")
    fns, statuses = {}, {}
    with open(path) as f:
        parse(f, fns, statuses)
    gen = os.path.join(REPO, "bindings", "gen_abi.py")
    if generated_too and os.path.exists(gen):
        out = subprocess.run([sys.executable, gen], capture_output=True, text=True, check=True)
        parse(out.stdout.splitlines(), fns, statuses)
    return fns, statuses


def compare(declared, fns):
    problems = []
    for name, (res, args) in declared.items():
        if name not in fns:
            problems.append("%s: not in the C ABI list" % name)
            continue
        ret, n = fns[name]
        if n != len(args):
            problems.append("%s: %d parameters declared, the C ABI has %d" % (name, len(args), n))
        if (ret == "void") != (res is None):
            problems.append("%s: return type %s in C, %r declared" % (name, ret, res))
    return problems


def test_declarations_match_abi():
    problems = compare(L.DECLARED, abi_list()[0])
    assert not problems, "ctypes declarations disagree with bindings/abi.txt:\n" + "\n".join(problems)


def test_ucx_declarations_match_abi():
    fns, _ = abi_list(generated_too=True)  # the list may not have caught up with cdt_ucx.h
    if not any(n.startswith("cdt_ucx_") for n in fns):
        pytest.skip("no UCX transport in the ABI list")
    problems = compare(L.UCX_DECLARED, fns)
    assert not problems, "UCX ctypes declarations disagree with the C ABI:\n" + "\n".join(problems)


def test_every_declared_symbol_is_exported():
    for name in L.DECLARED:
        assert hasattr(L.lib, name)
    if L.HAVE_UCX:
        ucx = L.load_ucx()  # the transport is its own library
        for name in L.UCX_DECLARED:
            assert hasattr(ucx, name)


def test_status_names_and_exception_classes():
    _, statuses = abi_list()
    for name, code in statuses.items():
        assert L.lib.cdt_err_name(code).decode() == name
        if code < 0:
            e = L.error(code)
            assert isinstance(e, L.CdtError)
            assert e.code == code and e.name == name
            assert e.message == L.lib.cdt_strerror(code).decode()
            assert type(e) is not L.CdtError, "no specific exception class for %s" % name


def test_mismatch_is_reported():
    fns, _ = abi_list()
    fake = {"cdt_frame_size": (None, [None]), "cdt_no_such_function": (None, [])}
    problems = compare(fake, fns)
    assert len(problems) == 3  # parameter count, return type, missing function


def test_extension_calls_are_in_the_abi():
    """The compiled backend looks its libcdt functions up by name: every one is in the list."""
    from cdtypes import _backend

    fns, _ = abi_list(generated_too=True)
    impl = _backend.impl
    names = tuple(impl.CALLS) + tuple(impl.UCX_CALLS)
    assert names, "the backend names no functions"
    missing = [n for n in names if n not in fns]
    assert not missing, "the backend calls functions outside the C ABI list: %s" % missing
    for n in impl.CALLS:
        assert hasattr(L.lib, n)


def pinned_layout():
    """tests/abi/abi_layout.h: {struct: (size, may_grow, {field: (offset, size)})}, the C
    layout the ABI test pins (generated from the headers by tests/abi/gen_layout.py)."""
    path = os.path.join(REPO, "tests", "abi", "abi_layout.h")
    if not os.path.exists(path):
        pytest.skip("tests/abi/abi_layout.h is not in this checkout")
    structs = {}
    with open(path) as f:
        for line in f:
            line = line.strip().rstrip("\\").strip()
            if not line.startswith("X("):
                continue
            parts = [p.strip() for p in line[2:-1].split(",")]
            if len(parts) == 3:
                structs[parts[0]] = (int(parts[1]), parts[2] == "1", {})
            elif len(parts) == 4:
                structs[parts[0]][2][parts[1]] = (int(parts[2]), int(parts[3]))
    return structs


def test_ctypes_structs_match_the_c_layout():
    """Every ctypes mirror of a public struct has the C offsets and sizes; a struct that may
    grow (field_mask first) may mirror a prefix, any other one all of it."""
    import ctypes

    pinned = pinned_layout()
    mirrors = {
        name: cls
        for name, cls in vars(L).items()
        if name.startswith("cdt_") and isinstance(cls, type) and issubclass(cls, ctypes.Structure)
    }
    assert {"cdt_frame_info", "cdt_sobj", "cdt_ucx_recv_info"} <= set(mirrors)
    problems = []
    for name, cls in sorted(mirrors.items()):
        if name not in pinned:
            problems.append(f"{name}: not a public C struct")
            continue
        size, may_grow, fields = pinned[name]
        if (ctypes.sizeof(cls) > size) if may_grow else (ctypes.sizeof(cls) != size):
            problems.append(f"{name}: size {ctypes.sizeof(cls)}, C has {size}")
        for fname, *_ in cls._fields_:
            got = (getattr(cls, fname).offset, getattr(cls, fname).size)
            if fields.get(fname) != got:
                problems.append(f"{name}.{fname}: offset/size {got}, C has {fields.get(fname)}")
    assert not problems, "\n".join(problems)

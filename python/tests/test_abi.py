"""Every C function cdtypes declares exists in the C ABI list with the same parameter count."""
import os

import cdtypes._lib as L

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def abi_list():
    path = os.path.join(REPO, "bindings", "abi.txt")
    if not os.path.exists(path):  # outside a checkout: the copy installed with the package
        path = os.path.join(os.path.dirname(L.__file__), "cdt_abi.txt")
    fns, statuses = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("fn "):
                name, ret, params = (s.strip() for s in line[3:].split("|"))
                n = 0 if params == "void" else len(params.split(","))
                fns[name] = (ret, n)
            elif line.startswith("status "):
                name, value = line[len("status ") :].split("=")
                statuses[name.strip()] = int(value)
    return fns, statuses


def test_declarations_match_abi():
    fns, _ = abi_list()
    problems = []
    for name, (res, args) in L.DECLARED.items():
        if name not in fns:
            problems.append("%s: not in the C ABI list" % name)
            continue
        ret, n = fns[name]
        if n != len(args):
            problems.append("%s: %d parameters declared, the C ABI has %d" % (name, len(args), n))
        if (ret == "void") != (res is None):
            problems.append("%s: return type %s in C, %r declared" % (name, ret, res))
    assert not problems, "ctypes declarations disagree with bindings/abi.txt:\n" + "\n".join(problems)


def test_every_declared_symbol_is_exported():
    for name in L.DECLARED:
        assert hasattr(L.lib, name)


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

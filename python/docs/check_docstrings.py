"""Check that cdtypes' public API is documented (scripts/python-docs runs it).

    check_docstrings.py --modules            every public name has a docstring
    check_docstrings.py --inventory FILE     the built reference (Sphinx's objects.inv) lists
                                             every public name

Public: the modules public_modules() names; in each, the names of its ``__all__`` (where it has
none: every attribute whose name does not start with "_", modules left out); in each public
class, every method, property and slot whose name does not start with "_", also those it
inherits from cdtypes' own classes (not those of mpi4py's communicators it extends). A function,
class, method or property needs its own docstring; a constant (a value of a plain type, which
carries its type's docstring) needs a ``#:`` comment before its assignment in the module that
exports it, which is what autodoc shows; a slot an entry of a ``__slots__`` dict. Run with the package importable (installed); the
backend (CDTYPES_BACKEND) decides which Frame and Buffer are checked. Exit status 1 on any gap.
"""

import argparse
import importlib
import inspect
import pkgutil
import sys
import types
import zlib



def is_python(module_info):
    """A package or a .py module: pkgutil also reports libcdtypes.so, a plain C library that
    only looks like an extension module by its suffix."""
    spec = module_info.module_finder.find_spec(module_info.name)
    return module_info.ispkg or (spec is not None and (spec.origin or "").endswith(".py"))


def public_modules():
    """cdtypes, each of its modules whose name does not start with "_" (cdtypes.ucx,
    cdtypes.mpi: a new one is checked, and must be in the reference, without a change here) and
    cdtypes.__main__ (``python -m cdtypes``)."""
    import cdtypes

    names = sorted(m.name for m in pkgutil.iter_modules(cdtypes.__path__)
                   if not m.name.startswith("_") and is_python(m))
    return ["cdtypes"] + ["cdtypes." + n for n in names] + ["cdtypes.__main__"]


# what the reference names as a constant, not as a function or class
DATA_TYPES = (int, float, str, bytes, bool, tuple, frozenset, type(None))


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and not isinstance(v, types.ModuleType)]
    return sorted(names)


def own_package(cls):
    return (getattr(cls, "__module__", "") or "").split(".")[0] == "cdtypes"


def public_members(cls):
    """(name, raw attribute, defining class) of every public method, property and slot of cls,
    its own and those inherited from cdtypes' classes."""
    seen = {}
    for klass in reversed(cls.__mro__):
        if not own_package(klass):
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_"):
                seen[name] = (value, klass)
    return sorted((name, value, klass) for name, (value, klass) in seen.items())


def own_members(cls):
    """The public members cls defines itself (what its entry in the reference lists)."""
    return sorted(n for n in vars(cls) if not n.startswith("_"))


def docstring(value):
    """value's own docstring (not one inherited from a base class: a method of mpi4py that a
    class of cdtypes overrides needs its own)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, DATA_TYPES):
        return None
    return (getattr(value, "__doc__", None) or "").strip()


def data_comments(module):
    """{name: text} of the module's ``#:`` comments (Sphinx's analyzer, as autodoc reads them)."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
    except Exception:  # a module without Python source (no public one)
        return {}
    return {name: "".join(text).strip() for (scope, name), text in docs.items() if scope == ""}


def check_modules():
    missing = []
    count = 0
    for modname in public_modules():
        module = importlib.import_module(modname)
        count += 1
        if not (module.__doc__ or "").strip():
            missing.append(modname + " (module)")
        comments = None
        checked = set()  # (class, member): a member inherited by several public classes once
        for name in public_names(module):
            value = getattr(module, name)
            full = "%s.%s" % (modname, name)
            count += 1
            if isinstance(value, DATA_TYPES) or not (inspect.isclass(value) or callable(value)):
                if comments is None:
                    comments = data_comments(module)
                if not comments.get(name):
                    missing.append(full + " (constant: a '#:' comment before it in %s)" % modname)
                continue
            if not docstring(value):
                missing.append(full)
            if inspect.isclass(value):
                for member, raw, owner in public_members(value):
                    if (owner, member) in checked:
                        continue
                    checked.add((owner, member))
                    count += 1
                    if isinstance(raw, types.MemberDescriptorType):
                        # a slot: its docstring is its value in a __slots__ dict (what autodoc
                        # shows; Python gives the descriptor none)
                        slots = vars(owner).get("__slots__")
                        doc = slots.get(member) if isinstance(slots, dict) else None
                    else:
                        doc = docstring(raw)
                    if not (doc or "").strip():
                        missing.append("%s.%s.%s" % (owner.__module__, owner.__qualname__, member))
    import cdtypes

    if missing:
        print("backend %s: %d public names without a docstring:" % (cdtypes.backend, len(missing)))
        for name in missing:
            print("  " + name)
        return 1
    print("check_docstrings: backend %s: %d public names, each with a docstring"
          % (cdtypes.backend, count))
    return 0


def inventory_names(path):
    """The object names of a Sphinx inventory (objects.inv, version 2)."""
    with open(path, "rb") as f:
        for _ in range(4):  # the "# Sphinx inventory version 2" header
            f.readline()
        text = zlib.decompress(f.read()).decode()
    names = set()
    for line in text.splitlines():
        name, role = line.split(None, 2)[:2]
        if role.startswith("py:"):
            names.add(name)
    return names


def check_inventory(path):
    listed = inventory_names(path)
    absent = []
    for modname in public_modules():
        module = importlib.import_module(modname)
        if modname not in listed:
            absent.append(modname + " (module)")
        for name in public_names(module):
            full = "%s.%s" % (modname, name)
            if full not in listed:
                absent.append(full)
            value = getattr(module, name)
            if inspect.isclass(value) and own_package(value):
                absent += ["%s.%s" % (full, m) for m in own_members(value)
                           if "%s.%s" % (full, m) not in listed]
    if absent:
        print("%d public names are not in the reference (%s):" % (len(absent), path))
        for name in absent:
            print("  " + name)
        return 1
    print("check_docstrings: the reference lists every public name")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--modules", action="store_true", help="check the docstrings")
    group.add_argument("--inventory", metavar="FILE", help="check a built objects.inv")
    args = parser.parse_args(argv)
    return check_modules() if args.modules else check_inventory(args.inventory)


if __name__ == "__main__":
    sys.exit(main())

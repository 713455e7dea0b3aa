"""A cdtypes built against PyPI's libucx-cu12 (the wheels: CMake CDTYPES_UCX_WHEEL=ON, which
writes UCX_FROM = "libucx" into cdtypes/_build_config.py) must load that wheel's UCX
(libucx.load_library()) before its transport, whose UCX dependencies are bare SONAMEs: loaded
first, the wheel's libraries are the ones the dynamic loader takes, not a system UCX (a second
copy). Without libucx-cu12, cdtypes.ucx must say what to install. tests/install/python-wheel.sh
checks the real wheel; these pin the switch itself, without loading any UCX."""
import sys
import types

import pytest

from cdtypes import _lib


def test_this_build_names_where_its_ucx_comes_from():
    assert _lib._ucx_from() in ("", "libucx")


def test_a_libucx_build_loads_the_wheels_ucx_first(monkeypatch):
    calls = []
    fake = types.ModuleType("libucx")
    fake.load_library = lambda: calls.append("load_library")
    monkeypatch.setitem(sys.modules, "libucx", fake)
    monkeypatch.setattr(_lib, "_ucx_from", lambda: "libucx")
    _lib._load_ucx_wheel()
    assert calls == ["load_library"]


def test_a_libucx_build_without_the_wheel_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "libucx", None)  # `import libucx` raises ImportError
    monkeypatch.setattr(_lib, "_ucx_from", lambda: "libucx")
    with pytest.raises(ImportError, match=r"libucx-cu12.*cdtypes\[ucx\]"):
        _lib._load_ucx_wheel()


def test_a_build_on_the_systems_ucx_loads_no_wheel(monkeypatch):
    monkeypatch.setitem(sys.modules, "libucx", None)
    monkeypatch.setattr(_lib, "_ucx_from", lambda: "")
    _lib._load_ucx_wheel()  # nothing to load, no error

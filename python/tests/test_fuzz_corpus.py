"""Replay the seeds of python/fuzz/fuzz_loads.py and the inputs the fuzzer found (tests/data/
fuzz-*): each must end in an object or a CdtError, quickly and without a crash."""
import glob
import importlib.util
import os

import pytest

HERE = os.path.dirname(__file__)
TARGET = os.path.join(HERE, "..", "fuzz", "fuzz_loads.py")
INPUTS = sorted(glob.glob(os.path.join(HERE, "..", "fuzz", "corpus", "*"))) + sorted(
    glob.glob(os.path.join(HERE, "data", "fuzz-*"))
)

if not os.path.exists(TARGET):  # pragma: no cover - outside a checkout
    pytest.skip("python/fuzz is not here", allow_module_level=True)


@pytest.fixture(scope="module")
def target():
    spec = importlib.util.spec_from_file_location("fuzz_loads", TARGET)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_there_are_inputs():
    assert len(INPUTS) > 20


@pytest.mark.parametrize("path", INPUTS, ids=os.path.basename)
def test_replay(target, path):
    with open(path, "rb") as f:
        data = f.read()
    target.TestOneInput(data)  # raises for anything but an object or a CdtError

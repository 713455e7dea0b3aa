"""The Python-written vectors in tests/vectors agree with their expected values (FORMAT.md)."""
import json
import pathlib
import sys

import pytest

PKG = pathlib.Path(__file__).resolve().parents[2]
VECTORS = PKG.parent / "tests" / "vectors"
sys.path.insert(0, str(PKG / "test"))

import make_vectors  # noqa: E402

FILES = sorted(VECTORS.glob("python_*.bin"))


@pytest.mark.skipif(not FILES, reason="no python_* vectors")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_matches_its_json(path):
    want = json.loads(path.with_suffix(".json").read_text())
    got = make_vectors.layout(path.read_bytes(), want["writer"])
    assert got == want


def test_vectors_exist():
    assert {p.name for p in FILES} >= {"python_inband.bin", "python_buffers.bin", "python_empty_region.bin"}

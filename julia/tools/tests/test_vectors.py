"""Every vector in tests/vectors has a description (NAME.json) that matches its bytes: the Julia
tests compare their decoder with these descriptions, so they must be right where Julia is not."""
import json
import pathlib
import sys

import pytest

PKG = pathlib.Path(__file__).resolve().parents[2]
VECTORS = PKG.parent / "tests" / "vectors"
sys.path.insert(0, str(VECTORS))

import describe  # noqa: E402

FILES = sorted(VECTORS.glob("*.bin"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_matches_its_json(path):
    want = json.loads(path.with_suffix(".json").read_text())
    got = describe.layout(path.read_bytes(), want["writer"])
    assert got == want


def test_vectors_of_every_writer_that_runs_here():
    prefixes = {p.name.split("_", 1)[0] for p in FILES}
    assert prefixes >= {"c", "python", "rust"}


def test_a_wrong_description_is_found(tmp_path):
    src = VECTORS / "rust_vec_string.bin"
    want = json.loads(src.with_suffix(".json").read_text())
    want["regions"][0]["hex"] = "00"
    assert describe.layout(src.read_bytes(), want["writer"]) != want


def test_broken_frames_are_refused():
    data = bytearray((VECTORS / "python_buffers.bin").read_bytes())
    w = json.loads((VECTORS / "python_buffers.json").read_text())
    for pos in (0, 4, 7, 48 + 12, w["header_size"] + w["packed_size"]):  # magic, version,
        bad = bytearray(data)  # a reserved flag bit, a region's reserved field, a padding byte
        bad[pos] ^= 0x01
        with pytest.raises(describe.VectorError):
            describe.layout(bytes(bad), "x")
    bad = bytearray(data)  # OBJECT_COUNT cleared: offset 40 (the count, 1) is reserved then
    assert bad[6] & 0x02 and bad[40] == 1
    bad[6] &= ~0x02
    with pytest.raises(describe.VectorError):
        describe.layout(bytes(bad), "x")
    with pytest.raises(describe.VectorError):
        describe.layout(bytes(data[:-1]), "x")

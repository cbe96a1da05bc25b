"""Assembling the GGUF from packaged parts: order, size and hash checks, clear errors."""

import hashlib
import sys

import pytest

from lessons.core.local_model import GGUFSpec, ModelFileError, assemble, part_paths, resolve_local_model

PARTS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


def _spec(sha=None, size=None, parts=3, prefix="fakepart"):
    whole = b"".join(PARTS)
    return GGUFSpec(
        file_name="fake.gguf",
        alias="fake",
        package_pattern=f"{prefix}-{{i}}==1.0",
        module_pattern=f"{prefix}_{{i}}",
        parts=parts,
        size=size if size is not None else len(whole),
        sha256=sha or hashlib.sha256(whole).hexdigest(),
        license="test",
        credit="test",
    )


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three importable modules fakepart_1..3, each with get_part_path() like the real packages."""
    for i, data in enumerate(PARTS, 1):
        package = tmp_path / "site" / f"fakepart_{i}"
        package.mkdir(parents=True)
        (package / "part.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            "import os\ndef get_part_path():\n    return os.path.join(os.path.dirname(__file__), 'part.bin')\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield
    for i in range(1, 4):
        sys.modules.pop(f"fakepart_{i}", None)


def test_parts_are_concatenated_in_order_and_verified(fake_parts, tmp_path):
    path = assemble(_spec(), model_dir=tmp_path / "models", progress=False)
    assert path.read_bytes() == b"".join(PARTS)
    assert path.with_name("fake.gguf.sha256").read_text().strip() == _spec().sha256


def test_a_verified_file_is_not_assembled_again(fake_parts, tmp_path):
    path = assemble(_spec(), model_dir=tmp_path / "models", progress=False)
    before = path.stat().st_mtime_ns
    assert assemble(_spec(), model_dir=tmp_path / "models", progress=False).stat().st_mtime_ns == before


def test_a_hash_mismatch_leaves_no_file_and_says_how_to_fix(fake_parts, tmp_path):
    with pytest.raises(ModelFileError, match="SHA-256 .* expected 0{64}.*Reinstall"):
        assemble(_spec(sha="0" * 64), model_dir=tmp_path / "models", progress=False)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_size_mismatch_names_the_parts_to_reinstall(fake_parts, tmp_path):
    with pytest.raises(ModelFileError, match="incomplete.*pip install --force-reinstall"):
        assemble(_spec(size=5), model_dir=tmp_path / "models", progress=False)


def test_missing_parts_give_the_pip_command(fake_parts):
    with pytest.raises(ModelFileError) as error:
        part_paths(_spec(parts=5))
    message = str(error.value)
    assert "missing parts: 4, 5" in message and "pip install 'fakepart-4==1.0' 'fakepart-5==1.0'" in message


def test_a_custom_gguf_setting_must_point_to_a_file(fresh_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTIC_RAG_GGUF", str(tmp_path / "nope.gguf"))
    fresh_settings()
    with pytest.raises(ModelFileError, match="AGENTIC_RAG_GGUF.*not a file"):
        resolve_local_model()


def test_a_custom_gguf_gets_an_alias_that_keeps_caches_apart(fresh_settings, monkeypatch, tmp_path):
    gguf = tmp_path / "bigger-model.gguf"
    gguf.write_bytes(b"x" * 10)
    monkeypatch.setenv("AGENTIC_RAG_GGUF", str(gguf))
    fresh_settings()
    model = resolve_local_model()
    assert model.path == gguf and model.alias == "bigger-model-10"

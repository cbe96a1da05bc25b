"""The raw-file store: uploads kept as they arrived, in a folder by default.

Introduced in notebook 08 (from notebook to service). The client's file name never becomes a path:
it is reduced to its last component (`safe_name`), and every stored file lives at
`<root>/<document id>/<job id>/<safe name>`, checked to be inside the root before it is written.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")
MAX_NAME_CHARS = 200
MAX_NAME_BYTES = 200  # file systems allow 255 bytes per name; UTF-8 Chinese takes 3 bytes a character
CHUNK_BYTES = 1 << 20


class BadFileName(ValueError):
    """An upload name with nothing usable left once directories are removed; the message says what to send."""


def safe_name(name: str) -> str:
    """The last component of an upload name (POSIX or Windows separators), without control characters.

    `../../etc/passwd` → `passwd`, `C:\\Users\\me\\notes.md` → `notes.md`. A name that is empty,
    `.` or `..` once reduced raises `BadFileName`.
    """
    raw = unicodedata.normalize("NFC", str(name or ""))
    last = PureWindowsPath(PurePosixPath(raw.replace("\\", "/")).name).name
    cleaned = _UNSAFE.sub("_", last).strip().lstrip(".") or ""
    if cleaned.startswith("-"):
        cleaned = "_" + cleaned[1:]
    if not cleaned or cleaned in (".", ".."):
        raise BadFileName(
            f"the upload name {name!r} has no file name in it — send the file with a name such as 'report.pdf'"
        )
    if len(cleaned) > MAX_NAME_CHARS or len(cleaned.encode("utf-8")) > MAX_NAME_BYTES:
        stem, suffix = os.path.splitext(cleaned)
        stem = stem[: MAX_NAME_CHARS - len(suffix)]
        room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
        stem = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore")
        cleaned = stem + suffix
    return cleaned


@dataclass(frozen=True)
class StoredFile:
    relative_path: str  # inside the store, POSIX separators
    size: int  # bytes kept (at most the limit)
    sha256: str
    truncated: bool  # the upload was larger than the limit: nothing past it was kept


class FolderStore:
    """Files under one root folder."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _inside(self, relative: str) -> Path:
        path = (self.root / relative).resolve()
        if path != self.root and self.root not in path.parents:
            raise BadFileName(f"{relative!r} would be stored outside the file store {self.root}")
        return path

    def path(self, relative: str) -> Path:
        """The absolute path of a stored file (refuses anything outside the root)."""
        return self._inside(relative)

    def save(self, document_id: str, job_id: int, name: str, stream: BinaryIO, max_bytes: int) -> StoredFile:
        """Copy `stream` to the store, at most `max_bytes` (+1 to detect a larger upload), atomically."""
        relative = f"{document_id}/{job_id}/{safe_name(name)}"
        target = self._inside(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        digest, size, truncated = hashlib.sha256(), 0, False
        with tempfile.NamedTemporaryFile("wb", dir=target.parent, suffix=".part", delete=False) as handle:
            while True:
                block = stream.read(CHUNK_BYTES)
                if not block:
                    break
                if size + len(block) > max_bytes:
                    truncated = True
                    size += len(block)
                    break
                handle.write(block)
                digest.update(block)
                size += len(block)
        if truncated:
            os.unlink(handle.name)
            return StoredFile(relative, size, "", True)
        os.replace(handle.name, target)
        return StoredFile(relative, size, digest.hexdigest(), False)

    def remove_partial(self, document_id: str, job_id: int) -> None:
        """Remove what an interrupted save left of one upload (its `.part` files)."""
        folder = self._inside(f"{document_id}/{job_id}")
        for part in folder.glob("*.part") if folder.is_dir() else []:
            part.unlink(missing_ok=True)

    def delete_document(self, document_id: str) -> None:
        """Remove every stored version of a document."""
        import shutil

        folder = self._inside(document_id)
        if folder != self.root:
            shutil.rmtree(folder, ignore_errors=True)


def open_file_store(root: str | os.PathLike) -> FolderStore:
    """The file store of the settings (`AGENTIC_RAG_SERVICE_FILE_STORE`: a folder)."""
    return FolderStore(root)

"""Turn the knowledge base's files into Markdown and LangChain documents, with a conversion cache.

Introduced in notebook 01 (chunking). Every notebook reads the knowledge base through this module:

- `ingest(folder)` converts every supported file (PDF, DOCX, PPTX, HTML, Markdown, text, XLSX, CSV)
  to Markdown with Docling; one bad file never stops the others, it is reported in `skipped`.
- PDFs use Docling's layout model when its weights are on disk (`DOCLING_ARTIFACTS_PATH`), and
  otherwise Docling's model-free native pipeline, with headings recovered from font sizes
  (`lessons.ingest.pdf_headings`).
- HTML pages lose their site chrome (navigation, header, footer, cookie banner, breadcrumb) first.
- Text files (.txt, .md, .csv, .html) are read as UTF-8, or in the encoding they really have
  (GB18030, Big5, Shift-JIS, Windows-1252, …: `lessons.text.text_encoding`), which the summary names;
  binary data with a text suffix and garbled (mojibake) text are refused.
- In a folder, symbolic links that lead outside it are refused and dangling links are listed.
- `to_documents`, `split_sections` and `dedupe` turn the Markdown into chunks with metadata
  (`source`, `page`, `format`, `language`, `sha256`, `section_path`, `section`, `chunk_id`).
- Conversions are cached as JSON under `<cache_dir>/docling/`, keyed by the file's bytes, the
  converter settings and the Docling version; entries expire after 30 days.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import tempfile
import time
import unicodedata
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from io import BytesIO
from pathlib import Path

import docling
from langchain_core.documents import Document
from langchain_text_splitters import MarkdownHeaderTextSplitter

from lessons.core.i18n import t
from lessons.core.settings import get_settings
from lessons.text.language import detect_language
from lessons.text.normalise import _FENCE, _collapse_whitespace, tidy_inline_spacing
from lessons.text.text_encoding import BinaryData, DecodedText, Mojibake, UnknownEncoding, decode_text, encoding_label

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".pdf", ".docx", ".pptx", ".html", ".htm", ".md", ".txt", ".xlsx", ".csv")
TEXT_SUFFIXES = (".txt", ".md", ".csv", ".html", ".htm")
OFFICE_SUFFIXES = (".docx", ".pptx", ".xlsx")
PAGED_FORMATS = ("pdf", "pptx")
CACHE_VERSION = 2
# Formats read as they are: plain text, and Markdown, which already is what Docling would produce
# (through Docling it would lose code-fence languages and `$$` formulas).
PASSTHROUGH = {"txt": "plain-text", "md": "markdown-as-is"}
CACHE_MAX_AGE_DAYS = 30.0
DOCLING_VERSION = docling.__version__
EXPORT_OPTIONS = {"escape_underscores": False, "escape_html": False, "image_placeholder": ""}
HEADERS_TO_SPLIT_ON = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]
HTML_CHROME_SELECTORS = (
    "nav",
    "header",
    "footer",
    "aside",
    "script",
    "style",
    "noscript",
    "template",
    "[role=navigation]",
    "[role=banner]",
    "[role=contentinfo]",
    "[aria-label=breadcrumb]",
    "[class*=cookie]",
    "[id*=cookie]",
    "[class*=breadcrumb]",
    "[id*=breadcrumb]",
)

MAX_HEADING_CHARS = 200  # a longer "heading" line is text: its start is the heading, the whole line the body
_LINE_GUARD = "\u241f"
_FAILED_LAYOUT_ARTIFACTS: set[str] = set()
_HEADING_LINE = re.compile(r"^ {0,3}#{1,4}(?:[ \t]|$)")


@dataclass(frozen=True)
class IngestLimits:
    """Size limits that protect a notebook from a file (or folder) too large to convert."""

    max_file_bytes: int = 25 * 2**20
    max_total_bytes: int = 200 * 2**20
    # DOCX, PPTX and XLSX are ZIP packages: what their parts inflate to is read from the ZIP directory and refused
    # before anything is inflated (a "zip bomb" of repeated XML would otherwise fill memory).
    max_inflated_bytes: int = 200 * 2**20
    max_inflation_ratio: int = 100  # inflated size / file size, checked once a package inflates past 16 MiB


@dataclass
class ConvertedDocument:
    """One file converted to Markdown, whole and page by page."""

    source: str
    path: str
    format: str
    language: str
    sha256: str
    markdown: str
    pages: list[tuple[int, str]]
    converter: str
    seconds: float
    from_cache: bool
    encoding: str = "utf-8"  # what a text file was read as, when it was not UTF-8 (`lessons.text.text_encoding`)
    warnings: list[str] = field(default_factory=list)  # what was converted but cannot be searched (pages with no text)


@dataclass
class Skipped:
    """A file that `ingest` did not convert, and why."""

    path: str
    reason: str


@dataclass
class IngestResult:
    """What `ingest` converted and what it skipped."""

    documents: list[ConvertedDocument]
    skipped: list[Skipped]

    def summary(self) -> str:
        """A short report: files converted (how many from the cache), files skipped and why."""
        cached = sum(document.from_cache for document in self.documents)
        seconds = sum(document.seconds for document in self.documents)
        lines = [t("Converted {n} file(s) ({cached} from cache) in {seconds:.1f} s.", n=len(self.documents),
                   cached=cached, seconds=seconds)]  # fmt: skip
        decoded = [document for document in self.documents if document.encoding != "utf-8"]
        if decoded:
            lines.append(t("Read {n} file(s) that are not UTF-8 in their detected encoding:", n=len(decoded)))
            lines.extend(f"  - {document.source}: {encoding_label(document.encoding)}" for document in decoded)
        warned = [warning for document in self.documents for warning in document.warnings]
        if warned:
            lines.append(t("{n} warning(s):", n=len(warned)))
            lines.extend(f"  - {warning}" for warning in warned)
        if self.skipped:
            lines.append(t("Skipped {n} file(s):", n=len(self.skipped)))
            lines.extend(f"  - {Path(item.path).name}: {item.reason}" for item in self.skipped)
        return "\n".join(lines)


class IngestError(Exception):
    """A file could not be ingested; the message names the file and the fix."""


class UnsupportedFileType(IngestError):
    """The file's suffix is not one of `SUPPORTED_SUFFIXES`."""


class EmptyFile(IngestError):
    """The file has no bytes, or no text once converted."""


class CorruptFile(IngestError):
    """Docling, the ZIP container or the PDF parser could not read the file."""


class FileTooLarge(IngestError):
    """The file is larger than `IngestLimits.max_file_bytes`."""


class TotalSizeExceeded(IngestError):
    """Ingesting the file would take the run past `IngestLimits.max_total_bytes`."""


class NotUtf8(IngestError):
    """A text file (.txt, .md, .csv, .html) is not UTF-8 and its encoding cannot be told, or its text is garbled."""


class NotText(IngestError):
    """A file with a text suffix holds binary data (NUL bytes that are not UTF-16, control characters)."""


class PathNotFound(IngestError):
    """The file or folder does not exist."""


class LinkOutsideFolder(IngestError):
    """A symbolic link in the folder leads to a file outside the folder."""


class DanglingLink(IngestError):
    """A symbolic link in the folder leads nowhere."""


class FileChanged(IngestError):
    """The file was rewritten while it was being read."""


class InflatesTooMuch(IngestError):
    """A DOCX, PPTX or XLSX whose parts inflate far beyond its size (`IngestLimits.max_inflated_bytes`, `max_inflation_ratio`)."""


class DuplicateContent(IngestError):
    """The file has the same bytes as a file ingested before it."""


def validate_file(path: str | Path, limits: IngestLimits = IngestLimits()) -> None:
    """Raise the `IngestError` that explains why a file cannot be converted, or return None.

    Introduced in notebook 01 (chunking).
    """
    path = Path(path)
    _check_path(path, limits)
    _check_bytes(path, _read_bytes(path), limits)


def _check_path(path: Path, limits: IngestLimits) -> None:
    """Raise `IngestError` for a missing file, an unsupported suffix or a size over the limit (before reading it)."""
    if not path.exists():
        kind = t("dangling symbolic link") if path.is_symlink() else t("file")
        raise PathNotFound(
            t("'{name}' does not exist at {path} ({kind}) — check the path", name=path.name, path=path, kind=kind)
        )
    _check_suffix(path)
    _check_size(path, _file_size(path), limits)


def _check_size(path: Path, size: int, limits: IngestLimits) -> None:
    if size == 0:
        raise EmptyFile(
            t("'{name}' is empty (0 bytes) — add content to it or remove it from the folder", name=path.name)
        )
    if size > limits.max_file_bytes:
        shown, limit = _sizes(size, limits.max_file_bytes)
        raise FileTooLarge(
            t(
                "'{name}' is {shown}, over the per-file limit of {limit} — split the file, or raise the "
                "limit: IngestLimits(max_file_bytes={suggested})",
                name=path.name,
                shown=shown,
                limit=limit,
                suggested=_suggested_limit(size),
            )
        )


def _check_bytes(path: Path, data: bytes, limits: IngestLimits) -> None:
    """The checks of `validate_file` on the bytes that will be converted (read once)."""
    _check_size(path, len(data), limits)
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        _check_text(path, data)
    elif suffix in OFFICE_SUFFIXES:
        _check_office_package(path, data, limits)
    elif suffix == ".pdf":
        _check_pdf_header(path, data)


def _read_once(path: Path) -> bytes:
    """The file's bytes, read once; `FileChanged` when the file was rewritten while it was read."""
    before = _stamp(path)
    data = _read_bytes(path)
    if _stamp(path) != before or len(data) != before[0]:
        raise FileChanged(
            f"'{path.name}' changed while it was being read (another program is writing it) — wait until it is "
            "saved, then ingest it again"
        )
    return data


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        status = path.stat()
    except OSError as error:
        raise IngestError(f"'{path.name}' cannot be read ({error}) — check its permissions") from error
    return status.st_size, status.st_mtime_ns, status.st_ino


def convert_file(
    path: str | Path,
    *,
    cache: bool = True,
    limits: IngestLimits = IngestLimits(),
    cache_max_age_days: float = CACHE_MAX_AGE_DAYS,
) -> ConvertedDocument:
    """Convert one file to Markdown (from the cache when a fresh entry exists); raises `IngestError`.

    Introduced in notebook 01 (chunking).
    """
    path = Path(path).resolve()
    _check_path(path, limits)
    data = _read_once(path)  # validated, hashed and converted: these bytes, never the path again
    _check_bytes(path, data, limits)
    file_format = format_of(path)
    settings = _converter_settings(file_format)
    cache_file = _cache_file(data, settings) if cache else None
    entry = _load_cache_entry(cache_file, cache_max_age_days) if cache_file else None
    if entry is not None:
        return _document_from(path, data, entry, seconds=0.0, from_cache=True)
    started = time.perf_counter()
    pages, converter = _convert(path, data, file_format, settings)
    seconds = time.perf_counter() - started
    pages = _cap_headings(path, pages)
    markdown = "\n\n".join(text for _page, text in pages if text.strip())
    if not markdown.strip():
        raise EmptyFile(_no_text_message(path, file_format))
    entry = {"converter": converter, "language": detect_language(markdown), "markdown": markdown, "pages": pages}
    if format_of(path) in {format_of(f"x{suffix}") for suffix in TEXT_SUFFIXES}:
        entry["encoding"] = decode_text(data).encoding
    if cache_file:
        _store_cache_entry(cache_file, entry)
    return _document_from(path, data, entry, seconds=seconds, from_cache=False)


def forget_conversion(sha256: str, name: str | Path) -> bool:
    """Remove the cached conversion of the bytes with this SHA-256 (a file called `name`, for its format, with
    today's converter settings); True if there was one.

    Introduced in notebook 08 (from notebook to service): the service calls it when a document is deleted, so
    the deleted text does not stay in the cache. The cache is keyed by bytes, not names: a caller that keeps
    another file with the same bytes must not forget them.
    """
    cache_file = _cache_file_of(sha256, _converter_settings(format_of(name)))
    try:
        cache_file.unlink()
    except FileNotFoundError:
        return False
    return True


def ingest(
    paths_or_folder: str | Path | Iterable[str | Path],
    *,
    cache: bool = True,
    limits: IngestLimits = IngestLimits(),
    progress: bool = True,
    cache_max_age_days: float = CACHE_MAX_AGE_DAYS,
) -> IngestResult:
    """Convert a folder (or a list of files); bad files, duplicates and files past the size limit are skipped.

    Introduced in notebook 01 (chunking). Files are taken in name order, so of two files with the same
    bytes the first by name is kept.
    """
    from tqdm.auto import tqdm

    documents: list[ConvertedDocument] = []
    paths, skipped = scan(paths_or_folder)
    first_by_hash: dict[str, Path] = {}
    total_bytes = 0
    for path in tqdm(paths, desc=t("converting"), unit="file", disable=not progress):
        try:
            validate_file(path, limits)
            digest = _sha256(_read_bytes(path))
            _check_not_duplicate(path, digest, first_by_hash)
            new_total = _check_total(path, total_bytes, limits)
            documents.append(convert_file(path, cache=cache, limits=limits, cache_max_age_days=cache_max_age_days))
            first_by_hash[digest] = path
            total_bytes = new_total
        except IngestError as error:
            skipped.append(_skipped(path, error))
    return IngestResult(documents, skipped)


def list_files(paths_or_folder: str | Path | Iterable[str | Path]) -> list[Path]:
    """The files to ingest: a folder's visible files (recursively), or the given paths, sorted by name.

    Introduced in notebook 01 (chunking). Links that `scan` refuses are left out; `ingest` lists them.
    """
    return scan(paths_or_folder)[0]


def scan(paths_or_folder: str | Path | Iterable[str | Path]) -> tuple[list[Path], list[Skipped]]:
    """(files to ingest, sorted by name; paths refused before reading, with the reason).

    Introduced in notebook 01 (chunking). In a folder, hidden files and folders (".name") are left
    out; a symbolic link is followed only when its target is inside the folder (`LinkOutsideFolder`
    otherwise, so no outside file is read under the link's name), and a dangling link is listed as
    `DanglingLink`. Links to folders are not descended (their files inside the folder are found where
    they are). A folder that does not exist is `PathNotFound`.
    """
    refused: list[Skipped] = []
    if isinstance(paths_or_folder, (str, os.PathLike)):
        root = Path(paths_or_folder).absolute()
        if root.is_dir():
            candidates = _folder_files(root, refused)
        elif not root.exists() and not root.suffix:
            refused.append(_skipped(root, PathNotFound(
                f"'{root.name}' does not exist at {root} — give an existing folder of documents")))  # fmt: skip
            candidates = []
        else:
            candidates = [root]
    else:
        candidates = [Path(path).absolute() for path in paths_or_folder]
    files = sorted(candidates, key=lambda path: (path.name, str(path)))
    return files, sorted(refused, key=lambda item: (Path(item.path).name, item.path))


def _folder_files(root: Path, refused: list[Skipped]) -> list[Path]:
    """A folder's visible files; links that leave it, or lead nowhere, go to `refused`."""
    real_root = root.resolve()
    files: list[Path] = []
    for directory, folders, names in os.walk(root):  # does not descend into links to folders
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in folders:
            link = Path(directory) / name
            problem = _link_problem(link, root, real_root) if link.is_symlink() else None
            if problem is not None:
                refused.append(_skipped(link, problem))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = Path(directory) / name
            if path.is_symlink():
                problem = _link_problem(path, root, real_root)
                if problem is not None:
                    refused.append(_skipped(path, problem))
                    continue
            if path.is_file():
                files.append(path)
    return files


def _link_problem(path: Path, root: Path, real_root: Path) -> IngestError | None:
    """Why a symbolic link in the folder is refused, or None when it leads to a file inside the folder."""
    target = Path(os.readlink(path))
    if not path.exists():
        return DanglingLink(f"'{path.name}' is a symbolic link to {target}, which does not exist — "
                            "remove the link, or point it at the file")  # fmt: skip
    resolved = path.resolve()
    if not resolved.is_relative_to(real_root):
        return LinkOutsideFolder(
            f"'{path.name}' is a symbolic link to {resolved}, outside the folder {root} — links that leave the "
            "folder are not followed: copy the file (or folder) into the folder if you want it ingested, or remove the link"
        )  # fmt: skip
    return None


def _skipped(path: Path, error: IngestError) -> Skipped:
    logger.warning(t("Skipped {name}: {reason}", name=path.name, reason=error))
    return Skipped(str(path), f"{type(error).__name__}: {error}")


def to_documents(converted: Sequence[ConvertedDocument]) -> list[Document]:
    """One LangChain `Document` per page (PDF, PPTX) or per file (other formats); blank pages are left out.

    Introduced in notebook 01 (chunking). Metadata: source, page (int, or None for unpaged formats),
    format, language, sha256.
    """
    documents = []
    for item in converted:
        paged = item.format in PAGED_FORMATS
        parts = item.pages if paged else [(None, item.markdown)]
        for page, text in parts:
            if text.strip():
                metadata = {
                    "source": item.source,
                    "page": page,
                    "format": item.format,
                    "language": item.language,
                    "sha256": item.sha256,
                }
                documents.append(Document(page_content=text, metadata=metadata))
    return documents


def split_sections(documents: Sequence[Document]) -> list[Document]:
    """Split documents at Markdown headings (`#`–`####`), adding `section_path` and `section` metadata.

    Introduced in notebook 01 (chunking). Uses LangChain's `MarkdownHeaderTextSplitter` (headers kept
    in the text). That splitter strips every line and drops non-printable characters, which would flatten
    code and nested lists, so every line that is not a heading outside a code fence is guarded first
    (a `#` comment inside a fenced block is never a heading) and restored after the split. A heading
    directly followed by a deeper heading joins that next chunk instead of standing alone, and a page
    that starts without a heading inherits the section of the previous page of the same file.
    """
    splitter = MarkdownHeaderTextSplitter(HEADERS_TO_SPLIT_ON, strip_headers=False)
    chunks: list[Document] = []
    open_sections: dict[str, dict[str, str]] = {}
    for document in documents:
        source = str(document.metadata.get("source", ""))
        page = document.metadata.get("page")
        headings = open_sections.get(source, {}) if isinstance(page, int) and page > 1 else {}
        waiting_headings = ""
        for part in splitter.split_text(_guard_lines(document.page_content)):
            headings = _merge_headings(headings, part.metadata)
            text = "\n\n".join(filter(None, [waiting_headings, _unguard_lines(part.page_content)]))
            if _only_headings(text):
                waiting_headings = text
                continue
            waiting_headings = ""
            chunks.append(Document(page_content=text, metadata={**document.metadata, **_section_metadata(headings)}))
        if waiting_headings:
            chunks.append(
                Document(page_content=waiting_headings, metadata={**document.metadata, **_section_metadata(headings)})
            )
        open_sections[source] = headings
    return chunks


def dedupe(documents: Sequence[Document]) -> tuple[list[Document], int]:
    """Drop chunks whose whitespace-collapsed text was seen before; return (kept, number dropped).

    Introduced in notebook 01 (chunking). Each kept chunk gets `metadata["chunk_id"]`: the first 16 hex
    characters of the SHA-256 of its whitespace-collapsed text.
    """
    seen: set[str] = set()
    kept: list[Document] = []
    for document in documents:
        chunk_id = hashlib.sha256(_collapse_whitespace(document.page_content).encode("utf-8")).hexdigest()[:16]
        if chunk_id not in seen:
            seen.add(chunk_id)
            kept.append(
                Document(page_content=document.page_content, metadata={**document.metadata, "chunk_id": chunk_id})
            )
    return kept, len(documents) - len(kept)


def format_of(path: str | Path) -> str:
    """The format name of a file: its suffix without the dot, with .htm counted as html.

    Introduced in notebook 01 (chunking).
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    return "html" if suffix == "htm" else suffix


def strip_html_chrome(html: str) -> str:
    """The page without navigation, header, footer, cookie banner, breadcrumb, scripts and styles.

    Introduced in notebook 01 (chunking).
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for selector in HTML_CHROME_SELECTORS:
        for element in soup.select(selector):
            element.decompose()
    for meta in soup.select("meta[charset], meta[http-equiv]"):
        meta.decompose()
    return '<meta charset="utf-8">' + str(soup)


def layout_artifacts_path() -> Path | None:
    """The folder of downloaded Docling models (`DOCLING_ARTIFACTS_PATH`), when it exists and is not empty.

    Introduced in notebook 01 (chunking).
    """
    raw = os.environ.get("DOCLING_ARTIFACTS_PATH", "").strip()
    if not raw:
        return None
    folder = Path(raw).expanduser()
    return folder if folder.is_dir() and any(folder.iterdir()) else None


def _check_suffix(path: Path) -> None:
    """Raise `UnsupportedFileType` unless the file's suffix is supported."""
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        supported = " ".join(suffix for suffix in SUPPORTED_SUFFIXES if suffix != ".htm")
        raise UnsupportedFileType(
            t(
                "'{name}' — supported: {supported}; save or export it in one of these formats, or remove it",
                name=path.name,
                supported=supported,
            )
        )


def _file_size(path: Path) -> int:
    """Size of the file in bytes; a missing or unreadable file raises `IngestError`."""
    if not path.is_file():
        raise IngestError(f"'{path.name}' does not exist at {path} — check the path")
    try:
        return path.stat().st_size
    except OSError as error:
        raise IngestError(f"'{path.name}' cannot be read ({error}) — check its permissions") from error


def _read_bytes(path: Path) -> bytes:
    """The file's bytes; a read failure raises `IngestError`."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise IngestError(f"'{path.name}' cannot be read ({error}) — check its permissions") from error


def _check_text(path: Path, data: bytes) -> None:
    """Raise `NotText`, `NotUtf8` or `EmptyFile` unless a text-format file decodes to some text."""
    text = _decode(path, data).text
    if not text.strip():
        raise EmptyFile(
            t("'{name}' contains only whitespace — add content to it or remove it from the folder", name=path.name)
        )


def _decode(path: Path, data: bytes) -> DecodedText:
    """A text file's text in its encoding (`lessons.text.text_encoding.decode_text`); errors name the file and the fix."""
    resave = "re-save it as UTF-8 (in your editor: Save with Encoding → UTF-8)"
    fixed = f"fixed{path.suffix.lower()}"
    try:
        return decode_text(data)
    except BinaryData as error:
        raise NotText(f"'{path.name}' is not a text file: {error} — give it the suffix of its real format, "
                      "or remove it") from None  # fmt: skip
    except Mojibake as error:
        raise NotUtf8(f"'{path.name}': {error} — convert the ORIGINAL file again with its real encoding: "
                      f"iconv -f {encoding_label(error.original)} -t UTF-8 original{path.suffix.lower()} > {fixed}"
                      ) from None  # fmt: skip
    except UnknownEncoding as error:
        how = f"iconv -f {encoding_label(error.guess)} -t UTF-8 '{path.name}' > {fixed}" if error.guess else (
            "open it in the program that wrote it and export it as UTF-8")  # fmt: skip
        raise NotUtf8(f"'{path.name}': {error} — {resave}, or convert it: {how}") from None


def _check_office_package(path: Path, data: bytes, limits: IngestLimits) -> None:
    """Raise `CorruptFile` unless the file is an Office Open XML (ZIP) package; `InflatesTooMuch` for a zip bomb."""
    fix = f"open it in its application and save it again as {path.suffix.lower()}, or remove it"
    try:
        with zipfile.ZipFile(BytesIO(data)) as package:
            infos = package.infolist()
    except (zipfile.BadZipFile, OSError) as error:
        raise CorruptFile(f"'{path.name}' is not a valid {format_of(path).upper()} file ({error}) — {fix}") from error
    if "[Content_Types].xml" not in {info.filename for info in infos}:
        raise CorruptFile(
            f"'{path.name}' is a ZIP archive but not an Office Open XML document (no [Content_Types].xml) — {fix}"
        )
    _check_inflated_size(path, len(data), sum(info.file_size for info in infos), limits)


INFLATION_RATIO_FLOOR = 16 * 2**20  # a package that inflates to less than this is never refused for its ratio


def _check_inflated_size(path: Path, size: int, inflated: int, limits: IngestLimits) -> None:
    """Raise `InflatesTooMuch` when a ZIP package's parts would inflate past the limits (read from its directory).

    Python's `zipfile` never inflates a part past the size its directory declares, so the declared sizes bound
    what Docling can read.
    """
    ratio = inflated / max(size, 1)
    if inflated > limits.max_inflated_bytes:
        raise InflatesTooMuch(t(
            "'{name}' is {size} but its XML inflates to {inflated}, over the limit of {limit} — a file this "
            "size should not hold that much (a \"zip bomb\"?): open it in its application and save it again, "
            "or raise the limit: IngestLimits(max_inflated_bytes={suggested})",
            name=path.name, size=_kib(size), inflated=_mib(inflated), limit=_mib(limits.max_inflated_bytes),
            suggested=_suggested_limit(inflated),
        ))  # fmt: skip
    if inflated > INFLATION_RATIO_FLOOR and ratio > limits.max_inflation_ratio:
        raise InflatesTooMuch(t(
            "'{name}' is {size} but its XML inflates to {inflated}, {ratio:,.0f} times its size (the limit is "
            "{limit} times) — a file this size should not hold that much (a \"zip bomb\"?): open it in its "
            "application and save it again, or raise the limit: IngestLimits(max_inflation_ratio={suggested})",
            name=path.name, size=_kib(size), inflated=_mib(inflated), ratio=ratio, limit=limits.max_inflation_ratio,
            suggested=int(ratio) + 1,
        ))  # fmt: skip


def _check_pdf_header(path: Path, data: bytes) -> None:
    """Raise `CorruptFile` unless the file starts with a PDF header."""
    if b"%PDF-" not in data[:1024]:
        raise CorruptFile(
            f"'{path.name}' is not a PDF (no %PDF- header in its first 1024 bytes) — export it again as PDF, or remove it"
        )


def _check_not_duplicate(path: Path, digest: str, first_by_hash: dict[str, Path]) -> None:
    """Raise `DuplicateContent` when a file with the same bytes was ingested before."""
    original = first_by_hash.get(digest)
    if original is not None:
        raise DuplicateContent(
            t(
                "'{name}' has the same content as '{original}' (sha256 {digest}…) — kept '{original}'; delete one "
                "of the two copies",
                name=path.name,
                original=original.name,
                digest=digest[:12],
            )
        )


def _check_total(path: Path, total_bytes: int, limits: IngestLimits) -> int:
    """The running total with this file added; raises `TotalSizeExceeded` past the limit."""
    new_total = total_bytes + path.stat().st_size
    if new_total > limits.max_total_bytes:
        shown, limit = _sizes(new_total, limits.max_total_bytes)
        raise TotalSizeExceeded(
            f"'{path.name}' would bring this run to {shown}, over the total limit of "
            f"{limit} — ingest fewer files, or raise the limit: "
            f"IngestLimits(max_total_bytes={_suggested_limit(new_total)})"
        )
    return new_total


def _mib(size: int) -> str:
    """A byte count in MiB, for messages."""
    return f"{size / 2**20:.1f} MiB"


def _kib(size: int) -> str:
    """A byte count in KiB (MiB from 1 MiB on), for messages."""
    return f"{size / 2**10:,.0f} KiB" if size < 2**20 else _mib(size)


def _sizes(size: int, limit: int) -> tuple[str, str]:
    """A size and a limit for a message, in MiB — and in bytes when the MiB figures would read the same."""
    if _mib(size) != _mib(limit):
        return _mib(size), _mib(limit)
    return f"{size:,} bytes ({_mib(size)})", f"{limit:,} bytes ({_mib(limit)})"


def _suggested_limit(size: int) -> str:
    """A limit expression comfortably above `size`, for messages."""
    return f"{int(size / 2**20) + 1} * 2**20"


def _sha256(data: bytes) -> str:
    """Hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def _no_text_message(path: Path, file_format: str) -> str:
    """Why a converted file has no text, and what to do."""
    if file_format == "pdf":
        return (
            f"'{path.name}' has no extractable text (a scanned PDF?) — run OCR on it first "
            "(e.g. `ocrmypdf in.pdf out.pdf`) or export it again with a text layer"
        )
    return t("'{name}' converted to no text — check that it has visible content, or remove it", name=path.name)


def _pages_without_text_message(path: Path, empty: Sequence[int], total: int) -> str:
    """Which pages of a PDF have no text (scanned images?), and what to do: the OCR hint of `_no_text_message`."""
    return t(
        "'{name}': {n} of {total} page(s) have no extractable text, so nothing on them can be found — page(s) "
        "{pages} (scanned images?): run OCR on the file (e.g. `ocrmypdf --skip-text in.pdf out.pdf`, which leaves the "
        "pages with text alone) or export it again with a text layer",
        name=path.name,
        n=len(empty),
        total=total,
        pages=", ".join(map(str, empty)),
    )


def _converter_settings(file_format: str) -> dict:
    """Everything that changes the conversion of a format; part of the cache key."""
    if file_format in PASSTHROUGH:
        return {"format": file_format, "converter": PASSTHROUGH[file_format], "cache_version": CACHE_VERSION}
    artifacts = layout_artifacts_path() if file_format == "pdf" else None
    return {
        "format": file_format,
        "converter": _docling_label(file_format, artifacts),
        "artifacts_path": str(artifacts) if artifacts else None,
        "export": EXPORT_OPTIONS,
        "docling": DOCLING_VERSION,
        "cache_version": CACHE_VERSION,
    }


def _docling_label(file_format: str, artifacts: Path | None) -> str:
    """The converter name recorded with a conversion."""
    if file_format == "pdf":
        pipeline = "standard-pdf" if artifacts else "native-pdf+font-headings"
        return f"docling-{DOCLING_VERSION}/{pipeline}"
    if file_format == "html":
        return f"docling-{DOCLING_VERSION}/standard+html-chrome-stripped"
    return f"docling-{DOCLING_VERSION}/standard"


def _convert(path: Path, data: bytes, file_format: str, settings: dict) -> tuple[list[tuple[int, str]], str]:
    """(pages, converter name) of one file, by format."""
    if file_format in PASSTHROUGH:
        return [(1, _plain_text(_decode(path, data).text))], PASSTHROUGH[file_format]
    try:
        if file_format == "pdf":
            return _convert_pdf(path, data, settings)
        if file_format == "html":
            return [(1, _convert_html(path, _decode(path, data).text))], settings["converter"]
        if file_format == "csv":
            return [(1, _convert_csv(path, _decode(path, data)))], settings["converter"]
        pages = _convert_with_docling(path, data, file_format)
        return pages, settings["converter"]
    except IngestError:
        raise
    except Exception as error:
        raise CorruptFile(
            f"'{path.name}' could not be converted ({type(error).__name__}: {error}) — open it in its application "
            "and save it again, or remove it"
        ) from error


_LONG_HEADING = re.compile(rf"^( {{0,3}}#{{1,6}}[ \t]+)(.{{{MAX_HEADING_CHARS + 1},}})$", re.MULTILINE)


def _cap_headings(path: Path, pages: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Headings cut to `MAX_HEADING_CHARS` (with "…"), the whole line kept below as body text; a warning names them.

    A heading is copied into every chunk of its section: a 2 MB one-line heading would be copied into each.
    """
    capped: list[tuple[int, str]] = []
    long_lines = 0
    for page_no, text in pages:
        if len(text) > MAX_HEADING_CHARS:
            text, count = _LONG_HEADING.subn(
                lambda m: f"{m[1]}{m[2][: MAX_HEADING_CHARS - 1].rstrip()}…\n\n{m[2]}", text
            )
            long_lines += count
        capped.append((page_no, text))
    if long_lines:
        logger.warning("'%s': %d heading(s) longer than %d characters were cut to that length (the full line is kept "
                       "as text) — check the file's headings", path.name, long_lines, MAX_HEADING_CHARS)  # fmt: skip
    return capped


def _plain_text(text: str) -> str:
    """A text file's text with Unix line ends, without a byte-order mark."""
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").strip()


def _stream(path: Path, data: bytes, suffix: str | None = None):
    """The bytes read once, as the stream Docling converts (it never opens the path itself)."""
    from docling.datamodel.base_models import DocumentStream

    return DocumentStream(name=f"{path.stem}{suffix or path.suffix.lower()}", stream=BytesIO(data))


def _convert_pdf(path: Path, data: bytes, settings: dict) -> tuple[list[tuple[int, str]], str]:
    """A PDF's pages: with the layout model when its weights are on disk, else natively with font headings."""
    artifacts = settings["artifacts_path"]
    if artifacts and artifacts not in _FAILED_LAYOUT_ARTIFACTS:
        try:
            document = _docling_converter("standard-pdf", artifacts).convert(_stream(path, data)).document
            return _docling_pages(document), settings["converter"]
        except (ImportError, FileNotFoundError) as error:
            _FAILED_LAYOUT_ARTIFACTS.add(artifacts)
            logger.warning(
                "Docling's layout pipeline cannot run (%s: %s); PDFs use the native pipeline from now on",
                type(error).__name__,
                error,
            )
        except Exception as error:  # noqa: BLE001 - any layout failure falls back to the native pipeline
            logger.warning(
                "Docling's layout pipeline failed on %s (%s: %s); using the native pipeline for it",
                path.name,
                type(error).__name__,
                error,
            )
    from lessons.ingest.pdf_headings import pdf_pages_markdown  # Docling's document model: loaded to convert only

    document = _docling_converter("native-pdf", None).convert(_stream(path, data)).document
    return pdf_pages_markdown(document, data), _docling_label("pdf", None)


def _convert_html(path: Path, text: str) -> str:
    """An HTML page's Markdown, site chrome stripped first."""
    html = strip_html_chrome(text.lstrip("\ufeff"))
    document = _docling_converter("standard", None).convert(_stream(path, html.encode("utf-8"), ".html")).document
    return _export_markdown(document)


def _convert_csv(path: Path, decoded: DecodedText) -> str:
    """A CSV file's Markdown table; a file in another encoding reaches Docling as UTF-8."""
    stream = _stream(path, decoded.text.lstrip("\ufeff").encode("utf-8"), ".csv")
    return _export_markdown(_docling_converter("standard", None).convert(stream).document)


def _convert_with_docling(path: Path, data: bytes, file_format: str) -> list[tuple[int, str]]:
    """Pages of a DOCX, PPTX or XLSX file (PPTX: one per slide; others: one), converted from its bytes."""
    if file_format == "docx":
        data = _moves_accepted(data)
    document = _docling_converter("standard", None).convert(_stream(path, data)).document
    if file_format == "pptx":
        return _demote_slide_titles(_docling_pages(document))
    return [(1, _export_markdown(document))]


_WORD_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _moves_accepted(data: bytes) -> bytes:
    """A DOCX's bytes with Word's tracked moves accepted: moved text once, at its new place.

    Word records a move as the text inside `w:moveFrom` (where it was) and again inside `w:moveTo`
    (where it is now); Docling reads the runs of neither, so moved text was lost from both places.
    The `w:moveFrom` copies are removed and the `w:moveTo` wrappers replaced by the runs they hold.
    A document without tracked moves is returned unchanged.
    """
    from lxml import etree

    with zipfile.ZipFile(BytesIO(data)) as package:
        parts = {info.filename: package.read(info) for info in package.infolist()}
        infos = package.infolist()
    moved = [name for name, xml in parts.items() if name.startswith("word/") and name.endswith(".xml")
             and (b"moveFrom" in xml or b"moveTo" in xml)]  # fmt: skip
    if not moved:
        return data
    for name in moved:
        root = etree.fromstring(parts[name])
        for element in list(root.iter(f"{{{_WORD_NS}}}moveFrom")):
            _drop_keeping_tail(element)
        for element in list(root.iter(f"{{{_WORD_NS}}}moveTo")):
            parent = element.getparent()
            if parent is None:
                continue
            position = parent.index(element)
            for offset, child in enumerate(list(element)):
                parent.insert(position + offset, child)
            _drop_keeping_tail(element)
        parts[name] = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
    output = BytesIO()
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as package:
        for info in infos:
            package.writestr(info, parts[info.filename])
    return output.getvalue()


def _drop_keeping_tail(element) -> None:
    """Remove an XML element; text that followed it stays where it was."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


def _docling_pages(document) -> list[tuple[int, str]]:
    """Markdown of each page of a paged Docling document."""
    return [(page_no, _export_markdown(document, page_no)) for page_no in sorted(document.pages)]


def _export_markdown(document, page_no: int | None = None) -> str:
    """Docling's Markdown without underscore escapes or image placeholders, inline spacing tidied."""
    return tidy_inline_spacing(document.export_to_markdown(page_no=page_no, **EXPORT_OPTIONS).strip())


def _demote_slide_titles(pages: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Make the titles of slides after a title slide `##`, so each slide is a section of the deck.

    Docling writes every slide title as `#`; when the first slide opens with a `#` title, the later
    slides' `#` lines become `##`.
    """
    if not pages or not pages[0][1].startswith("# "):
        return pages
    first, *rest = pages
    return [first, *((page_no, re.sub(r"(?m)^# ", "## ", text)) for page_no, text in rest)]


@lru_cache(maxsize=4)
def _docling_converter(kind: str, artifacts_path: str | None):
    """A Docling `DocumentConverter`, built once per process: "standard", "native-pdf" or "standard-pdf"."""
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import NativePdfPipelineOptions
    from docling.document_converter import DocumentConverter, NativePdfFormatOption, PdfFormatOption

    if kind == "native-pdf":
        options = NativePdfPipelineOptions(generate_page_images=False, generate_picture_images=False)
        return DocumentConverter(
            allowed_formats=[InputFormat.PDF],
            format_options={InputFormat.PDF: NativePdfFormatOption(pipeline_options=options)},
        )
    if kind == "standard-pdf":
        options = _layout_pipeline_options(artifacts_path)
        return DocumentConverter(
            allowed_formats=[InputFormat.PDF],
            format_options={InputFormat.PDF: PdfFormatOption(pipeline_options=options)},
        )
    return DocumentConverter(
        allowed_formats=[
            InputFormat.DOCX,
            InputFormat.PPTX,
            InputFormat.XLSX,
            InputFormat.CSV,
            InputFormat.MD,
            InputFormat.HTML,
        ]
    )


def _layout_pipeline_options(artifacts_path: str):
    """Standard PDF pipeline options reading models from `artifacts_path`, without OCR.

    Without torch (docling-slim), the layout model runs on ONNX Runtime (weights
    `docling-project--docling-layout-heron-onnx`) and table structure, a torch model, is off.
    """
    from docling.datamodel.object_detection_engine_options import OnnxRuntimeObjectDetectionEngineOptions
    from docling.datamodel.pipeline_options import LayoutObjectDetectionOptions, PdfPipelineOptions

    options = PdfPipelineOptions(artifacts_path=artifacts_path, do_ocr=False, generate_page_images=False)
    if importlib.util.find_spec("torch") is None:
        options.layout_options = LayoutObjectDetectionOptions(engine_options=OnnxRuntimeObjectDetectionEngineOptions())
        options.do_table_structure = False
    return options


def _cache_file(data: bytes, settings: dict) -> Path:
    """Where the cached conversion of these bytes with these settings lives."""
    return _cache_file_of(_sha256(data), settings)


def _cache_file_of(sha256: str, settings: dict) -> Path:
    """Where the cached conversion of the bytes with this SHA-256 lives (so it can be found, and removed, by digest)."""
    digest = hashlib.sha256(sha256.encode("ascii"))
    digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    return get_settings().cache_dir / "docling" / f"{digest.hexdigest()}.json"


def _load_cache_entry(cache_file: Path, max_age_days: float) -> dict | None:
    """The cached conversion, or None when it is missing, expired or unreadable (then it is rewritten)."""
    if not cache_file.is_file():
        return None
    try:
        entry = json.loads(cache_file.read_text(encoding="utf-8"))
        _check_cache_entry(entry)
    except (OSError, ValueError, TypeError, KeyError) as error:
        logger.warning("Ignoring corrupt cache file %s (%s); converting again", cache_file, error)
        return None
    if time.time() - entry["created"] > max_age_days * 86400:
        return None
    entry["pages"] = [(int(page), text) for page, text in entry["pages"]]
    return entry


def _check_cache_entry(entry: dict) -> None:
    """Raise ValueError unless a cache entry has every field with the right type."""
    valid = (
        isinstance(entry, dict)
        and entry.get("cache_version") == CACHE_VERSION
        and isinstance(entry.get("created"), (int, float))
        and all(isinstance(entry.get(key), str) for key in ("converter", "language", "markdown"))
        and isinstance(entry.get("pages"), list)
        and all(
            isinstance(page, list) and len(page) == 2 and isinstance(page[0], int) and isinstance(page[1], str)
            for page in entry["pages"]
        )
    )
    if not valid:
        raise ValueError("unexpected structure")


def _store_cache_entry(cache_file: Path, entry: dict) -> None:
    """Write a cache entry atomically (temporary file, then rename); a write failure only logs a warning."""
    payload = {**entry, "cache_version": CACHE_VERSION, "created": time.time()}
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=cache_file.parent, suffix=".tmp", delete=False
        ) as handle:
            json.dump(payload, handle, ensure_ascii=False)
        os.replace(handle.name, cache_file)
    except OSError as error:
        logger.warning("Could not write cache file %s (%s)", cache_file, error)


def _document_from(path: Path, data: bytes, entry: dict, *, seconds: float, from_cache: bool) -> ConvertedDocument:
    """A `ConvertedDocument` from a conversion (fresh or cached) of the file at `path`, with its warnings logged."""
    warnings = _conversion_warnings(path, entry["pages"])
    for warning in warnings:
        logger.warning("%s", warning)
    return ConvertedDocument(
        source=path.name,
        path=str(path),
        format=format_of(path),
        language=entry["language"],
        sha256=_sha256(data),
        markdown=entry["markdown"],
        pages=list(entry["pages"]),
        converter=entry["converter"],
        seconds=seconds,
        from_cache=from_cache,
        encoding=_encoding_name(entry.get("encoding", "utf-8")),
        warnings=warnings,
    )


def _conversion_warnings(path: Path, pages: Sequence[tuple[int, str]]) -> list[str]:
    """What a reader must know about a conversion that succeeded: the pages of a PDF with no text on them.

    A PDF with no text at all is refused (`EmptyFile`, with the OCR hint); one with some pages that are
    only images (a scanned page inside a text PDF) converts, and those pages are named.
    """
    if format_of(path) != "pdf":
        return []
    empty = [page for page, text in pages if not text.strip()]
    if not empty:
        return []
    return [_pages_without_text_message(path, empty, len(pages))]


def _encoding_name(encoding: object) -> str:
    """A cache entry's encoding as `ConvertedDocument.encoding` ("utf-8" for UTF-8 with or without a BOM)."""
    return "utf-8" if encoding in ("utf-8", "utf-8-sig") or not isinstance(encoding, str) else encoding


def _guard_lines(markdown: str) -> str:
    """Prefix every line except headings outside code fences, so the header splitter keeps it verbatim."""
    guarded: list[str] = []
    fence = ""
    for line in _printable_lines(markdown):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1).startswith(fence) and not opened.group(2).strip():
                fence = ""
        elif opened:
            fence = opened.group(1)
        is_heading = not fence and not opened and _HEADING_LINE.match(line)
        guarded.append(line.strip() if is_heading else _LINE_GUARD + line.rstrip())
    return "\n".join(guarded)


def _printable_lines(markdown: str) -> list[str]:
    """Lines with tabs expanded and Unicode spaces made plain, since the splitter drops non-printables."""
    text = markdown.replace("\r\n", "\n").expandtabs(4)
    text = "".join(" " if unicodedata.category(char) == "Zs" else char for char in text)
    return text.split("\n")


def _unguard_lines(content: str) -> str:
    """Undo `_guard_lines` on a chunk (and the splitter's "  \\n" joins), trimming blank edges."""
    content = content.replace("  \n", "\n")
    lines = [line[1:] if line.startswith(_LINE_GUARD) else line for line in content.split("\n")]
    return "\n".join(lines).strip("\n")


def _only_headings(text: str) -> bool:
    """True when a chunk holds nothing but heading lines (it then joins the chunk after it)."""
    lines = [line for line in text.split("\n") if line.strip()]
    return all(_HEADING_LINE.match(line) for line in lines)


def _merge_headings(open_headings: dict[str, str], found: dict[str, str]) -> dict[str, str]:
    """The heading path of a chunk: headings open from earlier pages above the chunk's own."""
    if not found:
        return dict(open_headings)
    top = min(_heading_level(name) for name in found)
    kept = {name: text for name, text in open_headings.items() if _heading_level(name) < top}
    return dict(sorted({**kept, **found}.items(), key=lambda item: _heading_level(item[0])))


def _heading_level(name: str) -> int:
    """1 for "h1", 2 for "h2", …"""
    return int(name[1:])


def _section_metadata(headings: dict[str, str]) -> dict[str, str]:
    """`section_path` ("Title > Section > Subsection") and `section` (the deepest heading)."""
    path = [text for _name, text in sorted(headings.items(), key=lambda item: _heading_level(item[0]))]
    return {"section_path": " > ".join(path), "section": path[-1] if path else ""}

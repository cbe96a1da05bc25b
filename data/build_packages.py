"""Render the second knowledge base, data/packages/: the READMEs of ten installed packages.

Run from the repository root:

    .venv/bin/python data/build_packages.py            # render, refusing any version not pinned
    .venv/bin/python data/build_packages.py --check    # render in memory, fail if a file would change
    .venv/bin/python data/build_packages.py --repin    # pin the installed versions (then re-check the gold set)
    .venv/bin/python data/build_packages.py --set heldout [--check]   # the benchmark-only third corpus
    .venv/bin/python data/build_packages.py --set heldout2 [--check]  # the benchmark-only fourth corpus

`--set heldout` renders another list of installed packages, `HELDOUT_PACKAGES`, the same way into
benchmarks/corpora/heldout_readmes/ (its own MANIFEST.json, gold questions in
benchmarks/questions/heldout_readmes_gold.jsonl): a corpus no retrieval setting was tuned on, read only by
benchmarks (benchmarks/bench_rerank_fusion.py --corpus heldout), never a course knowledge base. `--set heldout2`
renders a third list, `HELDOUT_2_PACKAGES`, into benchmarks/corpora/heldout_readmes_2/ (gold questions in
benchmarks/questions/heldout_readmes_2_gold.jsonl), a fourth corpus for the same benchmark (--corpus heldout2).

The text is real third-party documentation that nobody wrote for the course: the long description
(README) that each package ships in its metadata (`importlib.metadata.metadata(name)`), so the
build needs no network. data/packages/MANIFEST.json pins every package's version and the SHA-256 of
its description; the build refuses (exit 1, with the fix) when an installed version or description
differs from the pin, so the rendered text never changes silently under the gold set.

Rendering keeps what a reader of the package page sees, as Markdown: headings, paragraphs, lists,
tables and code blocks (copied byte for byte). Images and badges are dropped (a reader sees a
picture, not text), links keep their text, HTML fragments (<p>, <details>, <summary>, <b>, <br>,
<a>, <img>, comments) become the text they show, GitHub alerts (> [!NOTE]) get their label. What was
dropped is counted in the manifest. Afterwards every evidence quote of data/eval/packages_gold.jsonl
is checked against the rendered text. Output is deterministic: the same pins give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

DATA = Path(__file__).resolve().parent
OUT = DATA / "packages"
MANIFEST = OUT / "MANIFEST.json"
GOLD = DATA / "eval" / "packages_gold.jsonl"
RENDERER_VERSION = 1
PACKAGES = (
    "langchain-core",
    "langchain-text-splitters",
    "langgraph",
    "chromadb",
    "docling-core",
    "jupyterlab",
    "ipywidgets",
    "matplotlib",
    "pydantic",
    "llama-cpp-python",
)
# Benchmark-only: READMEs of installed packages that are not in data/packages/ (see `--set heldout`).
HELDOUT_PACKAGES = (
    "fastapi",
    "httpx",
    "uvicorn",
    "tokenizers",
    "rich",
    "typer",
    "huggingface-hub",
    "tiktoken",
    "attrs",
    "pandas",
    "semchunk",
    "rank-bm25",
)
HELDOUT_OUT = DATA.parent / "benchmarks" / "corpora" / "heldout_readmes"
HELDOUT_GOLD = DATA.parent / "benchmarks" / "questions" / "heldout_readmes_gold.jsonl"
# Benchmark-only, a fourth corpus: READMEs of installed packages in neither list above (see `--set heldout2`).
HELDOUT_2_PACKAGES = (
    "aiohttp-retry",
    "annotated-types",
    "mmh3",
    "jupytext",
    "platformdirs",
    "python-multipart",
    "websocket-client",
    "tree-sitter",
    "httpx-sse",
    "nest-asyncio2",
    "uuid-utils",
    "idna",
)
HELDOUT_2_OUT = DATA.parent / "benchmarks" / "corpora" / "heldout_readmes_2"
HELDOUT_2_GOLD = DATA.parent / "benchmarks" / "questions" / "heldout_readmes_2_gold.jsonl"
# --set: (packages, output folder, gold questions checked after the build)
SETS = {
    "packages": (PACKAGES, OUT, GOLD),
    "heldout": (HELDOUT_PACKAGES, HELDOUT_OUT, HELDOUT_GOLD),
    "heldout2": (HELDOUT_2_PACKAGES, HELDOUT_2_OUT, HELDOUT_2_GOLD),
}
CLASSIFIER_LICENCES = {
    "MIT License": "MIT",
    "Apache Software License": "Apache-2.0",
    "BSD License": "BSD",
    "Python Software Foundation License": "PSF-based (Matplotlib License)",
}

_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_EMPTY_LINK = re.compile(r"\[\s*\]\([^)]*\)")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_AUTOLINK = re.compile(r"<((?:https?://|mailto:)[^>\s]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)>")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_INLINE_TAG = re.compile(r"</?(b|strong|i|em|code|a|span|sup|sub|kbd|br|img)\b[^>]*/?>", re.IGNORECASE)
_ALERT = re.compile(r"^(\s*>\s*)\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_PLACEHOLDER = "\ue000"  # stands for a code span while the prose around it is rendered
_SEPARATORS = re.compile(r"^[\s|·•-]*\||\|[\s|·•-]*$")


class BuildError(Exception):
    """A pin, a package or a description that the build cannot accept; the message says the fix."""


@dataclass
class Dropped:
    """What rendering removed from one description, reported in the manifest."""

    images: int = 0
    html_comments: int = 0
    html_tags: int = 0
    link_targets: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Rendered:
    name: str
    version: str
    licence: str
    licence_field: str
    content_type: str
    summary: str
    description_sha256: str
    text: str
    dropped: Dropped = field(default_factory=Dropped)

    @property
    def file(self) -> str:
        return f"{self.name}.md"

    def manifest_entry(self) -> dict:
        return {
            "name": self.name,
            "version": self.version,
            "licence": self.licence,
            "licence_field": self.licence_field,
            "content_type": self.content_type,
            "summary": self.summary,
            "file": self.file,
            "description_sha256": self.description_sha256,
            "sha256": sha256(self.text),
            "characters": len(self.text),
            "dropped": self.dropped.as_dict(),
        }


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def licence_of(meta) -> tuple[str, str]:
    """(licence, which metadata field it came from): License-Expression, a one-line License, or a classifier."""
    if meta.get("License-Expression"):
        return meta["License-Expression"].strip(), "License-Expression"
    declared = (meta.get("License") or "").strip()
    if declared and "\n" not in declared and len(declared) <= 80:
        return declared, "License"
    for classifier in meta.get_all("Classifier") or []:
        if classifier.startswith("License :: "):
            label = classifier.rsplit(" :: ", 1)[-1]
            return CLASSIFIER_LICENCES.get(label, label), "Classifier"
    if declared:
        return declared.splitlines()[0].strip(), "License (first line)"
    raise BuildError(f"{meta['Name']}: its metadata names no licence — the corpus only takes documents with one")


def read_package(name: str) -> tuple[str, str, str, object]:
    """(installed version, content type, description, metadata) of an installed package."""
    try:
        meta = metadata.metadata(name)
    except metadata.PackageNotFoundError:
        raise BuildError(
            f"{name} is not installed — run scripts/setup.sh (it installs requirements.lock), then build again"
        ) from None
    description = meta.get_payload() or meta.get("Description") or ""
    if not description.strip():
        raise BuildError(f"{name} {meta['Version']}: its metadata has no long description (README) to render")
    content_type = (meta.get("Description-Content-Type") or "text/plain").strip()
    return meta["Version"], content_type, description, meta


def render_markdown(markdown: str, dropped: Dropped) -> str:
    """The Markdown a reader sees: code blocks verbatim, HTML and images resolved, links reduced to their text."""
    from markdown_it import MarkdownIt

    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kinds = ["text"] * len(lines)
    parser = MarkdownIt("commonmark").enable("table")
    for token in parser.parse(markdown):
        if token.map is None:
            continue
        start, end = token.map
        if token.type in ("fence", "code_block"):
            kinds[start:end] = ["code"] * (end - start)
        elif token.type == "html_block":
            kinds[start:end] = ["html"] * (end - start)
        elif token.type == "table_open":
            kinds[start:end] = ["table"] * (end - start)
    out: list[str] = []
    index = 0
    while index < len(lines):
        kind = kinds[index]
        if kind == "code":
            out.append(lines[index])
            index += 1
        elif kind == "html":
            end = index
            while end < len(lines) and kinds[end] == "html":
                end += 1
            out.extend(render_html_block("\n".join(lines[index:end]), dropped))
            index = end
        else:
            out.append(render_line(lines[index], dropped, table=kind == "table"))
            index += 1
    return tidy_blank_lines(out)


def render_line(line: str, dropped: Dropped, table: bool = False) -> str:
    """One line of Markdown text with images, link targets and inline HTML resolved (code spans kept)."""
    alert = _ALERT.match(line)
    if alert:
        return f"{alert.group(1)}**{alert.group(2).capitalize()}**"
    spans: list[str] = []

    def protect(match: re.Match) -> str:
        spans.append(match.group(0))
        return f"{_PLACEHOLDER}{len(spans) - 1}{_PLACEHOLDER}"

    rendered = _render_prose(_CODE_SPAN.sub(protect, line), dropped)
    rendered = re.sub(f"{_PLACEHOLDER}(\\d+){_PLACEHOLDER}", lambda match: spans[int(match.group(1))], rendered)
    if not table and rendered != line:
        rendered = _SEPARATORS.sub("", rendered).rstrip()
        if not rendered.strip(" |*"):
            return ""
    return rendered


def _render_prose(text: str, dropped: Dropped) -> str:
    text, comments = _COMMENT.subn("", text)
    dropped.html_comments += comments
    text, images = _IMAGE.subn("", text)
    text, empty_links = _EMPTY_LINK.subn("", text)
    dropped.images += images
    dropped.link_targets += empty_links

    def link_text(match: re.Match) -> str:
        dropped.link_targets += 1
        return match.group(1)

    text = _LINK.sub(link_text, text)
    text = _AUTOLINK.sub(lambda match: match.group(1).removeprefix("mailto:"), text)

    def inline_tag(match: re.Match) -> str:
        tag = match.group(1).lower()
        dropped.html_tags += 1
        if tag == "img":
            dropped.images += 1
            return ""
        if tag == "br":
            return " "
        return {"b": "**", "strong": "**", "i": "_", "em": "_", "code": "`"}.get(tag, "")

    return _INLINE_TAG.sub(inline_tag, text)


def render_html_block(block: str, dropped: Dropped) -> list[str]:
    """The visible text of an HTML block, as Markdown lines (a <summary> becomes a bold line)."""
    from bs4 import BeautifulSoup, Comment

    soup = BeautifulSoup(block, "html.parser")
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        dropped.html_comments += 1
        comment.extract()
    for image in soup.find_all("img"):
        dropped.images += 1
        image.decompose()
    dropped.html_tags += len(soup.find_all(True))
    for tag in soup.find_all(["b", "strong"]):
        tag.replace_with(f"**{tag.get_text()}**")
    for tag in soup.find_all("code"):
        tag.replace_with(f"`{tag.get_text()}`")
    for tag in soup.find_all("br"):
        tag.replace_with("\n")
    for tag in soup.find_all("summary"):
        tag.replace_with(f"\n**{' '.join(tag.get_text().split())}**\n")
    lines = []
    for raw in soup.get_text().split("\n"):
        line = " ".join(html.unescape(raw).split())
        line = _SEPARATORS.sub("", line).strip()
        lines.append(line if line.strip(" |*") else "")
    text = "\n".join(lines).strip("\n")
    if not text:
        return []
    return ["", *re.sub(r"\n{2,}", "\n\n", text).split("\n"), ""]


def tidy_blank_lines(lines: list[str]) -> str:
    """Lines joined, trailing spaces kept only in code, runs of blank lines reduced to one, one final newline."""
    text = "\n".join(lines)
    text = re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", text)
    return text.strip("\n") + "\n"


def render_package(name: str) -> Rendered:
    """Read one installed package's description and render it."""
    version, content_type, description, meta = read_package(name)
    kind = content_type.split(";")[0].strip().lower()
    dropped = Dropped()
    if kind == "text/markdown":
        text = render_markdown(description, dropped)
    elif kind == "text/plain":
        text = description.strip("\n") + "\n"
    else:
        raise BuildError(
            f"{name} {version}: its description is {kind}, which this build cannot render "
            "(only Markdown and plain text) — pin a version with a Markdown README, or add a renderer for it"
        )
    licence, licence_field = licence_of(meta)
    return Rendered(
        name=name,
        version=version,
        licence=licence,
        licence_field=licence_field,
        content_type=content_type,
        summary=(meta.get("Summary") or "").strip(),
        description_sha256=sha256(description),
        text=text,
        dropped=dropped,
    )


def check_pins(rendered: list[Rendered], manifest_path: Path, option: str = "") -> None:
    """Refuse any package whose installed version or description differs from the manifest's pin."""
    if not manifest_path.exists():
        raise BuildError(
            f"{manifest_path} does not exist — run data/build_packages.py{option} --repin to pin the installed versions"
        )
    pinned = {entry["name"]: entry for entry in json.loads(manifest_path.read_text(encoding="utf-8"))["packages"]}
    problems = []
    for item in rendered:
        pin = pinned.get(item.name)
        if pin is None:
            problems.append(f"{item.name}: not pinned in {manifest_path.name}")
        elif pin["version"] != item.version:
            problems.append(
                f"{item.name}: installed {item.version}, pinned {pin['version']} — install the pinned version "
                f"(pip install '{item.name}=={pin['version']}', as requirements.lock says), or re-pin with "
                f"data/build_packages.py{option} --repin and check the gold questions again"
            )
        elif pin["description_sha256"] != item.description_sha256:
            problems.append(
                f"{item.name} {item.version}: its description differs from the pinned one (a rebuilt or patched "
                "package?) — reinstall it from the package index, or re-pin with --repin"
            )
    extra = sorted(set(pinned) - {item.name for item in rendered})
    problems += [f"{name}: pinned in {manifest_path.name} but not one of the corpus packages" for name in extra]
    if problems:
        raise BuildError("the installed packages do not match data/packages/MANIFEST.json:\n  " + "\n  ".join(problems))


def manifest_text(rendered: list[Rendered]) -> str:
    manifest = {
        "description": "READMEs (long descriptions) of installed packages, rendered by data/build_packages.py",
        "renderer_version": RENDERER_VERSION,
        "packages": [item.manifest_entry() for item in rendered],
    }
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def build(
    out: Path = OUT, *, repin: bool = False, write: bool = True, packages: tuple[str, ...] = PACKAGES
) -> dict[str, str]:
    """Render every package; returns {file name: text}, manifest included. Raises `BuildError` on a pin mismatch."""
    rendered = [render_package(name) for name in packages]
    if not repin:
        option = next((f" --set {name}" for name, (listed, *_) in SETS.items() if listed == packages), "")
        check_pins(rendered, out / MANIFEST.name, "" if packages == PACKAGES else option)
    files = {item.file: item.text for item in rendered}
    files[MANIFEST.name] = manifest_text(rendered)
    if write:
        out.mkdir(parents=True, exist_ok=True)
        for stale in {p.name for p in out.glob("*.md")} - set(files):
            (out / stale).unlink()
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
    return files


def check_gold(files: dict[str, str], gold_path: Path = GOLD) -> int:
    """Report gold quotes not found in their rendered sources (compared as a reader sees them); returns the count."""
    sys.path.insert(0, str(DATA.parent))
    from lessons.text.normalise import normalise_for_match

    if not gold_path.exists():
        print(f"  {gold_path.name}: not written yet")
        return 0
    texts = {name: normalise_for_match(text) for name, text in files.items()}
    problems = 0
    for number, line in enumerate(gold_path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        for source in entry["sources"]:
            if source["file"] not in texts:
                print(f"  MISSING FILE {entry['id']} (line {number}): {source['file']}")
                problems += 1
        for quote in entry["evidence"]:
            if not any(normalise_for_match(quote) in texts.get(s["file"], "") for s in entry["sources"]):
                print(f"  MISSING QUOTE {entry['id']} (line {number}): {quote!r}")
                problems += 1
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="render in memory; fail if any committed file would change")
    mode.add_argument("--repin", action="store_true", help="pin the installed versions in MANIFEST.json")
    parser.add_argument("--set", choices=sorted(SETS), default="packages", help="which corpus to render")
    args = parser.parse_args()
    packages, out, gold = SETS[args.set]
    try:
        files = build(out, repin=args.repin, write=not args.check, packages=packages)
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.check:
        changed = [
            name
            for name, text in files.items()
            if not (out / name).exists() or (out / name).read_text(encoding="utf-8") != text
        ]
        if changed:
            rebuild = "data/build_packages.py" + ("" if args.set == "packages" else f" --set {args.set}")
            print(f"error: these files would change: {changed} — run {rebuild}", file=sys.stderr)
            return 1
    for name, text in sorted(files.items()):
        print(f"  {name}: {len(text):,} characters")
    problems = check_gold(files, gold)
    print(f"{len(files) - 1} documents; {problems} gold problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

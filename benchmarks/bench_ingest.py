"""Benchmark document conversion: seconds per page for each format, without the cache.

Usage: `python benchmarks/bench_ingest.py [FOLDER]` (default `data/corpus/`). When the folder has no
supported file, a few sample files are generated in a temporary folder instead. Prints a table and
writes it as JSON to `benchmarks/results/ingest.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, machine
from lessons.ingest import convert_file
from lessons.ingest.files import (
    DOCLING_VERSION,
    SUPPORTED_SUFFIXES,
    ConvertedDocument,
    IngestError,
    format_of,
    list_files,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDER = PROJECT_ROOT / "data" / "corpus"
SAMPLE_PARAGRAPH = (
    "Atlas Server listens on port 7420 by default and serves the hybrid search API. Retrieval combines "
    "BM25 and vector search with reciprocal rank fusion, and every answer cites the passages it used. "
)


def main() -> int:
    """Convert every supported file of a folder, print seconds per page by format, save the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--output", type=Path, default=RESULTS / "ingest.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["AGENTIC_RAG_CACHE_DIR"] = str(Path(scratch) / "cache")
        files = supported_files(args.folder)
        generated = not files
        if generated:
            print(f"No supported files in {args.folder}; generating samples.")
            files = make_samples(Path(scratch) / "samples")
        warm_up(files)
        rows = [row for row in (timed_conversion(path) for path in files) if row]
    report = {
        "machine": machine(),
        "docling": DOCLING_VERSION,
        "folder": display_path(args.folder),
        "generated_samples": generated,
        "formats": by_format(rows),
        "files": rows,
    }
    print(format_table(report["formats"]))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"Wrote {args.output}")
    return 0


def display_path(folder: Path) -> str:
    """The folder relative to the project when it is inside it, else absolute."""
    folder = folder.resolve()
    return str(folder.relative_to(PROJECT_ROOT)) if folder.is_relative_to(PROJECT_ROOT) else str(folder)


def supported_files(folder: Path) -> list[Path]:
    """The folder's files with a supported suffix (none when the folder does not exist)."""
    if not folder.is_dir():
        return []
    return [path for path in list_files(folder) if path.suffix.lower() in SUPPORTED_SUFFIXES]


def warm_up(files: list[Path]) -> None:
    """Convert one file of each format untimed, so Docling's start-up cost is not charged to a file."""
    first_of_format: dict[str, Path] = {}
    for path in files:
        first_of_format.setdefault(format_of(path), path)
    for path in first_of_format.values():
        try:
            convert_file(path, cache=False)
        except IngestError:
            pass


def timed_conversion(path: Path) -> dict | None:
    """One file's conversion time and page count, or None (with a message) when it cannot be converted."""
    try:
        document: ConvertedDocument = convert_file(path, cache=False)
    except IngestError as error:
        print(f"skipped {path.name}: {error}")
        return None
    return {
        "source": document.source,
        "format": document.format,
        "pages": len(document.pages),
        "seconds": round(document.seconds, 4),
        "converter": document.converter,
    }


def by_format(rows: list[dict]) -> dict[str, dict]:
    """Files, pages, seconds and seconds per page, summed by format."""
    totals: dict[str, dict] = defaultdict(lambda: {"files": 0, "pages": 0, "seconds": 0.0})
    for row in rows:
        total = totals[row["format"]]
        total["files"] += 1
        total["pages"] += row["pages"]
        total["seconds"] += row["seconds"]
    return {
        name: {
            **total,
            "seconds": round(total["seconds"], 4),
            "seconds_per_page": round(total["seconds"] / total["pages"], 4),
        }
        for name, total in sorted(totals.items())
    }


def format_table(formats: dict[str, dict]) -> str:
    """The per-format results as a small text table (unpaged formats count one page per file)."""
    lines = [f"{'format':<7} {'files':>5} {'pages':>5} {'seconds':>8} {'s/page':>8}"]
    for name, total in formats.items():
        lines.append(
            f"{name:<7} {total['files']:>5} {total['pages']:>5} {total['seconds']:>8.3f} {total['seconds_per_page']:>8.4f}"
        )
    return "\n".join(lines)


def make_samples(folder: Path) -> list[Path]:
    """A small file of every supported format (a 5-page PDF, a 4-slide deck, …) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    makers = (make_pdf, make_docx, make_pptx, make_xlsx, make_text_files)
    return sorted(path for make in makers for path in make(folder))


def make_pdf(folder: Path) -> list[Path]:
    """A five-page PDF with headings and wrapped paragraphs."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    for page in range(1, 6):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.multi_cell(0, 8, f"Section {page}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for _ in range(6):
            pdf.multi_cell(0, 6, SAMPLE_PARAGRAPH * 3, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    path = folder / "sample.pdf"
    pdf.output(str(path))
    return [path]


def make_docx(folder: Path) -> list[Path]:
    """A DOCX with headings, paragraphs and a table."""
    import docx

    document = docx.Document()
    document.add_heading("Sample handbook", 0)
    for section in range(1, 6):
        document.add_heading(f"Section {section}", 1)
        for _ in range(4):
            document.add_paragraph(SAMPLE_PARAGRAPH * 2)
    table = document.add_table(rows=3, cols=2)
    for row in range(3):
        for column in range(2):
            table.cell(row, column).text = f"cell {row}.{column}"
    path = folder / "sample.docx"
    document.save(path)
    return [path]


def make_pptx(folder: Path) -> list[Path]:
    """A four-slide deck with titles and bullets."""
    from pptx import Presentation

    deck = Presentation()
    for number in range(1, 5):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {number}"
        slide.placeholders[1].text = SAMPLE_PARAGRAPH
    path = folder / "sample.pptx"
    deck.save(path)
    return [path]


def make_xlsx(folder: Path) -> list[Path]:
    """A workbook with a 50-row sheet."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["id", "name", "value"])
    for number in range(50):
        sheet.append([number, f"item {number}", number * 1.5])
    path = folder / "sample.xlsx"
    workbook.save(path)
    return [path]


def make_text_files(folder: Path) -> list[Path]:
    """Markdown, HTML, plain text and CSV samples."""
    sections = "".join(f"## Section {n}\n\n{SAMPLE_PARAGRAPH}\n\n" for n in range(1, 6))
    html_sections = "".join(f"<h2>Section {n}</h2><p>{SAMPLE_PARAGRAPH}</p>" for n in range(1, 6))
    contents = {
        "sample.md": f"# Sample guide\n\n{sections}",
        "sample.html": f"<html><body><nav>Home</nav><h1>Sample page</h1>{html_sections}<footer>(c)</footer></body></html>",
        "sample.txt": (SAMPLE_PARAGRAPH + "\n\n") * 10,
        "sample.csv": "id,name,value\n" + "".join(f"{n},item {n},{n * 1.5}\n" for n in range(50)),
    }
    paths = []
    for name, text in contents.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    sys.exit(main())

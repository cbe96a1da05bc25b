"""Tests of `lessons.ingest` (and `lessons.ingest.pdf_headings`): every input is generated in a temporary folder."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from langchain_core.documents import Document

from lessons.core.settings import get_settings
from lessons.ingest import convert_file
from lessons.ingest import files as ingest
from lessons.ingest.files import (
    CorruptFile,
    DuplicateContent,
    EmptyFile,
    FileTooLarge,
    IngestError,
    IngestLimits,
    NotText,
    NotUtf8,
    PathNotFound,
    TotalSizeExceeded,
    UnsupportedFileType,
    dedupe,
    split_sections,
    to_documents,
    validate_file,
)
from lessons.ingest.pdf_headings import join_wrapped_lines
from lessons.text.language import detect_language
from lessons.text.normalise import normalise_for_match

LONG_PARAGRAPH = (
    "Atlas Server listens on port 7420 by default and serves the hybrid search API to every client in the "
    "network. The configuration lives in the file atlas.yaml, and the setting config_file points to it. "
    "Every answer cites the passages it was built from, so a reader can check each statement in seconds."
)
SECOND_PARAGRAPH = "A short closing paragraph."
PAGE_TWO_TEXT = "The Team tier costs 45 euros per user per month, billed monthly."

HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Support FAQ</title><style>body {color: black}</style></head>
<body>
<nav class="site-nav"><a href="/">Home</a> <a href="/docs">Documentation</a></nav>
<header><p>Tidewell Support Portal</p></header>
<div class="breadcrumb">Home / Support / FAQ</div>
<div class="cookie-banner">We use cookies to improve your experience. Accept all</div>
<h1>Support FAQ</h1>
<p>How do I reset my_password? Use the sign-in page.</p>
<h2>Billing</h2>
<p>Annual billing gives a 15% discount.</p>
<footer>Copyright 2026 Tidewell Analytics</footer>
<script>console.log("tracking")</script>
</body></html>
"""

MARKDOWN_WITH_CODE = """# Admin Guide

Intro paragraph about the_config_key.

## Configuration

Edit the file below.

```yaml
# atlas.yaml: main settings
# Second comment line
server:
  port: 7420
```

## Backups

Run backups nightly.
"""


def make_pdf(path: Path) -> Path:
    """A two-page PDF: bold 22 pt title, 16 pt headings, a wrapping paragraph, code, a table, a page footer."""
    from fpdf import FPDF

    class PdfWithFooter(FPDF):
        def footer(self):
            self.set_y(-12)
            self.set_font("Helvetica", "", 8)
            self.cell(0, 6, f"Atlas White Paper  |  page {self.page_no()}", align="C")

    pdf = PdfWithFooter(format="A4")
    pdf.set_auto_page_break(True, margin=20)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 22)
    pdf.multi_cell(0, 11, "Atlas White Paper", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 8, "Architecture", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, LONG_PARAGRAPH, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.multi_cell(0, 6, SECOND_PARAGRAPH, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.set_font("Courier", "", 9)
    pdf.multi_cell(0, 4.5, "# atlas.yaml\nserver:\n  port: 7420", new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 8, "Pricing", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, PAGE_TWO_TEXT, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.set_font("Helvetica", "", 9)
    with pdf.table(text_align="LEFT") as table:
        for cells in (("Tier", "Price"), ("Team", "45 euros"), ("Business", "89 euros")):
            table.row(cells)
    pdf.output(str(path))
    return path


def make_docx(path: Path) -> Path:
    """A DOCX with a title, headings, an underscore, an image and a table."""
    import docx
    from docx.shared import Inches
    from PIL import Image

    image = path.with_suffix(".png")
    Image.new("RGB", (8, 8), "red").save(image)
    document = docx.Document()
    document.add_heading("Employee Handbook", 0)
    document.add_heading("Annual leave", 1)
    document.add_paragraph("Employees get 28 days of annual_leave per year.")
    document.add_picture(str(image), width=Inches(0.3))
    document.add_heading("Carry over", 2)
    document.add_paragraph("Up to five days carry over into the next year.")
    table = document.add_table(rows=2, cols=2)
    for (row, column), text in {(0, 0): "Tier", (0, 1): "Price", (1, 0): "Team", (1, 1): "45"}.items():
        table.cell(row, column).text = text
    document.save(path)
    return path


def make_pptx(path: Path) -> Path:
    """A three-slide deck: title slide, bullet slide, table slide."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "Q3 Business Review"
    slide.placeholders[1].text = "Tidewell Analytics"
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Highlights"
    slide.placeholders[1].text = "ARR reached 18.4 million euros"
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Metrics"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, column), text in {(0, 0): "Metric", (0, 1): "Value", (1, 0): "NPS", (1, 1): "47"}.items():
        table.cell(row, column).text = text
    deck.save(path)
    return path


def make_xlsx(path: Path) -> Path:
    """A one-sheet workbook."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["tier", "price"])
    sheet.append(["Business", 89])
    workbook.save(path)
    return path


def write(path: Path, content: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to a file and return its path."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, Path]:
    """One generated file per supported format."""
    folder = tmp_path_factory.mktemp("samples")
    return {
        "pdf": make_pdf(folder / "atlas_whitepaper.pdf"),
        "docx": make_docx(folder / "employee_handbook.docx"),
        "pptx": make_pptx(folder / "business_review.pptx"),
        "xlsx": make_xlsx(folder / "prices.xlsx"),
        "html": write(folder / "support_faq.html", HTML_PAGE),
        "htm": write(folder / "legacy_page.htm", HTML_PAGE.replace("Support FAQ", "Legacy FAQ")),
        "md": write(folder / "admin_guide.md", MARKDOWN_WITH_CODE),
        "txt": write(folder / "meeting_notes.txt", "Meeting notes\n\nThe team agreed to ship 4.2.1 on Tuesday.\n"),
        "csv": write(folder / "tiers.csv", "tier,price\nTeam,45\nBusiness,89\n"),
    }


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A fresh conversion cache for every test."""
    monkeypatch.setenv("AGENTIC_RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DOCLING_ARTIFACTS_PATH", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "cache"
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def converted(samples) -> dict[str, ingest.ConvertedDocument]:
    """Every sample converted once, without the cache."""
    return {kind: convert_file(path, cache=False) for kind, path in samples.items()}


EXPECTED_TEXT = {
    "pdf": ["# Atlas White Paper", "## Architecture", "## Pricing", "config_file"],
    "docx": ["# Employee Handbook", "## Annual leave", "### Carry over", "annual_leave", "| Team"],
    "pptx": ["# Q3 Business Review", "## Highlights", "ARR reached 18.4 million euros", "| NPS"],
    "xlsx": ["Business", "89"],
    "html": ["# Support FAQ", "## Billing", "my_password"],
    "htm": ["# Legacy FAQ", "## Billing"],
    "md": ["# Admin Guide", "## Configuration", "# atlas.yaml: main settings", "the_config_key"],
    "txt": ["Meeting notes", "ship 4.2.1 on Tuesday"],
    "csv": ["| Team", "89"],
}


@pytest.mark.parametrize("kind", sorted(EXPECTED_TEXT))
def test_each_format_converts_with_its_headings_and_text(converted, samples, kind):
    document = converted[kind]
    assert document.format == ("html" if kind == "htm" else kind)
    assert document.source == samples[kind].name
    assert Path(document.path).is_absolute()
    assert document.language == "en"
    assert len(document.sha256) == 64
    assert document.from_cache is False
    for text in EXPECTED_TEXT[kind]:
        assert text in document.markdown, f"{text!r} missing from {kind} Markdown:\n{document.markdown}"


def test_converter_names(converted):
    assert converted["pdf"].converter.endswith("/native-pdf+font-headings")
    assert converted["docx"].converter.startswith("docling-") and converted["docx"].converter.endswith("/standard")
    assert converted["txt"].converter == "plain-text"


def test_pdf_headings_recovered_by_font_size_and_pages_numbered(converted):
    pdf = converted["pdf"]
    assert [page for page, _text in pdf.pages] == [1, 2]
    page_one, page_two = (text for _page, text in pdf.pages)
    assert page_one.startswith("# Atlas White Paper\n\n## Architecture\n\n")
    assert page_two.startswith("## Pricing\n\n")
    sections = split_sections(to_documents([pdf]))
    assert [(chunk.metadata["page"], chunk.metadata["section_path"]) for chunk in sections] == [
        (1, "Atlas White Paper > Architecture"),
        (2, "Atlas White Paper > Pricing"),
    ]


def test_pdf_wrapped_paragraph_is_joined_into_one_line(converted):
    page_one = converted["pdf"].pages[0][1]
    assert LONG_PARAGRAPH in page_one.splitlines()
    assert SECOND_PARAGRAPH in page_one.splitlines()


def test_pdf_code_block_and_table_recovered(converted):
    pdf = converted["pdf"]
    assert "```\n# atlas.yaml\nserver:\n  port: 7420\n```" in pdf.pages[0][1]
    assert "| Tier | Price |\n| --- | --- |\n| Team | 45 euros |\n| Business | 89 euros |" in pdf.pages[1][1]


def test_pdf_running_footer_is_dropped(converted):
    assert "page 1" not in converted["pdf"].markdown and "page 2" not in converted["pdf"].markdown


def test_underscores_are_not_escaped(converted):
    for kind in ("pdf", "docx", "html", "md"):
        assert "\\_" not in converted[kind].markdown, kind


def test_image_placeholders_are_removed(converted):
    assert "<!-- image -->" not in converted["docx"].markdown
    assert "\n\n\n" not in converted["docx"].markdown


def test_html_site_chrome_is_stripped(converted):
    markdown = converted["html"].markdown
    for chrome in ("Documentation", "Tidewell Support Portal", "Home / Support", "cookies", "Copyright", "tracking"):
        assert chrome not in markdown
    assert "Annual billing gives a 15% discount." in markdown


def test_strip_html_chrome_keeps_main_content():
    stripped = ingest.strip_html_chrome(HTML_PAGE)
    assert "cookie-banner" not in stripped and "<nav" not in stripped and "<footer" not in stripped
    assert "How do I reset my_password?" in stripped


def test_fenced_code_comments_are_not_split_as_headings(converted):
    chunks = split_sections(to_documents([converted["md"]]))
    assert [chunk.metadata["section_path"] for chunk in chunks] == [
        "Admin Guide",
        "Admin Guide > Configuration",
        "Admin Guide > Backups",
    ]
    configuration = chunks[1].page_content
    assert "# atlas.yaml: main settings\n# Second comment line\nserver:\n  port: 7420" in configuration
    assert all("atlas.yaml" not in chunk.metadata["section"] for chunk in chunks)


def test_split_sections_on_raw_markdown_with_tilde_fence_and_blank_lines():
    text = "# Title\n\n## Part\n\nFirst paragraph.\n\nSecond paragraph.\n\n~~~\n## not a heading\n~~~\n"
    chunks = split_sections([Document(page_content=text, metadata={"source": "a.md", "page": None})])
    assert len(chunks) == 1
    assert chunks[0].metadata["section_path"] == "Title > Part"
    assert chunks[0].metadata["section"] == "Part"
    assert chunks[0].page_content == (
        "# Title\n\n## Part\n\nFirst paragraph.\n\nSecond paragraph.\n\n~~~\n## not a heading\n~~~"
    )


def test_split_sections_carries_the_section_across_pdf_pages():
    pages = [
        Document(page_content="# Guide\n\n## Setup\n\nStep one.", metadata={"source": "g.pdf", "page": 1}),
        Document(page_content="Step two continues.\n\n### Detail\n\nMore.", metadata={"source": "g.pdf", "page": 2}),
    ]
    chunks = split_sections(pages)
    assert [(chunk.metadata["page"], chunk.metadata["section_path"]) for chunk in chunks] == [
        (1, "Guide > Setup"),
        (2, "Guide > Setup"),
        (2, "Guide > Setup > Detail"),
    ]
    assert chunks[1].metadata["section"] == "Setup"


def test_to_documents_pages_for_pdf_and_pptx_only(converted):
    documents = to_documents([converted["pdf"], converted["pptx"], converted["docx"]])
    pages = [(document.metadata["source"], document.metadata["page"]) for document in documents]
    assert pages == [
        ("atlas_whitepaper.pdf", 1),
        ("atlas_whitepaper.pdf", 2),
        ("business_review.pptx", 1),
        ("business_review.pptx", 2),
        ("business_review.pptx", 3),
        ("employee_handbook.docx", None),
    ]
    assert set(documents[0].metadata) == {"source", "page", "format", "language", "sha256"}


def test_unsupported_file_type_names_file_and_supported_suffixes(tmp_path):
    path = write(tmp_path / "notes.rtf", "{\\rtf1 hello}")
    with pytest.raises(UnsupportedFileType) as error:
        validate_file(path)
    assert str(error.value).startswith("'notes.rtf' — supported: .pdf .docx .pptx .html .md .txt .xlsx .csv")


@pytest.mark.parametrize(
    ("name", "content", "error_type", "fix"),
    [
        ("empty.md", b"", EmptyFile, "add content"),
        ("blank.txt", b"  \n\n ", EmptyFile, "add content"),
        ("noise.txt", bytes([0x81, 0xFF, 0xFE, 0x80, 0x90]) * 20, NotUtf8, "export it as UTF-8"),
        ("zipped.md", b"PK\x03\x04\x14\x00\x00\x00binary\x00\xff\x10", NotText, "suffix of its real format"),
        ("broken.docx", b"this is not a zip archive", CorruptFile, "save it again"),
        ("broken.pdf", b"hello, I am not a PDF", CorruptFile, "export it again"),
        ("truncated.pdf", b"%PDF-1.7\n1 0 obj\n<<", CorruptFile, "save it again"),
    ],
)
def test_each_error_names_the_file_and_the_fix(tmp_path, name, content, error_type, fix):
    path = write(tmp_path / name, content)
    with pytest.raises(error_type) as error:
        convert_file(path, cache=False)
    assert f"'{name}'" in str(error.value)
    assert fix in str(error.value)


def test_bytes_no_encoding_explains_say_how_to_resave_without_guessing_a_codec(tmp_path):
    path = write(tmp_path / "notes.csv", b"name,city\n" + bytes([0x81, 0xFF, 0xFE, 0x80, 0x90]) * 20)
    with pytest.raises(NotUtf8) as error:
        validate_file(path)
    message = str(error.value)
    assert "'notes.csv'" in message and "offset 10" in message and "UTF-8" in message
    assert "WINDOWS-1252" not in message, "never suggest a codec that was not detected"


CHINESE = (
    "员工每年有 27 天年假，未用完的假期最多可结转 5 天，须在次年 4 月 30 日前使用。报销须在费用发生后 30 天内提交。"
)
TRADITIONAL = (
    "員工每年有 27 天年假，未用完的假期最多可結轉 5 天，須在次年 4 月 30 日前使用。報銷須在費用發生後 30 天內提交。"
)
JAPANESE = "従業員は毎年27日の年次有給休暇を取得できます。未使用の休暇は最大5日まで繰り越すことができます。"
FRENCH = "Le café est très bon à Paris, où l'on déjeune près de la fenêtre."


@pytest.mark.parametrize(
    ("name", "text", "codec", "label", "language"),
    [
        ("gbk.txt", CHINESE, "gbk", "GB18030", "zh"),  # GB18030 is the superset of GBK: the same bytes, same text
        ("gb18030.md", CHINESE + "𠀀", "gb18030", "GB18030", "zh"),
        ("big5.txt", TRADITIONAL, "big5", "BIG5", "zh"),
        ("sjis.txt", JAPANESE, "shift_jis", "CP932", "zh"),  # detect_language counts kanji as CJK
        ("latin1.txt", "caf\u00e9 au lait", "latin-1", "WINDOWS-1252", "en"),
        ("french.md", FRENCH, "latin-1", "WINDOWS-1252", "en"),
        ("utf16.txt", "Hello, this is UTF-16 text without a byte-order mark.", "utf-16-le", "UTF-16LE", "en"),
    ],
)
def test_text_in_another_encoding_is_decoded_correctly_and_named(tmp_path, name, text, codec, label, language):
    write(tmp_path / name, text.encode(codec))
    result = ingest.ingest(tmp_path, progress=False, cache=False)
    (document,) = result.documents
    assert document.markdown == text and document.language == language
    assert f"{name}: {label}" in result.summary() and "not UTF-8" in result.summary()


def test_a_non_utf8_csv_and_html_are_decoded_before_docling_reads_them(tmp_path):
    write(tmp_path / "cities.csv", "name,city\nJosé,Lisboa\nZoë,Köln\n".encode("latin-1"))
    write(tmp_path / "page.html", f"<html><body><h1>年假</h1><p>{CHINESE}</p></body></html>".encode("gb18030"))
    result = ingest.ingest(tmp_path, progress=False, cache=False)
    by_name = {document.source: document for document in result.documents}
    assert "José" in by_name["cities.csv"].markdown and "Köln" in by_name["cities.csv"].markdown
    assert CHINESE in by_name["page.html"].markdown and by_name["page.html"].language == "zh"
    assert by_name["page.html"].encoding == "gb18030" and not result.skipped


def test_mojibake_from_the_wrong_codec_is_refused_with_the_real_encoding(tmp_path):
    # what `iconv -f WINDOWS-1252` made of a GBK file (the old advice): valid UTF-8, Chinese garbled
    garbled = "".join(
        chr(b) if b in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else bytes([b]).decode("cp1252") for b in CHINESE.encode("gbk")
    )
    path = write(tmp_path / "garbled.txt", garbled.encode("utf-8"))
    with pytest.raises(NotUtf8) as error:
        validate_file(path)
    message = str(error.value)
    assert "'garbled.txt'" in message and "mojibake" in message and "iconv -f GB18030" in message
    write(tmp_path / "twice.md", CHINESE.encode("utf-8").decode("latin-1").encode("utf-8"))  # UTF-8 read as Latin-1
    with pytest.raises(NotUtf8, match="were UTF-8"):
        validate_file(tmp_path / "twice.md")


def test_accented_utf8_text_is_not_taken_for_mojibake(tmp_path):
    write(tmp_path / "fr.md", ("# Menu\n\n" + FRENCH + " Élève, garçon, naïve, Ærø, Øresund.").encode("utf-8"))
    (document,) = ingest.ingest(tmp_path, progress=False, cache=False).documents
    assert "Élève" in document.markdown and document.encoding == "utf-8"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"Looks like text\x00\x00\x00 but has NUL bytes \x00\x01\x02", "NUL bytes"),
        (bytes(range(1, 9)) * 40 + b"some words", "control characters"),
    ],
)
def test_binary_data_with_a_text_suffix_is_refused(tmp_path, content, fragment):
    path = write(tmp_path / "data.txt", content)
    with pytest.raises(NotText, match=fragment):
        validate_file(path)


def test_file_too_large_names_size_limit_and_how_to_raise_it(tmp_path):
    path = write(tmp_path / "big.txt", "x" * 3000)
    with pytest.raises(FileTooLarge) as error:
        validate_file(path, IngestLimits(max_file_bytes=1000))
    message = str(error.value)
    assert "'big.txt'" in message and "limit" in message and "IngestLimits(max_file_bytes=" in message


def test_missing_file_is_an_ingest_error(tmp_path):
    with pytest.raises(IngestError, match="'gone.pdf' does not exist"):
        validate_file(tmp_path / "gone.pdf")


def test_a_missing_folder_is_reported_as_missing_not_as_an_unsupported_type(tmp_path):
    result = ingest.ingest(tmp_path / "no_such_folder", progress=False)
    (skipped,) = result.skipped
    assert skipped.reason.startswith("PathNotFound: 'no_such_folder' does not exist") and not result.documents
    with pytest.raises(PathNotFound):
        validate_file(tmp_path / "no_such_folder")


def test_file_too_large_by_one_byte_shows_bytes_not_two_equal_rounded_sizes(tmp_path):
    limit = 2**20
    path = write(tmp_path / "big.md", b"x" * (limit + 1))
    with pytest.raises(FileTooLarge) as error:
        validate_file(path, IngestLimits(max_file_bytes=limit))
    message = str(error.value)
    assert "1,048,577 bytes" in message and "1,048,576 bytes" in message
    assert "IngestLimits(max_file_bytes=2 * 2**20)" in message


def test_links_that_leave_the_folder_are_refused_and_dangling_ones_listed(tmp_path):
    folder, outside = tmp_path / "docs", tmp_path / "private"
    folder.mkdir(), outside.mkdir()
    write(outside / "secret.md", "# Secret\n\nOutside the folder.\n")
    write(folder / "inside.md", "# Inside\n\nIn the folder.\n")
    (folder / "leak.md").symlink_to(outside / "secret.md")
    (folder / "gone.md").symlink_to(folder / "deleted.md")
    (folder / "linked_dir").symlink_to(outside, target_is_directory=True)
    result = ingest.ingest(folder, progress=False, cache=False)
    assert [document.source for document in result.documents] == ["inside.md"]
    reasons = {Path(item.path).name: item.reason for item in result.skipped}
    assert (
        reasons["leak.md"].startswith("LinkOutsideFolder: 'leak.md' is a symbolic link to")
        and "copy the file" in reasons["leak.md"]
    )
    assert reasons["gone.md"].startswith("DanglingLink: 'gone.md'") and "remove the link" in reasons["gone.md"]
    assert reasons["linked_dir"].startswith("LinkOutsideFolder")
    assert "Outside the folder" not in "".join(document.markdown for document in result.documents)


def test_one_bad_file_does_not_stop_the_others(tmp_path, samples):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for kind in ("docx", "md", "txt"):
        (folder / samples[kind].name).write_bytes(samples[kind].read_bytes())
    write(folder / "corrupt.pptx", b"PK not really a zip")
    write(folder / "notes.rtf", "{\\rtf1}")
    write(folder / ".hidden.txt", "hidden files are ignored")
    result = ingest.ingest(folder, progress=False)
    assert sorted(document.source for document in result.documents) == [
        "admin_guide.md",
        "employee_handbook.docx",
        "meeting_notes.txt",
    ]
    reasons = {Path(item.path).name: item.reason for item in result.skipped}
    assert set(reasons) == {"corrupt.pptx", "notes.rtf"}
    assert reasons["corrupt.pptx"].startswith("CorruptFile: 'corrupt.pptx'")
    assert reasons["notes.rtf"].startswith("UnsupportedFileType: 'notes.rtf'")
    summary = result.summary()
    assert "Converted 3 file(s) (0 from cache)" in summary and "Skipped 2 file(s)" in summary
    assert "corrupt.pptx: CorruptFile" in summary


def test_duplicate_content_keeps_the_first_name_and_names_both(tmp_path):
    write(tmp_path / "b_copy.md", "# Same\n\nIdentical bytes.\n")
    write(tmp_path / "a_original.md", "# Same\n\nIdentical bytes.\n")
    result = ingest.ingest(tmp_path, progress=False, cache=False)
    assert [document.source for document in result.documents] == ["a_original.md"]
    (skipped,) = result.skipped
    assert Path(skipped.path).name == "b_copy.md"
    assert skipped.reason.startswith(DuplicateContent.__name__)
    assert "'b_copy.md'" in skipped.reason and "'a_original.md'" in skipped.reason


def test_total_size_limit_skips_the_files_past_it(tmp_path):
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path / name, f"{name} " * 100)
    result = ingest.ingest(tmp_path, progress=False, cache=False, limits=IngestLimits(max_total_bytes=1200))
    assert [document.source for document in result.documents] == ["a.txt", "b.txt"]
    (skipped,) = result.skipped
    assert skipped.reason.startswith(TotalSizeExceeded.__name__) and "'c.txt'" in skipped.reason
    assert "IngestLimits(max_total_bytes=" in skipped.reason


def test_ingest_accepts_a_list_of_paths(samples):
    result = ingest.ingest([samples["txt"], samples["csv"]], progress=False, cache=False)
    assert [document.source for document in result.documents] == ["meeting_notes.txt", "tiers.csv"]


def test_second_conversion_comes_from_the_cache(samples, cache_dir):
    first = convert_file(samples["docx"])
    second = convert_file(samples["docx"])
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.seconds == 0.0 and first.seconds > 0
    assert (second.markdown, second.pages, second.converter) == (first.markdown, first.pages, first.converter)
    (entry,) = (cache_dir / "docling").glob("*.json")
    assert json.loads(entry.read_text(encoding="utf-8"))["markdown"] == first.markdown
    assert not list((cache_dir / "docling").glob("*.tmp"))


def test_paged_document_round_trips_through_the_cache(samples):
    first = convert_file(samples["pdf"])
    second = convert_file(samples["pdf"])
    assert second.from_cache and second.pages == first.pages


def test_changed_bytes_miss_the_cache(tmp_path):
    path = write(tmp_path / "notes.md", "# Notes\n\nFirst version.\n")
    assert convert_file(path).from_cache is False
    write(path, "# Notes\n\nSecond version.\n")
    changed = convert_file(path)
    assert changed.from_cache is False and "Second version." in changed.markdown


def test_corrupt_cache_file_is_ignored_and_rewritten(tmp_path, cache_dir, caplog):
    path = write(tmp_path / "notes.md", "# Notes\n\nCached text.\n")
    first = convert_file(path)
    (entry,) = (cache_dir / "docling").glob("*.json")
    entry.write_text("{ this is not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="lessons.ingest"):
        recovered = convert_file(path)
    assert recovered.from_cache is False and recovered.markdown == first.markdown
    assert "corrupt cache file" in caplog.text
    assert json.loads(entry.read_text(encoding="utf-8"))["markdown"] == first.markdown
    assert convert_file(path).from_cache is True


def test_expired_cache_entry_is_converted_again(tmp_path, cache_dir):
    path = write(tmp_path / "notes.md", "# Notes\n\nSome text.\n")
    convert_file(path)
    (entry,) = (cache_dir / "docling").glob("*.json")
    payload = json.loads(entry.read_text(encoding="utf-8"))
    payload["created"] -= 31 * 86400
    entry.write_text(json.dumps(payload), encoding="utf-8")
    assert convert_file(path).from_cache is False
    assert convert_file(path).from_cache is True
    assert convert_file(path, cache_max_age_days=0).from_cache is False


def test_cache_disabled_writes_nothing(samples, cache_dir):
    convert_file(samples["txt"], cache=False)
    assert not (cache_dir / "docling").exists()


def test_layout_pipeline_failure_falls_back_to_native_pdf(samples, tmp_path, monkeypatch):
    artifacts = tmp_path / "models"
    artifacts.mkdir()
    (artifacts / "README").write_text("no weights here")
    monkeypatch.setenv("DOCLING_ARTIFACTS_PATH", str(artifacts))
    assert ingest.layout_artifacts_path() == artifacts
    document = convert_file(samples["pdf"], cache=False)
    assert document.converter.endswith("/native-pdf+font-headings")
    assert "## Pricing" in document.markdown


def test_dedupe_drops_repeated_chunks_across_files():
    documents = [
        Document(page_content="Atlas  listens on\nport 7420.", metadata={"source": "a.md"}),
        Document(page_content="Something else.", metadata={"source": "a.md"}),
        Document(page_content="Atlas listens on port 7420.", metadata={"source": "b.docx"}),
    ]
    kept, dropped = dedupe(documents)
    assert dropped == 1
    assert [document.metadata["source"] for document in kept] == ["a.md", "a.md"]
    assert all(len(document.metadata["chunk_id"]) == 16 for document in kept)
    assert "chunk_id" not in documents[0].metadata


def test_detect_language():
    assert detect_language("Tidewell Atlas is a self-hosted search platform.") == "en"
    assert detect_language("潮汐 Atlas 是潮汐分析推出的企业知识检索平台，支持 BM25 和向量检索。") == "zh"
    assert detect_language("Atlas Server 默认端口 7420") == "zh"
    assert detect_language("") == "en"


def test_chinese_documents_are_detected(tmp_path):
    path = write(tmp_path / "faq_zh.md", "# 常见问题\n\n潮汐 Atlas 是企业知识检索与检索增强生成平台。\n")
    assert convert_file(path, cache=False).language == "zh"


def test_normalise_for_match():
    markdown = (
        "The **Team** tier costs \\_€45\\_ per *user*:\n| Team | `config_file` | [docs](http://x) |\n|---|---|---|"
    )
    assert normalise_for_match(markdown) == "The Team tier costs _€45_ per user: Team config_file docs"
    assert normalise_for_match("## Annual  leave\n\nsnake_case_word") == "Annual leave snake_case_word"
    assert normalise_for_match("ＡＴＬＡＳ\u00a04.2") == "ATLAS 4.2"


def test_normalise_for_match_keeps_underscores_inside_identifiers():
    quote = "For example, ATLAS__RETRIEVAL__TOP_N=10 overrides retrieval.top_n."
    document = "For example, `ATLAS__RETRIEVAL__TOP_N=10` overrides `retrieval.top_n`."
    assert normalise_for_match(quote) == normalise_for_match(document) == quote


def test_docling_inline_spacing_is_tidied():
    docling_style = "Run `atlasctl reload` . Then **bold** , see [docs](http://x/) . Also ( `c` )."
    assert (
        ingest.tidy_inline_spacing(docling_style)
        == "Run `atlasctl reload`. Then **bold**, see [docs](http://x/). Also (`c`)."
    )
    code = "```\nf( `x` ) .\n```"
    assert ingest.tidy_inline_spacing(code) == code


def test_markdown_is_kept_as_written(tmp_path):
    source = "# Title\n\n```yaml\n# a comment\nport: 7420\n```\n\n$$\nRRF(d) = \\sum_r 1 / (k + r(d))\n$$\n\nA_b & c.\n"
    converted = convert_file(write(tmp_path / "kept.md", source), cache=False)
    assert converted.markdown == source.strip()
    assert converted.converter == "markdown-as-is"


def test_join_wrapped_lines():
    assert join_wrapped_lines(["a self-", "hosted platform"]) == "a self-hosted platform"
    assert join_wrapped_lines(["检索增强", "生成平台"]) == "检索增强生成平台"
    assert join_wrapped_lines(["port 7420 by", "default"]) == "port 7420 by default"


def test_cache_dir_follows_settings(tmp_path, samples, monkeypatch):
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("AGENTIC_RAG_CACHE_DIR", str(other))
    get_settings.cache_clear()
    convert_file(samples["csv"])
    assert len(list((other / "docling").glob("*.json"))) == 1
    assert os.environ["AGENTIC_RAG_CACHE_DIR"] == str(other)


# --- the doors: the bytes converted are the bytes cached --------------------------------------------------


@pytest.mark.parametrize("kind", ["docx", "xlsx", "csv"])
def test_a_file_replaced_during_conversion_never_poisons_the_cache(tmp_path, samples, monkeypatch, kind):
    """The conversion reads the file once and converts those bytes: a replacement mid-way changes nothing."""
    original = tmp_path / f"original.{kind}"
    original.write_bytes(samples[kind].read_bytes())
    if kind == "docx":
        import docx

        document = docx.Document()
        document.add_paragraph("Quince harvest: 7 kg.")
        document.save(tmp_path / "other.docx")
    elif kind == "xlsx":
        import openpyxl

        workbook = openpyxl.Workbook()
        workbook.active.append(["Quince", 7])
        workbook.save(tmp_path / "other.xlsx")
    else:
        write(tmp_path / "other.csv", "fruit,kg\nQuince,7\n")
    replacement_bytes = (tmp_path / f"other.{kind}").read_bytes()
    real_converter = ingest._docling_converter

    class ReplacingConverter:
        """Docling's converter, with the file on disk replaced just before it reads."""

        def __init__(self, inner):
            self.inner = inner

        def convert(self, source, *args, **kwargs):
            original.write_bytes(replacement_bytes)
            return self.inner.convert(source, *args, **kwargs)

    monkeypatch.setattr(ingest, "_docling_converter", lambda *a: ReplacingConverter(real_converter(*a)))
    expected = {"docx": "annual_leave", "xlsx": "Business", "csv": "Business"}[kind]
    first = convert_file(original)
    assert expected in first.markdown and "Quince" not in first.markdown
    monkeypatch.setattr(ingest, "_docling_converter", real_converter)
    restored = tmp_path / f"restored.{kind}"
    restored.write_bytes(samples[kind].read_bytes())
    again = convert_file(restored)
    assert again.from_cache and expected in again.markdown and "Quince" not in again.markdown


def test_a_text_file_changing_while_it_is_read_is_refused(tmp_path, monkeypatch):
    path = write(tmp_path / "notes.md", "# Notes\n\nFirst version.\n")
    real_read = ingest._read_bytes

    def read_then_rewrite(file):
        data = real_read(file)
        file.write_text("# Notes\n\nA much longer second version of the notes.\n", encoding="utf-8")
        return data

    monkeypatch.setattr(ingest, "_read_bytes", read_then_rewrite)
    with pytest.raises(IngestError, match="changed while it was being read"):
        convert_file(path)


def test_a_one_line_heading_of_2_mb_is_capped_with_a_warning_and_its_text_kept(tmp_path, caplog):
    path = write(tmp_path / "wall.md", "# " + "endless heading words " * 95_000)
    with caplog.at_level(logging.WARNING, logger="lessons.ingest"):
        document = convert_file(path, cache=False)
    sections = split_sections(to_documents([document]))
    assert all(len(s.metadata.get("section", "")) <= ingest.MAX_HEADING_CHARS for s in sections)
    assert sum(len(s.page_content) for s in sections) > 2_000_000  # the text is kept, as body text
    assert "wall.md" in caplog.text and "heading" in caplog.text


def make_pdf_with_an_image_page(path: Path) -> Path:
    """A three-page PDF: text, a page that is only an image (a scanned page), text."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    scan = path.with_suffix(".png")
    image = Image.new("RGB", (600, 800), "white")
    ImageDraw.Draw(image).text((40, 40), "The Team tier costs 45 euros per user per month.", fill="black")
    image.save(scan)
    pdf = FPDF(format="A4")
    for page in (1, 2, 3):
        pdf.add_page()
        if page == 2:
            pdf.image(str(scan), x=10, y=10, w=190)
            continue
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, f"Page {page} text. " + LONG_PARAGRAPH, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def test_an_image_only_page_inside_a_text_pdf_is_named_in_a_warning(tmp_path, caplog):
    path = make_pdf_with_an_image_page(tmp_path / "mixed.pdf")
    with caplog.at_level(logging.WARNING, logger="lessons.ingest"):
        document = convert_file(path)
    assert [page for page, text in document.pages if not text.strip()] == [2]
    (warning,) = document.warnings
    assert "'mixed.pdf'" in warning and "page(s) 2 " in warning and "1 of 3" in warning and "ocrmypdf" in warning
    assert warning in caplog.text
    again = convert_file(path)  # from the cache: still said
    assert again.from_cache and again.warnings == [warning]
    summary = ingest.ingest([path], progress=False).summary()
    assert "1 warning(s):" in summary and warning in summary
    assert convert_file(make_pdf(tmp_path / "text_only.pdf"), cache=False).warnings == []


def make_docx_with_a_tracked_move(path: Path) -> Path:
    """A DOCX where Word tracked a move: a sentence moved from the first paragraph to the last (w:moveFrom/w:moveTo)."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    first = document.add_paragraph("Opening paragraph.")
    document.add_paragraph("Middle paragraph about the licence server.")
    last = document.add_paragraph("Closing paragraph.")
    for number, (paragraph, kind) in enumerate(((first, "w:moveFrom"), (last, "w:moveTo"))):
        wrapper = OxmlElement(kind)
        for name, value in (("w:id", str(number + 10)), ("w:author", "Editor"), ("w:date", "2026-11-30T10:00:00Z")):
            wrapper.set(qn(name), value)
        run = paragraph.add_run(" The moved sentence names port 7420.")
        run._r.addprevious(wrapper)
        wrapper.append(run._r)
    document.save(path)
    return path


def test_docx_moved_text_appears_once_at_its_new_place(tmp_path):
    path = make_docx_with_a_tracked_move(tmp_path / "moved.docx")
    markdown = convert_file(path, cache=False).markdown
    assert markdown.count("The moved sentence names port 7420.") == 1, markdown
    assert markdown.index("Middle paragraph") < markdown.index("The moved sentence") > markdown.index("Closing")
    assert "Opening paragraph." in markdown and "Closing paragraph." in markdown


def make_zip_bomb_docx(path: Path, inflated_bytes: int) -> Path:
    """A valid DOCX whose document.xml is `inflated_bytes` of one repeated paragraph (it deflates to almost nothing)."""
    import zipfile

    make_docx(path)
    paragraph = b"<w:p><w:r><w:t>Repeated words of the same paragraph.</w:t></w:r></w:p>"
    with zipfile.ZipFile(path) as package:
        parts = {info.filename: package.read(info) for info in package.infolist()}
    head, tail = parts["word/document.xml"].split(b"<w:body>")
    parts["word/document.xml"] = head + b"<w:body>" + paragraph * (inflated_bytes // len(paragraph)) + tail
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        for name, data in parts.items():
            package.writestr(name, data)
    return path


def test_a_docx_that_inflates_far_beyond_its_size_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    import zipfile

    path = make_zip_bomb_docx(tmp_path / "bomb.docx", 42 * 10**6)

    def never(*args, **kwargs):
        raise AssertionError("Docling was asked to read the zip bomb")

    monkeypatch.setattr(ingest, "_docling_converter", never)
    with pytest.raises(ingest.InflatesTooMuch) as error:
        convert_file(path, cache=False)
    message = str(error.value)
    size = path.stat().st_size
    with zipfile.ZipFile(path) as package:
        inflated = sum(info.file_size for info in package.infolist())
    assert size < 2**20 and inflated > 42 * 10**6 - 100, (size, inflated)  # a small file that inflates to 42 MB
    assert f"'bomb.docx' is {size / 1024:,.0f} KiB but its XML inflates to {inflated / 2**20:.1f} MiB" in message
    assert f"{inflated / size:,.0f} times its size (the limit is 100 times)" in message
    assert f"IngestLimits(max_inflation_ratio={int(inflated / size) + 1})" in message
    with pytest.raises(ingest.InflatesTooMuch, match="max_inflated_bytes"):
        validate_file(path, IngestLimits(max_inflated_bytes=10 * 2**20))
    skipped = ingest.ingest([path], progress=False).skipped
    assert [Path(item.path).name for item in skipped] == ["bomb.docx"] and "InflatesTooMuch" in skipped[0].reason

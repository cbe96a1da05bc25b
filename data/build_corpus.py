"""Render the knowledge-base sources into data/corpus/ and validate the gold questions.

Run from the repository root:

    .venv/bin/python data/build_corpus.py

Every data/sources/*.md (except WORLD.md and CONVENTIONS.md) is rendered into
data/corpus/<id>.<format>; id and format come from the YAML front matter, and
format is one of pdf, docx, pptx, html, md, txt (see data/sources/CONVENTIONS.md).
Afterwards the script fills the "page" field of gold entries that cite pdf or pptx
files and checks that every evidence quote in data/eval/gold_*.jsonl occurs in the
text of its source document. It exits with status 1 if any quote is missing.
Output is deterministic: rebuilding unchanged sources gives byte-identical files.
"""

import html
import json
import math
import re
import sys
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import docx
import matplotlib
import pptx
import pypdfium2
import yaml
from docx.oxml.ns import qn
from docx.shared import Pt
from fpdf import FPDF, FontFace
from markdown_it import MarkdownIt
from pptx.util import Inches
from pptx.util import Pt as PptPt

DATA = Path(__file__).resolve().parent
SOURCES, CORPUS, EVAL = DATA / "sources", DATA / "corpus", DATA / "eval"
SKIP = {"WORLD.md", "CONVENTIONS.md"}
FIXED_TIME = datetime(2026, 9, 30, 12, 0, 0, tzinfo=UTC)
FONT_DIR = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
AUTHOR = "Tidewell Analytics"


def markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


@dataclass
class Block:
    kind: str  # heading | para | item | table | code
    text: str = ""
    level: int = 0  # heading level (1-4) or list depth (0-based)
    ordered: bool = False  # list item of a numbered list?
    list_id: int = 0  # list items: which list they belong to
    number: int = 0  # list items: position within their list (1-based)
    rows: list = field(default_factory=list)  # tables: header row first


def read_source(path: Path) -> tuple[dict, str]:
    """Split a source file into its front matter (dict) and Markdown body."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    if not match:
        raise ValueError(f"{path.name}: missing YAML front matter")
    return yaml.safe_load(match.group(1)), text[match.end() :].lstrip("\n")


def inline_text(token) -> str:
    """Plain text of an inline token: emphasis and links dropped, line breaks become spaces."""
    kinds = {"text": None, "code_inline": None, "softbreak": " ", "hardbreak": " "}
    return "".join(kinds[c.type] or c.content for c in token.children or [] if c.type in kinds)


def parse_blocks(body: str) -> list[Block]:
    """Turn a Markdown body into a flat list of blocks that every renderer understands."""
    tokens = markdown().parse(body)
    blocks: list[Block] = []
    lists: list[list] = []  # stack of [ordered, list_id, item counter]
    list_count, rows = 0, None
    for i, tok in enumerate(tokens):
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            list_count += 1
            lists.append([tok.type.startswith("ordered"), list_count, 0])
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif tok.type == "list_item_open":
            lists[-1][2] += 1
        elif tok.type == "table_open":
            rows = []
        elif tok.type == "tr_open":
            rows.append([])
        elif tok.type == "table_close":
            blocks.append(Block("table", rows=rows))
            rows = None
        elif tok.type in ("fence", "code_block"):
            blocks.append(Block("code", text=tok.content.rstrip("\n")))
        elif tok.type == "inline":
            text, opener = inline_text(tok), tokens[i - 1]
            if rows is not None:
                rows[-1].append(text)
            elif opener.type == "heading_open":
                blocks.append(Block("heading", text, level=int(opener.tag[1])))
            elif lists:
                ordered, list_id, number = lists[-1]
                blocks.append(Block("item", text, len(lists) - 1, ordered, list_id, number))
            else:
                blocks.append(Block("para", text))
    return blocks


class DocumentPdf(FPDF):
    body_font, mono_font, bullet, title_text = "helvetica", "courier", "-", ""

    def footer(self):
        self.set_y(-12)
        self.set_font(self.body_font, size=8)
        self.cell(0, 6, f"{self.title_text}  |  page {self.page_no()}", align="C")


def setup_pdf_fonts(pdf: DocumentPdf, text: str) -> None:
    """Keep the core fonts for pure Latin-1 text; otherwise embed DejaVu (covers the euro sign)."""
    if all(ord(ch) < 256 for ch in text):
        return
    pdf.add_font("dejavu", "", FONT_DIR / "DejaVuSans.ttf")
    pdf.add_font("dejavu", "B", FONT_DIR / "DejaVuSans-Bold.ttf")
    pdf.add_font("dejavumono", "", FONT_DIR / "DejaVuSansMono.ttf")
    pdf.body_font, pdf.mono_font, pdf.bullet = "dejavu", "dejavumono", "\u2022"


def pdf_column_widths(pdf: DocumentPdf, rows: list[list[str]]) -> list[float]:
    """Column widths (mm) proportional to the longest cell, with room for the longest word."""
    weights = [
        max(max(len(cell) for cell in col), 2.5 * max(len(w) for cell in col for w in cell.split() or [""]))
        for col in zip(*rows)
    ]
    return [pdf.epw * weight / sum(weights) for weight in weights]


def pdf_table(pdf: DocumentPdf, rows: list[list[str]]) -> None:
    """A real table with a bold, shaded header row; starts on a new page if it would be split."""
    pdf.set_font(pdf.body_font, size=9)
    widths = pdf_column_widths(pdf, rows)
    height = sum(
        5 * max(math.ceil(pdf.get_string_width(cell) / (width - 3)) for cell, width in zip(row, widths)) + 2.4
        for row in rows
    )
    if pdf.get_y() + height > pdf.page_break_trigger and height < pdf.eph:
        pdf.add_page()
    header = FontFace(emphasis="BOLD", fill_color=(222, 230, 240))
    with pdf.table(
        col_widths=tuple(widths), line_height=5, padding=1.2, text_align="LEFT", headings_style=header
    ) as table:
        for cells in rows:
            table.row(cells)
    pdf.ln(3)


def pdf_block(pdf: DocumentPdf, block: Block) -> None:
    sizes = {1: 20, 2: 15, 3: 12.5, 4: 11}
    pdf.set_x(pdf.l_margin)
    if block.kind == "heading":
        if pdf.get_y() > pdf.h - 50:  # keep a heading together with its first lines
            pdf.add_page()
        pdf.ln(4 if block.level > 1 else 0)
        pdf.set_font(pdf.body_font, "B", sizes[block.level])
        pdf.multi_cell(0, sizes[block.level] * 0.5, block.text, align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    elif block.kind in ("para", "item"):
        pdf.set_font(pdf.body_font, size=10.5)
        indent = 6 + 6 * block.level if block.kind == "item" else 0
        if indent:
            pdf.set_x(pdf.l_margin + indent - 5)
            pdf.cell(5, 5.5, f"{block.number}." if block.ordered else pdf.bullet)
        pdf.multi_cell(pdf.epw - indent, 5.5, block.text, align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1 if indent else 2.5)
    elif block.kind == "code":
        pdf.set_font(pdf.mono_font, size=8.5)
        pdf.set_fill_color(242, 242, 242)
        pdf.multi_cell(0, 4.5, block.text, fill=True, align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2.5)
    elif block.kind == "table":
        pdf_table(pdf, block.rows)


def render_pdf(meta: dict, blocks: list[Block], out: Path) -> None:
    pdf = DocumentPdf(format="A4")
    pdf.title_text = meta["title"]
    setup_pdf_fonts(pdf, meta["title"] + "".join(b.text + "".join(map("".join, b.rows)) for b in blocks))
    pdf.set_title(meta["title"])
    pdf.set_author(AUTHOR)
    pdf.set_creator("data/build_corpus.py")
    pdf.set_creation_date(FIXED_TIME)
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(True, margin=20)
    pdf.add_page()
    for block in blocks:
        pdf_block(pdf, block)
    pdf.output(str(out))


def restarted_num_id(document, style_name: str) -> int:
    """A new numbering instance of a List Number style, so that each numbered list starts at 1."""
    numbering = document.part.numbering_part.element
    style_num = document.styles[style_name].element.pPr.numPr.numId.val
    num = numbering.add_num(numbering.num_having_numId(style_num).abstractNumId.val)
    num.add_lvlOverride(ilvl=0).add_startOverride(1)
    return num.numId


def docx_block(document, block: Block, num_ids: dict[int, int]) -> None:
    if block.kind == "heading":
        document.add_paragraph(block.text, style="Title" if block.level == 1 else f"Heading {block.level - 1}")
    elif block.kind == "para":
        document.add_paragraph(block.text)
    elif block.kind == "item":
        base = "List Number" if block.ordered else "List Bullet"
        style = base if block.level == 0 else f"{base} {min(block.level + 1, 3)}"
        paragraph = document.add_paragraph(block.text, style=style)
        if block.ordered:
            if block.list_id not in num_ids:
                num_ids[block.list_id] = restarted_num_id(document, style)
            paragraph._p.get_or_add_pPr().get_or_add_numPr().get_or_add_numId().val = num_ids[block.list_id]
    elif block.kind == "code":
        run = document.add_paragraph(style="No Spacing").add_run(block.text)  # "\n" becomes a line break
        run.font.name, run.font.size = "Courier New", Pt(9)
    elif block.kind == "table":
        table = document.add_table(rows=len(block.rows), cols=len(block.rows[0]), style="Table Grid")
        for r, cells in enumerate(block.rows):
            for c, text in enumerate(cells):
                table.cell(r, c).text = text
                if r == 0 and text:
                    table.cell(r, c).paragraphs[0].runs[0].bold = True


def render_docx(meta: dict, blocks: list[Block], out: Path) -> None:
    document = docx.Document()
    for name in ("Normal", "Title", "Heading 1", "Heading 2", "Heading 3"):  # fonts for Chinese text
        document.styles[name].element.get_or_add_rPr().get_or_add_rFonts().set(qn("w:eastAsia"), "SimSun")
    num_ids: dict[int, int] = {}
    for block in blocks:
        docx_block(document, block, num_ids)
    set_core_properties(document.core_properties, meta)
    document.save(out)
    normalize_zip(out)


def split_slides(blocks: list[Block]) -> list[tuple[str, list[Block]]]:
    """Group blocks by slide: the '#' title slide, then one slide per '##' heading."""
    slides: list[tuple[str, list[Block]]] = []
    for block in blocks:
        if block.kind == "heading" and block.level <= 2:
            slides.append((block.text, []))
        elif slides:
            slides[-1][1].append(block)
    return slides


def add_pptx_table(slide, rows: list[list[str]], top: float) -> float:
    """Add a real table under the slide title; returns its bottom edge in inches."""
    longest = [max(len(row[c]) for row in rows) + 6 for c in range(len(rows[0]))]
    height = 0.4 * len(rows)
    shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(0.5), Inches(top), Inches(9), Inches(height))
    for c, n in enumerate(longest):
        shape.table.columns[c].width = Inches(9 * n / sum(longest))
    for r, cells in enumerate(rows):
        for c, text in enumerate(cells):
            shape.table.cell(r, c).text = text
            shape.table.cell(r, c).text_frame.paragraphs[0].font.size = PptPt(12)
    return top + height


def pptx_slide(deck, heading: str, blocks: list[Block]) -> None:
    slide = deck.slides.add_slide(deck.slide_layouts[1])  # Title and Content
    slide.shapes.title.text = heading
    body, top = slide.placeholders[1], 1.6
    for table in (b for b in blocks if b.kind == "table"):
        top = add_pptx_table(slide, table.rows, top) + 0.25
    bullets = [b for b in blocks if b.kind in ("item", "para")]
    if not bullets:
        body._element.getparent().remove(body._element)
        return
    body.left, body.top, body.width, body.height = Inches(0.5), Inches(top), Inches(9), Inches(7.2 - top)
    for n, block in enumerate(bullets):
        paragraph = body.text_frame.paragraphs[0] if n == 0 else body.text_frame.add_paragraph()
        paragraph.text, paragraph.level = block.text, block.level
        paragraph.font.size = PptPt(15 if top > 1.6 else 20)


def render_pptx(meta: dict, blocks: list[Block], out: Path) -> None:
    deck = pptx.Presentation()
    (title, intro), *content = split_slides(blocks)
    slide = deck.slides.add_slide(deck.slide_layouts[0])  # Title Slide
    slide.shapes.title.text = title
    slide.placeholders[1].text = " ".join(b.text for b in intro)
    for heading, slide_blocks in content:
        pptx_slide(deck, heading, slide_blocks)
    set_core_properties(deck.core_properties, meta)
    deck.save(out)
    normalize_zip(out)


def set_core_properties(props, meta: dict) -> None:
    props.title, props.author, props.last_modified_by = meta["title"], AUTHOR, AUTHOR
    props.created = props.modified = props.last_printed = FIXED_TIME.replace(tzinfo=None)
    props.revision = 1


def normalize_zip(path: Path) -> None:
    """Rewrite an OOXML package with fixed entry timestamps so rebuilds are byte-identical."""
    with zipfile.ZipFile(path) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)


CHROME = {
    "en": dict(
        home="Home",
        section="Support",
        nav=["Product", "Pricing", "Docs", "Support", "Contact"],
        accept="Accept",
        footer="© 2026 Tidewell Analytics B.V., Rotterdam. All rights reserved.",
        cookie="We use cookies to improve your experience. By continuing you accept our cookie policy.",
    ),
    "zh": dict(
        home="首页",
        section="支持中心",
        nav=["产品", "价格", "文档", "支持", "联系我们"],
        accept="接受",
        footer="© 2026 潮汐分析（Tidewell Analytics）版权所有。",
        cookie="本网站使用 Cookie 改善您的浏览体验。继续浏览即表示您同意我们的 Cookie 政策。",
    ),
}
PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head><meta charset="utf-8"><title>{title} | Tidewell Analytics</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:auto}} td,th{{border:1px solid #999;padding:4px}}</style></head>
<body>
<div class="cookie-banner">{cookie} <button>{accept}</button></div>
<nav class="site-nav"><a href="/">Tidewell</a> {nav}</nav>
<nav class="breadcrumb"><a href="/">{home}</a> &rsaquo; <a href="/support/">{section}</a> &rsaquo; {title}</nav>
<main>
{body}</main>
<footer><p>{footer}</p><p><a href="/privacy/">Privacy</a> · <a href="/terms/">Terms</a></p></footer>
</body>
</html>
"""


def render_html(meta: dict, body: str, out: Path) -> None:
    chrome = dict(CHROME.get(meta["language"], CHROME["en"]))
    chrome["nav"] = " ".join(
        f'<a href="/{slug}/">{label}</a>'
        for slug, label in zip(("product", "pricing", "docs", "support", "contact"), chrome["nav"])
    )
    out.write_text(
        PAGE.format(lang=meta["language"], title=html.escape(meta["title"]), body=markdown().render(body), **chrome),
        encoding="utf-8",
    )


def render_source(path: Path) -> Path:
    meta, body = read_source(path)
    out = CORPUS / f"{meta['id']}.{meta['format']}"
    if meta["format"] in ("md", "txt"):
        out.write_text(body, encoding="utf-8")
    elif meta["format"] == "html":
        render_html(meta, body, out)
    else:
        renderers = {"pdf": render_pdf, "docx": render_docx, "pptx": render_pptx}
        renderers[meta["format"]](meta, parse_blocks(body), out)
    return out


def html_text(markup: str) -> str:
    """Visible text of HTML: scripts and styles dropped, block-level tags become line breaks."""
    markup = re.sub(r"<(style|script)\b.*?</\1>", " ", markup, flags=re.DOTALL | re.IGNORECASE)
    markup = re.sub(r"</?(p|li|td|th|tr|h\d|pre|div|nav|footer|br)\b[^>]*>", "\n", markup, flags=re.IGNORECASE)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def slide_text(slide) -> str:
    strings = []
    for shape in slide.shapes:
        if shape.has_text_frame:
            strings.append(shape.text_frame.text)
        if shape.has_table:
            strings.extend(cell.text for row in shape.table.rows for cell in row.cells)
    return "\n".join(strings)


def page_texts(path: Path) -> list[str]:
    """Text of a rendered document: one string per page (pdf) or slide (pptx), else a single string."""
    kind = path.suffix[1:]
    if kind == "pdf":  # the running footer is dropped so that paragraphs continue across pages
        texts = [page.get_textpage().get_text_range() for page in pypdfium2.PdfDocument(path)]
        return [re.sub(r"[^\n]*\|\s+page \d+\s*$", "", text) for text in texts]
    if kind == "pptx":
        return [slide_text(slide) for slide in pptx.Presentation(path).slides]
    if kind == "docx":
        document = docx.Document(path)
        cells = [cell.text for table in document.tables for row in table.rows for cell in row.cells]
        return ["\n".join([p.text for p in document.paragraphs] + cells)]
    text = path.read_text(encoding="utf-8")
    if kind == "md":
        return [html_text(markdown().render(text))]
    return [html_text(text) if kind == "html" else text]


def squash(text: str) -> str:
    return " ".join(text.split())


def quote_page(quote: str, pages: list[str]) -> int | None:
    """1-based page on which a quote starts, also when it runs on to the next page."""
    needle = squash(quote)
    for n, text in enumerate(pages):
        if needle in squash(text):
            return n + 1
    for n in range(len(pages) - 1):
        if needle in squash(pages[n] + " " + pages[n + 1]):
            return n + 1
    return None


def fill_pages(entry: dict, pages: dict[str, list[str]]) -> None:
    """Set 'page' of every pdf/pptx source to the page of the first evidence quote found in that file."""
    for source in entry["sources"]:
        if Path(source["file"]).suffix in (".pdf", ".pptx") and source["file"] in pages:
            hits = (quote_page(quote, pages[source["file"]]) for quote in entry["evidence"])
            source["page"] = next((page for page in hits if page), source["page"])


def quote_problems(entry: dict, pages: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """Errors (unknown files, quotes found in none of the entry's sources) and style warnings."""
    errors = [f"MISSING FILE {entry['id']}: {s['file']}" for s in entry["sources"] if s["file"] not in pages]
    texts = [squash(" ".join(pages.get(s["file"], []))) for s in entry["sources"]]
    files = ", ".join(s["file"] for s in entry["sources"]) or "(no sources)"
    errors += [
        f"MISSING QUOTE {entry['id']} in {files}: {q!r}"
        for q in entry["evidence"]
        if not any(squash(q) in t for t in texts)
    ]
    low, high = (10, 120) if entry["language"] == "zh" else (20, 200)
    warnings = [
        f"{entry['id']}: quote length {len(q)} outside {low}-{high}: {q!r}"
        for q in entry["evidence"]
        if not low <= len(q) <= high
    ]
    warnings += [f"{entry['id']}: markup in quote: {q!r}" for q in entry["evidence"] if re.search(r"\*\*|`|\||\]\(", q)]
    return errors, warnings


def check_gold(gold_path: Path, pages: dict[str, list[str]]) -> int:
    """Fill pages (rewriting the file only if a page changed) and report problems; returns the error count."""
    original = [json.loads(line) for line in gold_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    entries = json.loads(json.dumps(original))
    errors, types = 0, {}
    for entry in entries:
        fill_pages(entry, pages)
        types[entry["type"]] = types.get(entry["type"], 0) + 1
        entry_errors, warnings = quote_problems(entry, pages)
        for message in entry_errors + [f"warning {w}" for w in warnings]:
            print(f"  {message}")
        errors += len(entry_errors)
    if entries != original:
        gold_path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    quotes = sum(len(e["evidence"]) for e in entries)
    print(
        f"{gold_path.name}: {len(entries)} questions, {quotes} quotes, {errors} problems; "
        + ", ".join(f"{kind} {n}" for kind, n in sorted(types.items()))
    )
    return errors


def main() -> int:
    CORPUS.mkdir(exist_ok=True)
    pages: dict[str, list[str]] = {}
    for path in sorted(SOURCES.glob("*.md")):
        if path.name not in SKIP:
            out = render_source(path)
            pages[out.name] = page_texts(out)
            unit = {".pdf": "pages", ".pptx": "slides"}.get(out.suffix, "text part")
            print(f"rendered {out.relative_to(DATA.parent)}: {len(pages[out.name])} {unit}")
    errors = sum(check_gold(gold, pages) for gold in sorted(EVAL.glob("gold_*.jsonl")))
    print("OK: every evidence quote found" if not errors else f"FAILED: {errors} missing quotes or files")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

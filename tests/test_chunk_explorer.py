"""The chunk explorer renders boundaries and overlaps, and re-chunks when a control changes."""

import re
import warnings

import matplotlib
from langchain_core.documents import Document

from lessons.core.i18n import t
from lessons.widgets.chunk_explorer import (
    boundaries_html,
    chunk_explorer,
    explorer_strategies,
    length_histogram_png,
    shared_prefix,
)

TEXT = "# Guide\n\n" + " ".join(f"Sentence number {i} says something short." for i in range(40))


def test_shared_prefix_is_the_overlap():
    assert shared_prefix("abcdef", "defgh") == 3
    assert shared_prefix("abc", "xyz") == 0
    assert shared_prefix("", "abc") == 0


def test_boundaries_html_alternates_backgrounds_escapes_and_underlines_overlap():
    page = boundaries_html(["a <b> c d", "c d e f", "g"])
    assert page.count("background:#fde9b8") == 2 and page.count("background:#cfe8fb") == 1
    assert "&lt;b&gt;" in page and "<b>" not in page
    assert 'text-decoration-color: #c0392b; text-decoration-thickness: 2px">c d</span> e f' in page


def test_every_explorer_strategy_chunks_a_document():
    document = Document(page_content=TEXT, metadata={"source": "guide.md", "language": "en"})
    for name, make in explorer_strategies().items():
        chunks = make(300, 50)([document])
        assert len(chunks) > 1, name


def test_chunk_explorer_updates_when_the_size_changes():
    document = Document(page_content=TEXT, metadata={"source": "guide.md", "language": "en", "page": None})
    box = chunk_explorer([document])
    controls, sliders, summary, histogram = box.children[:4]
    before, before_png = summary.value, histogram.value
    sliders.children[0].value = 1500
    assert summary.value != before and "chunks" in summary.value
    assert bytes(histogram.value) != bytes(before_png) and bytes(histogram.value).startswith(b"\x89PNG")
    assert controls.children[0].options == ("guide.md",)


def test_length_histogram_is_a_png():
    assert length_histogram_png(["a" * 10, "b" * 300], 200).startswith(b"\x89PNG")


def _notebook_folder(root, language):
    """A course notebook folder: a kernel started there speaks `language` (lessons.core.i18n.folder_language)."""
    (root / "masters").mkdir(exist_ok=True)
    folder = root / "notebooks" / (language if language != "en" else "")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_explorer_speaks_the_language_of_its_notebook_folder(tmp_path, monkeypatch):
    """In notebooks/zh the explorer's labels, summary and plot text are Chinese; the chunks are the same."""
    monkeypatch.delenv("AGENTIC_RAG_LANG", raising=False)
    document = Document(page_content=TEXT, metadata={"source": "guide.pdf", "language": "en", "page": 3})
    boxes = {}
    for language in ("en", "zh"):
        monkeypatch.chdir(_notebook_folder(tmp_path, language))
        boxes[language] = chunk_explorer([document])
    (en_controls, en_sliders, en_summary), (controls, sliders, summary) = (
        boxes[language].children[:3] for language in ("en", "zh")
    )
    assert [c.description for c in en_controls.children] == ["document", "strategy"]
    assert [s.description for s in en_sliders.children] == ["chunk size", "overlap"]
    assert en_controls.children[0].options == ("guide.pdf, page 3",)
    assert [c.description for c in controls.children] == ["文档", "策略"]
    assert [s.description for s in sliders.children] == ["块大小", "重叠"]
    assert controls.children[0].options == ("guide.pdf，第 3 页",)
    assert "个块 · 中位数" in summary.value and "chunks" not in summary.value
    assert re.findall(r"\d+", summary.value) == re.findall(r"\d+", en_summary.value), "the same chunks"
    assert 'title="第 2 块：3 个字符，其中 1 个与上一块重复"' in boundaries_html(["a b", "b c"])


def test_the_chinese_histogram_draws_its_labels_in_a_chinese_font(tmp_path, monkeypatch):
    """In notebooks/zh the histogram's labels are Chinese, and they are drawn, not shown as empty boxes: the helper sets
    up the Chinese font itself, even in a process whose language was English when lessons.core.i18n was imported."""
    monkeypatch.delenv("AGENTIC_RAG_LANG", raising=False)
    monkeypatch.chdir(_notebook_folder(tmp_path, "zh"))
    assert re.search(r"[\u4e00-\u9fff]", t("characters per chunk")), "the labels are Chinese, else this proves nothing"
    defaults = {key: matplotlib.rcParamsDefault[key] for key in ("font.family", "font.sans-serif")}
    with matplotlib.rc_context(defaults), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert length_histogram_png(["a" * 10, "b" * 300], 200).startswith(b"\x89PNG")
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]

"""An interactive chunk explorer: re-chunk one document as the sliders move, and see where the cuts fall.

Introduced in notebook 01 (chunking). `chunk_explorer(documents)` returns an ipywidgets box with a
document picker, a strategy picker and chunk size / overlap sliders; it shows the chunks on
alternating backgrounds (text a chunk repeats from the previous one is underlined) and a histogram of
their lengths. `boundaries_html` is the rendering on its own.
"""

from __future__ import annotations

import html
import io
import statistics
from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from lessons.chunking.base import Chunker
from lessons.chunking.markdown_blocks import markdown_block_chunker
from lessons.chunking.strategies import (
    character_window_chunker,
    header_recursive_chunker,
    language_aware_chunker,
    recursive_chunker,
    sentence_chunker,
)
from lessons.core.i18n import t
from lessons.core.plot_fonts import chinese_plots

BACKGROUNDS = ("#fde9b8", "#cfe8fb")
OVERLAP_STYLE = "text-decoration: underline; text-decoration-color: #c0392b; text-decoration-thickness: 2px"

ChunkerFactory = Callable[[int, int], Chunker]


def explorer_strategies() -> dict[str, ChunkerFactory]:
    """The strategies the explorer offers: each makes a chunker from (chunk size, overlap) in characters.

    Introduced in notebook 01 (chunking). The Markdown-block strategy has no overlap.
    """
    return {
        "recursive (LangChain defaults)": recursive_chunker,
        "fixed characters": character_window_chunker,
        "sentences": sentence_chunker,
        "language-aware": language_aware_chunker,
        "headers + recursive": header_recursive_chunker,
        "Markdown blocks": lambda size, _overlap: markdown_block_chunker(size),
    }


def shared_prefix(previous: str, chunk: str) -> int:
    """How many leading characters of `chunk` repeat the end of `previous` (the overlap between them).

    Introduced in notebook 01 (chunking).
    """
    for length in range(min(len(previous), len(chunk)), 0, -1):
        if previous.endswith(chunk[:length]):
            return length
    return 0


def boundaries_html(chunks: Sequence[str], max_height_px: int = 420) -> str:
    """The chunks one after another on alternating backgrounds, repeated (overlapping) text underlined.

    Introduced in notebook 01 (chunking).
    """
    spans = []
    previous = ""
    for number, chunk in enumerate(chunks):
        overlap = shared_prefix(previous, chunk)
        background = BACKGROUNDS[number % len(BACKGROUNDS)]
        title = t(
            "chunk {number}: {characters} characters, {overlap} repeated from the previous chunk",
            number=number + 1,
            characters=len(chunk),
            overlap=overlap,
        )
        spans.append(
            f'<span title="{html.escape(title)}" style="background:{background}">'
            f'<span style="{OVERLAP_STYLE}">{html.escape(chunk[:overlap])}</span>{html.escape(chunk[overlap:])}</span>'
        )
        previous = chunk
    style = f"white-space:pre-wrap;font-family:monospace;font-size:12px;max-height:{max_height_px}px;overflow:auto"
    return f'<div style="{style}">' + "<br/>".join(spans) + "</div>"


def chunk_explorer(documents: Sequence[Document], strategies: dict[str, ChunkerFactory] | None = None):
    """An ipywidgets box that re-chunks the chosen document whenever a control changes.

    Introduced in notebook 01 (chunking). Only plain widgets (HTML, an image): no output capture, so
    the box also behaves when a notebook runs headless.
    """
    import ipywidgets as widgets

    strategies = strategies or explorer_strategies()
    by_label = {_label(document): document for document in documents}
    document = widgets.Dropdown(options=list(by_label), description=t("document"), layout=widgets.Layout(width="420px"))
    strategy = widgets.Dropdown(
        options=list(strategies), description=t("strategy"), layout=widgets.Layout(width="340px")
    )
    size = widgets.IntSlider(value=400, min=100, max=2000, step=50, description=t("chunk size"))
    overlap = widgets.IntSlider(value=50, min=0, max=400, step=10, description=t("overlap"))
    summary, text, histogram = widgets.HTML(), widgets.HTML(), widgets.Image(format="png")

    def update(_change=None) -> None:
        chunker = strategies[strategy.value](size.value, min(overlap.value, size.value // 2))
        chunks = [chunk.page_content for chunk in chunker([by_label[document.value]])]
        summary.value = _summary(chunks, size.value)
        text.value = boundaries_html(chunks)
        histogram.value = length_histogram_png(chunks, size.value)

    for control in (document, strategy, size, overlap):
        control.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([document, strategy]), widgets.HBox([size, overlap]), summary, histogram, text])


def _label(document: Document) -> str:
    """The document picker's label: the source file, and the page for paged formats."""
    page = document.metadata.get("page")
    source = str(document.metadata.get("source", "document"))
    return source + t(", page {page}", page=page) if isinstance(page, int) else source


def _summary(chunks: Sequence[str], chunk_size: int) -> str:
    """One line: chunk count, median and longest length."""
    lengths = [len(chunk) for chunk in chunks] or [0]
    over = sum(length > chunk_size for length in lengths)
    return t(
        "<b>{n}</b> chunks · median <b>{median:.0f}</b> characters · longest <b>{longest}</b> · {over} over the chunk size",
        n=len(chunks),
        median=statistics.median(lengths),
        longest=max(lengths),
        over=over,
    )


def length_histogram_png(chunks: Sequence[str], chunk_size: int) -> bytes:
    """A small PNG histogram of chunk lengths with the chunk size marked.

    Introduced in notebook 01 (chunking). Drawn on a standalone matplotlib `Figure` (not pyplot), so
    it never shows up as a notebook output of its own.
    """
    from matplotlib.figure import Figure

    chinese_plots()
    figure = Figure(figsize=(7, 2.0), dpi=90)
    axis = figure.subplots()
    axis.hist([len(chunk) for chunk in chunks], bins=20, color="#4c78a8")
    axis.axvline(chunk_size, color="#c0392b", linestyle="--", label=t("chunk size"))
    axis.set_xlabel(t("characters per chunk"))
    axis.set_ylabel(t("chunks"))
    axis.legend(loc="upper left")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()

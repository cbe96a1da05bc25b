"""Compare retrieval techniques on one question, side by side: ranked chunks with their scores.

Introduced in notebook 02 (retrieval tricks). `side_by_side_html` renders one column per technique
(rank, score, source and the start of each result); `technique_explorer` wraps it in a widget: type
a question, pick techniques, press Search.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from langchain_core.documents import Document
from langchain_core.runnables import Runnable

from lessons.core.i18n import t
from lessons.evaluation.metrics import relevance_labels
from lessons.evaluation.retrieval_evaluation import technique_label
from lessons.ingest.corpus import GoldQuestion
from lessons.retrieval.retrievers import SCORE

SNIPPET_CHARS = 180


def run_techniques(
    techniques: Mapping[str, Runnable], question: str, names: Sequence[str]
) -> dict[str, list[Document]]:
    """The ranked results of each technique in `names` for `question`."""
    return {name: techniques[name].invoke(question) for name in names}


def _cell(document: Document, rank: int, relevant: bool | None) -> str:
    score = document.metadata.get(SCORE)
    score_text = f"{score:.3f}" if isinstance(score, float) else "–"
    where = f"{document.metadata.get('source', '?')} #{document.metadata.get('chunk_indexes', document.metadata.get('chunk_index', '?'))}"
    marker = " ✅" if relevant else ""
    snippet = html.escape(" ".join(document.page_content.split())[:SNIPPET_CHARS])
    return (
        f"<td style='vertical-align:top;text-align:left;padding:4px;border:1px solid #ddd'>"
        f"<b>{rank}.</b> {t('score')} {score_text}{marker}<br><small>{html.escape(where)}</small><br>{snippet}…</td>"
    )


def side_by_side_html(results: Mapping[str, Sequence[Document]], k: int = 5, gold: GoldQuestion | None = None) -> str:
    """An HTML table: one column per technique, one row per rank; ✅ marks a chunk with gold evidence.

    `results` is keyed by the techniques' English names; each column is headed by `technique_label(name)`."""
    header = "".join(
        f"<th style='text-align:left;padding:4px'>{html.escape(technique_label(name))}</th>" for name in results
    )
    labels = {
        name: relevance_labels([d.page_content for d in documents], gold.evidence) if gold else [None] * len(documents)
        for name, documents in results.items()
    }
    rows = []
    for rank in range(1, k + 1):
        cells = [
            _cell(documents[rank - 1], rank, labels[name][rank - 1]) if rank <= len(documents) else "<td></td>"
            for name, documents in results.items()
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table style='table-layout:fixed;width:100%;font-size:12px'><tr>{header}</tr>{''.join(rows)}</table>"


def technique_explorer(
    techniques: Mapping[str, Runnable],
    question: str,
    selected: Sequence[str],
    k: int = 5,
    gold: Sequence[GoldQuestion] = (),
):
    """A widget: a question box, a technique picker and a Search button above the side-by-side table.

    When the typed question is one of `gold`, chunks holding its evidence are marked ✅.
    """
    import ipywidgets as widgets
    from IPython.display import HTML, display

    by_text = {q.question: q for q in gold}
    question_box = widgets.Textarea(value=question, description=t("Question"), layout=widgets.Layout(width="95%"))
    picker = widgets.SelectMultiple(
        options=[(technique_label(name), name) for name in techniques],
        value=tuple(selected),
        description=t("Techniques"),
        rows=min(len(techniques), 10),
    )
    button = widgets.Button(description=t("Search"), button_style="primary")
    output = widgets.Output()

    def search(_=None):
        output.clear_output()
        with output:
            text = question_box.value.strip()
            results = run_techniques(techniques, text, picker.value)
            display(HTML(side_by_side_html(results, k, by_text.get(text))))

    button.on_click(search)
    search()
    return widgets.VBox([question_box, picker, button, output])

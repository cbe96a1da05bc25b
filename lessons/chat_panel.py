"""A chat panel for the three-agent workflow: upload files, ask, read the answer and how it was checked.

Introduced in notebook 05 (three-agent verification). `ChatPanel(llm, retriever=...)` builds an
ipywidgets panel: a file upload (validated by the document processor: unsupported, empty, corrupt,
duplicate or oversized files are reported by name, with the fix), a question box and an Ask button.
The answer, its citations, the verification report and the agent trace are rendered as HTML; any
error is shown in the panel's status line instead of a traceback. The callbacks (`on_upload`,
`on_ask`) are plain methods, so tests drive them without a browser.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from lessons.document_processor import process_documents
from lessons.ingest import SUPPORTED_SUFFIXES
from lessons.settings import get_settings
from lessons.three_agents import DEFAULT_MAX_RESEARCH_ROUNDS, Retriever, ThreeAgentResult, run_three_agents

OUTCOME_LABELS = {
    "answered": "✅ answered, verified",
    "unverified": "⚠️ answered, but the verifier did not accept it",
    "not_in_documents": "🚫 not in these documents (relevance check: no match)",
    "cannot_answer": "🚫 not in these documents (the research agent found no answer)",
}


def render_result_html(result: ThreeAgentResult) -> str:
    """The answer, citations, verification report and trace of one run, as HTML (introduced in notebook 05)."""
    esc = html.escape
    parts = [f"<p><b>{esc(OUTCOME_LABELS.get(result.outcome, result.outcome))}</b> "
             f"· {result.seconds:.1f} s · {result.research_rounds} research round(s)</p>",
             f"<blockquote>{esc(result.answer)}</blockquote>"]
    if result.citations:
        items = "".join(
            f"<li>{esc(c.source)}{'' if c.page is None else f', page {c.page}'} <code>{esc(c.chunk_id)}</code></li>"
            for c in result.citations
        )
        parts.append(f"<p><b>Citations</b></p><ul>{items}</ul>")
    elif not result.abstained:
        parts.append("<p><b>Citations</b>: none given by the research agent</p>")
    if result.verification is not None:
        v = result.verification
        rows = [("supported", v.supported), ("relevant", v.relevant),
                ("unsupported claims", "; ".join(v.unsupported_claims) or "—"),
                ("contradictions", "; ".join(v.contradictions) or "—")]
        parts.append("<p><b>Verification report</b></p><table>" + "".join(
            f"<tr><td>{esc(k)}</td><td>{esc(str(value))}</td></tr>" for k, value in rows) + "</table>")
    trace_rows = "".join(
        f"<tr><td>{esc(s.step)}</td><td>{s.round}</td><td>{esc(s.decision)}</td><td>{esc(s.detail[:200])}</td>"
        f"<td>{s.seconds:.1f}</td></tr>"
        for s in result.trace
    )
    parts.append("<p><b>Agent trace</b></p><table><tr><th>step</th><th>round</th><th>decision</th><th>detail</th>"
                 f"<th>s</th></tr>{trace_rows}</table>")
    return "\n".join(parts)


def _error_html(message: str) -> str:
    return f"<span style='color:#b00020'>❌ {html.escape(message)}</span>"


def _info_html(message: str) -> str:
    return html.escape(message).replace("\n", "<br>")


def save_uploads(files: Sequence[dict[str, Any]], folder: Path) -> list[Path]:
    """Write uploaded files (ipywidgets `FileUpload.value` items) to a folder named after their bytes.

    Introduced in notebook 05 (three-agent verification). Only the file's base name is used, so an
    upload cannot write outside `folder`.
    """
    digest = hashlib.sha256()
    for item in files:
        digest.update(item["name"].encode())
        digest.update(bytes(item["content"]))
    batch = folder / digest.hexdigest()[:16]
    batch.mkdir(parents=True, exist_ok=True)
    paths = []
    for item in files:
        name = Path(str(item["name"])).name or "upload"
        path = batch / name
        path.write_bytes(bytes(item["content"]))
        paths.append(path)
    return paths


class ChatPanel:
    """Upload files, ask a question, see the answer, citations, verification report and agent trace.

    Introduced in notebook 05 (three-agent verification). Starts on `retriever` (e.g. the course
    knowledge base) when given; an upload replaces it with a retriever over the uploaded files.
    """

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        retriever: Retriever | None = None,
        source_label: str = "the course knowledge base",
        max_research_rounds: int = DEFAULT_MAX_RESEARCH_ROUNDS,
        upload_dir: Path | None = None,
        process: Callable[..., Any] = process_documents,
        run: Callable[..., ThreeAgentResult] = run_three_agents,
    ):
        import ipywidgets as widgets

        self.llm, self.retriever, self.max_research_rounds = llm, retriever, max_research_rounds
        self.upload_dir = upload_dir or get_settings().cache_dir / "uploads"
        self.process, self.run = process, run
        self.last_result: ThreeAgentResult | None = None
        self.upload = widgets.FileUpload(accept=",".join(SUPPORTED_SUFFIXES), multiple=True,
                                         description="Upload files")
        self.question = widgets.Text(placeholder="Ask a question about the documents",
                                     layout=widgets.Layout(width="70%"))
        self.ask = widgets.Button(description="Ask", button_style="primary")
        self.status = widgets.HTML(_info_html(f"Searching {source_label}." if retriever else
                                              "Upload files to start."))
        self.output = widgets.HTML()
        self.upload.observe(self.on_upload, names="value")
        self.ask.on_click(self.on_ask)

    @property
    def widget(self):
        import ipywidgets as widgets

        return widgets.VBox([self.upload, widgets.HBox([self.question, self.ask]), self.status, self.output])

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def on_upload(self, change: Any = None) -> None:
        """Save, validate, convert, chunk and index the uploaded files; report skipped files by name."""
        files = list(self.upload.value)
        if not files:
            return
        self.status.value = _info_html(f"Reading {len(files)} file(s)…")
        try:
            processed = self.process(save_uploads(files, self.upload_dir))
        except Exception as error:  # shown in the panel, never as a traceback
            self.status.value = _error_html(f"{type(error).__name__}: {error}")
            return
        self.retriever = processed.retrieve
        message = _info_html(processed.summary())
        if processed.skipped:
            message = message.replace("Skipped", "⚠️ Skipped")
        self.status.value = message

    def on_ask(self, _: Any = None) -> None:
        """Run the three agents on the question and show the result; errors go to the status line."""
        question = self.question.value.strip()
        if not question:
            self.status.value = _error_html("Type a question first.")
            return
        if self.retriever is None:
            self.status.value = _error_html("No documents yet: upload at least one file first.")
            return
        self.status.value = _info_html("Relevance checker → research agent → verification agent…")
        try:
            result = self.run(question, retriever=self.retriever, llm=self.llm,
                              max_research_rounds=self.max_research_rounds)
        except Exception as error:  # shown in the panel, never as a traceback
            self.status.value = _error_html(f"{type(error).__name__}: {error}")
            return
        self.last_result = result
        self.status.value = _info_html(f"Done in {result.seconds:.1f} s.")
        self.output.value = render_result_html(result)

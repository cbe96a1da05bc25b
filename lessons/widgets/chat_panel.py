"""A chat panel for the three-agent workflow: upload files, ask, read the answer and how it was checked.

Introduced in notebook 05 (three-agent verification). `ChatPanel(llm, retriever=...)` builds an
ipywidgets panel: a file upload (validated by the document processor: unsupported, empty, corrupt,
duplicate or oversized files are reported by name, with the fix), a question box and an Ask button.
The answer, its citations, the verification report and the agent trace are rendered as HTML; any
error is shown in the panel's status line instead of a traceback. The callbacks (`on_upload`,
`on_ask`) are plain methods, so tests drive them without a browser.

Every upload keeps every file: names lose any folder part (an upload cannot write outside its folder),
and two files with the same name are both kept ("a.md", "a (2).md"), which the status line says.
Each upload set gets its own folder and its own Chroma collection, so the retriever of one upload
never returns the files of another.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from lessons.agents.three_agents import DEFAULT_MAX_RESEARCH_ROUNDS, Retriever, ThreeAgentResult, run_three_agents
from lessons.core.i18n import for_reader, t
from lessons.core.settings import get_settings
from lessons.ingest.files import SUPPORTED_SUFFIXES, IngestLimits
from lessons.retrieval.document_processor import process_documents

OUTCOME_LABELS = {
    "answered": "✅ answered, verified",
    "unverified": "⚠️ answered, but the verifier did not accept it",
    "not_in_documents": "🚫 not in these documents (relevance check: no match)",
    "cannot_answer": "🚫 not in these documents (the research agent found no answer)",
}


def outcome_label(outcome: str) -> str:
    """OUTCOME_LABELS[outcome] in the course language (the outcome itself when it has no label)."""
    labels = {
        "answered": t("✅ answered, verified"),
        "unverified": t("⚠️ answered, but the verifier did not accept it"),
        "not_in_documents": t("🚫 not in these documents (relevance check: no match)"),
        "cannot_answer": t("🚫 not in these documents (the research agent found no answer)"),
    }
    return labels.get(outcome, outcome)


def render_result_html(result: ThreeAgentResult) -> str:
    """The answer, citations, verification report and trace of one run, as HTML (introduced in notebook 05)."""
    esc = html.escape
    parts = [
        f"<p><b>{esc(outcome_label(result.outcome))}</b> "
        + t("· {seconds:.1f} s · {rounds} research round(s)", seconds=result.seconds, rounds=result.research_rounds)
        + "</p>",
        f"<blockquote>{esc(result.answer)}</blockquote>",
    ]
    if result.citations:
        items = "".join(
            f"<li>{esc(c.source)}{'' if c.page is None else esc(t(', page {page}', page=c.page))} "
            f"<code>{esc(c.chunk_id)}</code></li>"
            for c in result.citations
        )
        parts.append(f"<p><b>{esc(t('Citations'))}</b></p><ul>{items}</ul>")
    elif not result.abstained:
        parts.append(f"<p><b>{esc(t('Citations'))}</b>{esc(t(': none given by the research agent'))}</p>")
    if result.verification is not None:
        v = result.verification
        rows = [
            (t("supported"), v.supported),
            (t("relevant"), v.relevant),
            (t("unsupported claims"), "; ".join(v.unsupported_claims) or "—"),
            (t("contradictions"), "; ".join(v.contradictions) or "—"),
        ]
        parts.append(
            f"<p><b>{esc(t('Verification report'))}</b></p><table>"
            + "".join(f"<tr><td>{esc(k)}</td><td>{esc(str(value))}</td></tr>" for k, value in rows)
            + "</table>"
        )
    trace_rows = "".join(
        f"<tr><td>{esc(s.step)}</td><td>{s.round}</td><td>{esc(for_reader(s.decision))}</td><td>{esc(for_reader(s.detail)[:200])}</td>"
        f"<td>{s.seconds:.1f}</td></tr>"
        for s in result.trace
    )
    header = "".join(f"<th>{esc(label)}</th>" for label in (t("step"), t("round"), t("decision"), t("detail"), t("s")))
    parts.append(f"<p><b>{esc(t('Agent trace'))}</b></p><table><tr>{header}</tr>{trace_rows}</table>")
    return "\n".join(parts)


def _error_html(message: str) -> str:
    return f"<span style='color:#b00020'>❌ {html.escape(message)}</span>"


def _info_html(message: str) -> str:
    return html.escape(message).replace("\n", "<br>")


def upload_set_id(files: Sequence[dict[str, Any]]) -> str:
    """16 hex characters naming an upload set by its files' names and bytes (introduced in notebook 05)."""
    digest = hashlib.sha256()
    for item in files:
        for part in (str(item["name"]).encode(), bytes(item["content"])):
            digest.update(len(part).to_bytes(8, "big"))  # lengths first: ("ab", "c") ≠ ("a", "bc")
            digest.update(part)
    return digest.hexdigest()[:16]


def safe_upload_names(names: Sequence[str]) -> list[str]:
    """A file name for each upload: no folder part, never "." or "..", unique (case-insensitively).

    Introduced in notebook 05 (three-agent verification). "sub/a.md" and "a.md" become "a.md" and
    "a (2).md"; a name with nothing left ("..", "/") becomes "upload".
    """
    taken: set[str] = set()
    safe = []
    for raw in names:
        name = str(raw).replace("\\", "/").split("/")[-1].strip()
        if name in ("", ".", ".."):
            name = "upload"
        stem, suffix = Path(name).stem, Path(name).suffix
        candidate, number = name, 1
        while candidate.casefold() in taken:
            number += 1
            candidate = f"{stem} ({number}){suffix}"
        taken.add(candidate.casefold())
        safe.append(candidate)
    return safe


def save_uploads(files: Sequence[dict[str, Any]], folder: Path) -> list[Path]:
    """Write uploaded files (ipywidgets `FileUpload.value` items) to a folder named after their bytes.

    Introduced in notebook 05 (three-agent verification). Names come from `safe_upload_names`: no
    folder part (an upload cannot write outside `folder`), and every file is kept.
    """
    batch = folder / upload_set_id(files)
    batch.mkdir(parents=True, exist_ok=True)
    paths = []
    for item, name in zip(files, safe_upload_names([item["name"] for item in files])):
        path = batch / name
        path.write_bytes(bytes(item["content"]))
        paths.append(path)
    return paths


def renamed_uploads(files: Sequence[dict[str, Any]], paths: Sequence[Path]) -> list[str]:
    """Lines saying which uploads were saved under another name (introduced in notebook 05)."""
    return [t("'{name}' saved as '{saved}' (same name as another upload, or a folder in its name)",
              name=item["name"], saved=path.name)
            for item, path in zip(files, paths) if str(item["name"]) != path.name]  # fmt: skip


class ChatPanel:
    """Upload files, ask a question, see the answer, citations, verification report and agent trace.

    Introduced in notebook 05 (three-agent verification). Starts on `retriever` (e.g. the course
    knowledge base) when given; an upload replaces it with a retriever over the uploaded files, indexed
    in a collection of its own (`index_prefix` + the upload set's id). `limits` are the size limits
    of `lessons.ingest.files.IngestLimits`.
    """

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        retriever: Retriever | None = None,
        source_label: str | None = None,
        max_research_rounds: int = DEFAULT_MAX_RESEARCH_ROUNDS,
        upload_dir: Path | None = None,
        process: Callable[..., Any] = process_documents,
        run: Callable[..., ThreeAgentResult] = run_three_agents,
        limits: IngestLimits | None = None,
        index_prefix: str = "nb05-upload",
    ):
        import ipywidgets as widgets

        self.llm, self.retriever, self.max_research_rounds = llm, retriever, max_research_rounds
        self.upload_dir = upload_dir or get_settings().cache_dir / "uploads"
        self.process, self.run = process, run
        self.limits, self.index_prefix = limits or IngestLimits(), index_prefix
        self.last_result: ThreeAgentResult | None = None
        self.upload = widgets.FileUpload(
            accept=",".join(SUPPORTED_SUFFIXES), multiple=True, description=t("Upload files")
        )
        self.question = widgets.Text(
            placeholder=t("Ask a question about the documents"), layout=widgets.Layout(width="70%")
        )
        self.ask = widgets.Button(description=t("Ask"), button_style="primary")
        source_label = t("the course knowledge base") if source_label is None else source_label
        self.status = widgets.HTML(
            _info_html(t("Searching {source}.", source=source_label) if retriever else t("Upload files to start."))
        )
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
        self.status.value = _info_html(t("Reading {n} file(s)…", n=len(files)))
        try:
            paths = save_uploads(files, self.upload_dir)
            renamed = renamed_uploads(files, paths)
            processed = self.process(
                paths, index_name=f"{self.index_prefix}-{upload_set_id(files)}", limits=self.limits
            )
        except Exception as error:  # noqa: BLE001 - shown in the panel, never as a traceback
            self.status.value = _error_html(f"{type(error).__name__}: {error}")
            return
        self.retriever = processed.retrieve
        message = _info_html("\n".join([processed.summary(), *renamed]))
        if processed.skipped:
            message = message.replace(t("Skipped"), "⚠️ " + t("Skipped"))
        self.status.value = message

    def on_ask(self, _: Any = None) -> None:
        """Run the three agents on the question and show the result; errors go to the status line."""
        question = self.question.value.strip()
        if not question:
            self.status.value = _error_html(t("Type a question first."))
            return
        if self.retriever is None:
            self.status.value = _error_html(t("No documents yet: upload at least one file first."))
            return
        self.status.value = _info_html(t("Relevance checker → research agent → verification agent…"))
        try:
            result = self.run(
                question, retriever=self.retriever, llm=self.llm, max_research_rounds=self.max_research_rounds
            )
        except Exception as error:  # noqa: BLE001 - shown in the panel, never as a traceback
            self.status.value = _error_html(f"{type(error).__name__}: {error}")
            return
        self.last_result = result
        self.status.value = _info_html(t("Done in {seconds:.1f} s.", seconds=result.seconds))
        self.output.value = render_result_html(result)

"""The notebooks in a real browser: JupyterLab on 127.0.0.1, driven by Playwright in Debian's chromium.

What a learner sees, not what nbclient sees: the notebook is opened in JupyterLab, "Run All Cells" is
clicked in the Run menu, and the rendered page must show the model banner, a matplotlib figure (an
<img>), and — in notebook 05 — the ipywidgets chat panel answering a typed question with its
citations and verification report. Screenshots go to `test-artifacts/browser/` (gitignored).

Copies of the notebooks with their quick parameters injected (the test suite's sizes, through
`tools.notebook_runner`) are placed in `test-artifacts/browser/workspace/notebooks/`, next to a
`data` link to the project's `data/`, so the notebooks' relative paths (`../data/corpus/…`) and
`import lessons` work as in `notebooks/`.

Needs `/usr/bin/chromium` (`scripts/setup.sh dev` installs Debian's package when it can) and the
`playwright` Python package (dev extra); it never downloads a browser. Skipped, with the reason, when
chromium is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from lessons.core.settings import PROJECT_ROOT
from tools.notebook_runner import inject_parameters, quick_parameters

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "browser"
THREE_AGENTS = "05_three_agent_verification.ipynb"
PANEL_SMOKE = "chat_panel_scripted.ipynb"
# A notebook that shows lessons.widgets.chat_panel.ChatPanel with a scripted workflow instead of the model: the
# widget round trip (typing, the Ask button, the kernel's reply rendered as HTML) without any LLM call.
PANEL_SMOKE_CELLS = [
    """from lessons.widgets.chat_panel import ChatPanel
from lessons.core.fakes import ScriptedChatModel
from lessons.agents.three_agents import Citation, ThreeAgentResult, TraceStep, Verification


def scripted_run(question, *, retriever, llm, max_research_rounds):
    return ThreeAgentResult(
        question=question, answer=f"Scripted answer to: {question}", abstained=False, outcome="answered",
        citations=[Citation("atlas_whitepaper.pdf", 2, "chunk-0042")],
        verification=Verification(unsupported_claims=[], contradictions=[], supported="yes", relevant="yes"),
        research_rounds=1, trace=[TraceStep("research", 1, "answered", "scripted")], seconds=0.1)


panel = ChatPanel(ScriptedChatModel(), retriever=lambda question: [], run=scripted_run)
panel""",
]
# Not a field of lessons.core.settings: a knob of this test alone, read when pytest collects it.
RUN_ALL_TIMEOUT_S = int(os.environ.get("AGENTIC_RAG_BROWSER_TIMEOUT", "1500"))

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} not found: the browser test needs Debian's chromium — run `scripts/setup.sh dev` as root "
        "or `sudo apt-get install chromium` (Playwright's own browser download is not used)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is missing: run `scripts/setup.sh dev` (dev extra)"
)

pytestmark = [pytest.mark.notebook, pytest.mark.model]


# --- JupyterLab -------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quick_copy(source: Path, folder: Path) -> Path:
    """A copy of `source` with its quick parameters injected after the `parameters` cell."""
    nb = nbformat.read(source, as_version=4)
    inject_parameters(nb, quick_parameters(nb))
    target = folder / source.name
    nbformat.write(nb, target)
    return target


def _write_lab_settings(settings_dir: Path) -> None:
    """Fresh JupyterLab user settings: every cell kept in the page, no news or update pop-ups."""
    for plugin, values in {
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    }.items():
        package, name = plugin.rsplit("/", 1)
        path = settings_dir / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="module")
def lab():
    """JupyterLab on a free port of 127.0.0.1 with a token, serving quick copies of the notebooks; stopped after."""
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    workspace = ARTIFACTS / "workspace"
    (workspace / "notebooks").mkdir(parents=True)
    (workspace / "data").symlink_to(PROJECT_ROOT / "data", target_is_directory=True)
    for name in ("00_setup.ipynb", THREE_AGENTS):
        if (PROJECT_ROOT / "notebooks" / name).exists():
            quick_copy(PROJECT_ROOT / "notebooks" / name, workspace / "notebooks")
    smoke = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in PANEL_SMOKE_CELLS])
    smoke.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(smoke, workspace / "notebooks" / PANEL_SMOKE)
    state = Path(tempfile.mkdtemp(prefix="agentic-rag-lab-"))
    _write_lab_settings(state / "user-settings")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(state / "runtime"), "JUPYTER_NO_CONFIG": "1"}
    with open(ARTIFACTS / "jupyterlab.log", "w") as log:  # the server writes to its own copy of the descriptor
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                "lab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={workspace}",
                f"--LabApp.user_settings_dir={state / 'user-settings'}",
                f"--LabApp.workspaces_dir={state / 'workspaces'}",
                "--LabServerApp.extension_manager=readonly",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}; see {ARTIFACTS / 'jupyterlab.log'}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer on {base} within 120 s; see {ARTIFACTS / 'jupyterlab.log'}")
            time.sleep(0.5)
        yield {"base": base, "token": token, "workspace": workspace}
    finally:
        process.terminate()  # the server shuts its kernels down
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def browser_context(lab):
    """Debian's chromium, headless, with a fresh profile folder; no browser download."""
    profile = Path(tempfile.mkdtemp(prefix="agentic-rag-chromium-"))
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


# --- driving a notebook -------------------------------------------------------------------------------------


def open_notebook(context, lab, name: str):
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{lab['base']}/lab/tree/notebooks/{name}?token={lab['token']}")
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible", timeout=120_000)
    # The kernel is ready when the status bar reads "Python 3 (ipykernel) | Idle" (before that it says
    # "Starting" or "Connecting"; the toolbar's execution indicator reads idle even before a kernel exists).
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-StatusBar-TextItem')].some(e => /\\|\\s*Idle/.test(e.textContent))",
        timeout=180_000,
        polling=500,
    )
    return page


def run_all_cells(page, timeout_s: int = RUN_ALL_TIMEOUT_S) -> float:
    """Run > Run All Cells from the menu bar; wait until every code cell has an execution count and the kernel
    is idle, or until a cell fails (the caller then reports the traceback)."""
    started = time.monotonic()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    # the first prompt turns to [*] or [1] once the kernel has the cells
    page.wait_for_function(
        "() => { const p = document.querySelector('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt');"
        " return p && /\\[(\\*|\\d+)\\]/.test(p.textContent); }",
        timeout=60_000,
        polling=250,
    )
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')];
            const el = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
            const failed = [...document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output')]
                .some(o => o.textContent.includes('Traceback (most recent call last)'));
            return failed || (prompts.length > 0 && el && el.getAttribute('data-status') === 'idle'
                && prompts.every(p => /\\[\\d+\\]/.test(p.textContent)));
        }""",
        timeout=timeout_s * 1000,
        polling=1000,
    )
    return time.monotonic() - started


def tracebacks(page) -> list[str]:
    """Error outputs on the page (IPython prints "Traceback (most recent call last)" in every one)."""
    outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
    return [text[:1500] for text in outputs if "Traceback (most recent call last)" in text]


def assert_banner_and_figure(page, name: str) -> None:
    from lessons.core.models import active_model_info

    expect = sync_api.expect
    banner = page.locator(".jp-OutputArea-output", has_text=re.compile(r"Chat model: \S+")).first
    expect(banner).to_be_visible()
    assert active_model_info().name in banner.inner_text(), f"{name}: the banner names another model"
    banner.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}-1-banner.png"))
    figure = page.locator(".jp-RenderedImage img").first  # an image/png output (matplotlib), not any <img>
    expect(figure).to_be_visible()
    figure.scroll_into_view_if_needed()
    width = figure.evaluate("img => img.naturalWidth")
    assert width > 100, f"{name}: the matplotlib figure did not decode (naturalWidth {width})"
    page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}-2-figure.png"))


def ask_chat_panel(page, question_text: str, timeout_s: int):
    """Type into the panel's question box, click Ask, and return the answer area once it shows the trace."""
    expect = sync_api.expect
    question = page.get_by_placeholder("Ask a question about the documents")
    expect(question).to_be_visible()
    question.scroll_into_view_if_needed()
    question.fill(question_text)
    page.get_by_role("button", name="Ask", exact=True).click()
    panel = question.locator("xpath=ancestor::div[contains(@class, 'widget-vbox')][1]")
    answer = panel.locator(".widget-html", has_text="Agent trace")
    expect(answer).to_be_visible(timeout=timeout_s * 1000)
    answer.scroll_into_view_if_needed()
    return answer


# --- the tests --------------------------------------------------------------------------------------------


def test_setup_notebook_renders_banner_and_figure(lab, browser_context):
    page = open_notebook(browser_context, lab, "00_setup.ipynb")
    seconds = run_all_cells(page)
    assert not tracebacks(page), f"00_setup raised in the browser:\n{tracebacks(page)}"
    assert_banner_and_figure(page, "00_setup.ipynb")
    print(f"00_setup: Run All Cells took {seconds:.0f} s in the browser")


def test_three_agent_notebook_chat_panel_answers(lab, browser_context):
    if not (lab["workspace"] / "notebooks" / THREE_AGENTS).exists():
        pytest.skip(f"notebooks/{THREE_AGENTS} is not in this checkout yet")
    page = open_notebook(browser_context, lab, THREE_AGENTS)
    seconds = run_all_cells(page)
    assert not tracebacks(page), f"{THREE_AGENTS} raised in the browser:\n{tracebacks(page)}"
    assert_banner_and_figure(page, THREE_AGENTS)

    answer = ask_chat_panel(page, "On which port does Atlas Server expose its APIs by default?", RUN_ALL_TIMEOUT_S)
    page.screenshot(path=str(ARTIFACTS / "05_three_agent_verification-3-chat-panel.png"))
    text = answer.inner_text()
    assert re.search(r"answered", text), f"the panel did not answer the question:\n{text[:1500]}"
    assert "Citations" in text and "7420" in text, f"no citations or no answer in the panel:\n{text[:1500]}"
    assert "Verification report" in text, f"no verification report in the panel:\n{text[:1500]}"
    print(f"{THREE_AGENTS}: Run All Cells took {seconds:.0f} s in the browser")


def test_chat_panel_round_trip_with_a_scripted_workflow(lab, browser_context):
    """The panel's widgets in a real browser: the typed question reaches the kernel and the reply renders."""
    if importlib.util.find_spec("lessons.widgets.chat_panel") is None:
        pytest.skip("lessons/widgets/chat_panel.py is not in this checkout yet")
    page = open_notebook(browser_context, lab, PANEL_SMOKE)
    run_all_cells(page, timeout_s=300)
    assert not tracebacks(page), f"the chat panel notebook raised:\n{tracebacks(page)}"
    answer = ask_chat_panel(page, "Which port does Atlas Server use?", timeout_s=60)
    page.screenshot(path=str(ARTIFACTS / "chat_panel_scripted.png"))
    text = answer.inner_text()
    assert "Scripted answer to: Which port does Atlas Server use?" in text, (
        f"the typed question did not reach the kernel:\n{text}"
    )
    assert "answered" in text and "atlas_whitepaper.pdf, page 2" in text, f"no outcome or citation rendered:\n{text}"
    assert "Verification report" in text, f"no verification report rendered:\n{text}"

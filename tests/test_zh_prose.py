"""The Chinese copies speak Chinese: no English sentence in the Markdown of `notebooks/zh/*.ipynb` (code, inline code,
link targets and the glossary's English terms aside), and `python -m tools.zh_outputs` lists the English sentences in
an executed Chinese notebook's outputs."""

import json
from pathlib import Path

import pytest

from lessons.core.settings import PROJECT_ROOT
from tools.zh_outputs import (
    ON_PURPOSE,
    UNTRANSLATED,
    english_runs,
    main,
    notebook_findings,
    unexplained_findings,
)

CHINESE_NOTEBOOKS = sorted((PROJECT_ROOT / "notebooks" / "zh").glob("*.ipynb"))


def test_a_planted_english_sentence_is_found_and_code_links_and_terms_are_not():
    text = (
        "这一节用 `hybrid_retriever(dense, bm25, weights=(0.5, 0.5))` 和 [LangChain 的文档](https://python.langchain.com/docs/how_to/)。\n"
        "```python\nprint('this code block is not prose at all')\n```\n"
        "倒数排名融合（reciprocal rank fusion / RRF）见 $1/(k + rank)$。<b>加粗</b>\n"
        "The reranker keeps the fused order for Chinese questions.\n"
    )
    assert english_runs(text) == ["The reranker keeps the fused order for Chinese questions"]
    assert english_runs("倒数排名融合（reciprocal rank fusion）与 Atlas Server 的端口。") == [], (
        "a glossary term or a name"
    )
    assert english_runs("*research agent followed it*（研究智能体照做了）") == ["research agent followed it"]


@pytest.mark.parametrize("notebook", CHINESE_NOTEBOOKS, ids=lambda path: path.name)
def test_no_english_sentence_in_a_chinese_notebooks_markdown(notebook: Path):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = [
        f"cell {number}: {run!r}"
        for number, cell in enumerate(cells, 1)
        if cell["cell_type"] == "markdown"
        for run in english_runs("".join(cell["source"]))
    ]
    assert not found, (
        f"{notebook.relative_to(PROJECT_ROOT)} has English sentences in its Markdown — translate them in the master's "
        f'lang="zh" twins (masters/{notebook.stem}.py; code or a quoted identifier goes in backticks), then '
        "`python -m scripts.notebooks`:\n  " + "\n  ".join(found)
    )


def executed(tmp_path: Path, outputs: list[dict], name: str = "05_executed", source: str = "x") -> Path:
    path = tmp_path / f"{name}.ipynb"
    cells = [{"cell_type": "code", "source": source, "outputs": outputs, "metadata": {}, "execution_count": 1}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_the_outputs_command_lists_english_sentences_in_an_executed_notebook(tmp_path, capsys):
    path = executed(
        tmp_path,
        [
            {
                "output_type": "stream",
                "name": "stdout",
                "text": ["3 个块\n", "no documents in this folder: add a file\n"],
            },
            {"output_type": "display_data", "data": {"text/markdown": "检索器在中文问题上保留融合后的顺序。"}},
            {
                "output_type": "execute_result",
                "data": {
                    "text/html": "<p>The gate let two chunks through</p>",
                    "text/plain": "<IPython.core.display.HTML object>",
                },
            },
        ],
    )
    assert notebook_findings(path) == [
        (1, "stream", "no documents in this folder"),
        (1, "text/html", "The gate let two chunks through"),
    ]
    assert main([str(path)]) == 1
    printed = capsys.readouterr().out
    assert "2 English run(s)" in printed and "cell 1 [stream]: no documents in this folder" in printed
    assert main([str(executed(tmp_path, [{"output_type": "stream", "name": "stdout", "text": "全部是中文。"}]))]) == 0
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    assert main([str(broken)]) == 2
    assert "broken.ipynb: not a readable notebook" in capsys.readouterr().err


def test_a_course_message_an_output_shows_in_english_is_listed_though_it_is_short(tmp_path):
    """A table header or label the code forgot to translate is two or three words, below the sentence length; it is
    the course's own text when the catalogue has it (here the drill's 'changed figure' and 06's 'factual consistency')."""
    path = executed(
        tmp_path,
        [
            {
                "output_type": "execute_result",
                "data": {
                    "text/html": "<table><tr><th>草稿</th><th>factual consistency</th></tr>"
                    "<tr><td>changed figure</td><td>0.5</td></tr></table>"
                },
            },
            {
                "output_type": "stream",
                "name": "stdout",
                "text": "改动的数字：事实一致性 0.5（quoted: the same figure）\n",
            },
        ],
    )
    found = notebook_findings(path)
    assert (1, "text/html", "factual consistency (a catalogue message shown in English)") in found
    assert (1, "text/html", "changed figure (a catalogue message shown in English)") in found
    assert not [run for number, kind, run in found if kind == "stream"], "a short common phrase is not listed"


def test_a_course_messages_words_inside_a_quoted_english_sentence_are_not_called_the_course_own_text(tmp_path):
    """A document the output quotes can hold a message's words ("measured on" in notebook 02's chunk): the sentence
    is listed as English, not as an untranslated message; the same words standing alone in a plain table still are."""
    quote = "BM25 scores and vector similarities are measured on different scales and cannot be added directly."
    path = executed(
        tmp_path,
        [
            {"output_type": "stream", "name": "stdout", "text": f"第 15 块：{quote}\n"},
            {"output_type": "execute_result", "data": {"text/plain": "      草稿  分数\n0  measured on  0.5\n"}},
        ],
    )
    found = notebook_findings(path)
    assert (1, "stream", quote.removeprefix("BM25 ").rstrip(".")) in found  # BM25: not a word (a digit)
    assert not [run for _, kind, run in found if kind == "stream" and run.endswith(UNTRANSLATED)], found
    assert (1, "text/plain", "measured on" + UNTRANSLATED) in found


def test_english_in_an_output_fails_the_audit_unless_its_cell_shows_it_on_purpose(tmp_path, capsys):
    """The notebook tests run this audit on every quick run of a Chinese copy (tests/test_notebooks.py): an English
    sentence fails it, the same sentence in a cell `ON_PURPOSE` names is listed with its reason and passes, and a
    catalogue message shown in English fails even there."""
    sentence = {"output_type": "stream", "name": "stdout", "text": "S1 (en): The Team plan costs 45 euros per user.\n"}
    stray = executed(tmp_path, [sentence], name="00_setup", source="print(plan)")
    assert unexplained_findings(stray) == [(1, "stream", "The Team plan costs")]
    assert main([str(stray)]) == 1
    assert "1 to fix" in capsys.readouterr().out
    code, reason = ON_PURPOSE["00_setup"][0]
    shown = executed(tmp_path, [sentence], name="00_setup", source=f"sentences = [\n    {code} …\n]")
    assert notebook_findings(shown) == [(1, "stream", "The Team plan costs")] and unexplained_findings(shown) == []
    assert main([str(shown)]) == 0
    assert f"(on purpose: {reason})" in capsys.readouterr().out
    header = {"output_type": "execute_result", "data": {"text/plain": "   factual consistency\n0  0.5\n"}}
    untranslated = executed(tmp_path, [sentence, header], name="00_setup", source=f"[{code}]")
    assert unexplained_findings(untranslated) == [(1, "text/plain", "factual consistency" + UNTRANSLATED)]
    elsewhere = executed(tmp_path, [sentence], name="01_chunking", source=f"[{code}]")
    assert unexplained_findings(elsewhere), "an entry explains a cell of its own notebook only"


def test_a_prompt_folded_away_is_not_met_but_its_summary_and_a_cut_off_fence_are_read_right():
    """`show_model_text` folds the English prompt into a <details> block under a Chinese summary: the reader opens it
    on purpose. An English summary is still English; a chunk that cuts a code fence off shows code, not prose; a
    plain-text table's columns are read apart."""
    prompt = "You write question-and-answer pairs that help a search engine find a text again later."
    folded = (
        f"<details><summary>这个块的系统提示词（模型读到的英文原文：点击展开）</summary><pre>{prompt}</pre></details>"
    )
    assert english_runs(folded) == []
    assert english_runs(folded.replace("这个块的系统提示词", "The system prompt for this chunk")) == [
        "The system prompt for this chunk"
    ]
    assert english_runs(f"<pre>{prompt}</pre>") == [prompt.rstrip(".")], "not folded: met"
    cut = "<td><small>rag_techniques_note_zh.md #18</small><br>```python from collections import defaultdict def rrf…</td>"
    assert english_runs(cut) == []


def test_the_on_purpose_cells_are_still_in_the_chinese_copies():
    """An entry whose code no Chinese copy has any more explains nothing: it must go (or follow the code)."""
    stale = []
    for stem, entries in ON_PURPOSE.items():
        notebook = PROJECT_ROOT / "notebooks" / "zh" / f"{stem}.ipynb"
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"] if notebook.exists() else []
        sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
        stale += [f"{stem}: {code!r}" for code, _ in entries if sum(code in source for source in sources) != 1]
    assert not stale, "tools.zh_outputs.ON_PURPOSE names code that is not in exactly one cell:\n  " + "\n  ".join(stale)

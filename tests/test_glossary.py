"""docs/GLOSSARY.zh.md: one Chinese rendering per course term. Every Chinese text a reader meets (the Chinese
notebooks, the Chinese docs and README, the message catalogue, the checks' hints) uses it — a listed variant is an
error naming the file and the rendering to use — and each Chinese notebook glosses a term with its English on the
term's first use, 召回率（recall@k）."""

import json
import re
from functools import cache
from pathlib import Path

import pytest

from lessons.core.settings import PROJECT_ROOT

GLOSSARY = PROJECT_ROOT / "docs" / "GLOSSARY.zh.md"
CATALOGUE = PROJECT_ROOT / "locale" / "zh" / "LC_MESSAGES" / "course.po"
CHINESE_NOTEBOOKS = sorted((PROJECT_ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
WORD = r"[\u4e00-\u9fff]{0,6}"  # a compound may sit between the term and its gloss: 嵌入模型（embedding model）


@cache
def glossary(terms_only: bool = False) -> list[tuple[str, str, list[str]]]:
    """(English, Chinese, variants) for each row of the glossary's tables; with `terms_only`, the rows of its
    terms (术语), which a Chinese notebook glosses on first use, without the everyday words (常用词) after them."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if terms_only and line.startswith("## 常用词"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not line.startswith("| ") or cells[0] in ("英文", "---"):
            continue
        rows.append((cells[0], cells[1], re.findall(r"`([^`]+)`", cells[3])))
    return rows


def chinese_texts() -> dict[str, str]:
    """Every Chinese text a reader meets, by its path relative to the project root."""
    paths = [*CHINESE_NOTEBOOKS, PROJECT_ROOT / "README.zh.md", *sorted((PROJECT_ROOT / "docs").glob("*.zh.md"))]
    paths += [CATALOGUE, *sorted((PROJECT_ROOT / "checks").glob("*.py"))]
    texts = {}
    for path in paths:
        if path == GLOSSARY:
            continue  # the glossary names the variants
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
        texts[path.relative_to(PROJECT_ROOT).as_posix()] = text
    return texts


def variants_in(text: str, chinese: str, variant: str) -> list[str]:
    """Each occurrence of `variant` in `text` with a little context; occurrences inside the canonical rendering
    (系统提示 inside 系统提示词) do not count."""
    if chinese not in variant:
        text = text.replace(chinese, "\0")
    return [text[max(m.start() - 8, 0) : m.end() + 8].replace("\n", " ") for m in re.finditer(re.escape(variant), text)]


def test_the_glossary_is_a_table_of_terms_each_with_one_rendering():
    rows = glossary()
    assert len(rows) > 40
    english = [row[0] for row in rows]
    chinese = [row[1] for row in rows]
    assert len(set(english)) == len(english), "a term is listed twice"
    assert len(set(chinese)) == len(chinese), "two terms share one rendering"
    for en, zh, variants in rows:
        assert zh not in variants, f"{en}: {zh} is both the rendering and a variant"


def test_the_readme_and_the_first_notebook_link_the_glossary():
    assert "docs/GLOSSARY.zh.md" in (PROJECT_ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert "GLOSSARY.zh.md" in chinese_texts()["notebooks/zh/00_setup.ipynb"]


def test_no_chinese_text_uses_a_variant_the_glossary_lists():
    found = []
    for name, text in chinese_texts().items():
        for en, zh, variants in glossary():
            for variant in variants:
                found += [f"{name}: {variant!r} ({en} is {zh}) in …{hit}…" for hit in variants_in(text, zh, variant)]
    assert not found, f"{len(found)} variant(s) the glossary lists:\n" + "\n".join(found)


def first_use_unglossed(text: str, english: str, chinese: str, longer: list[str]) -> str | None:
    """The context of the first use of `chinese` in `text` when it lacks its English gloss, else None.
    A longer term that contains it (分块 for 块) is not a use of it."""
    for other in longer:
        text = text.replace(other, "\0" * len(other))
    match = re.search(re.escape(chinese), text)
    if match is None:
        return None
    after = text[match.end() :]
    gloss = re.match(WORD + r"\**[（(，,]([^）)]*)[）)]", after)
    if gloss and any(name.strip().lower() in gloss.group(1).lower() for name in english.split(" / ")):
        return None
    return text[max(match.start() - 10, 0) : match.end() + 14].replace("\n", " ")


@pytest.mark.parametrize("notebook", CHINESE_NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chinese_notebook_glosses_each_term_with_its_english_on_first_use(notebook: Path):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # a diagram or a command is not where a term is glossed
    missing = []
    for en, zh, _ in glossary(terms_only=True):
        longer = [other for _, other, _ in glossary() if zh in other and other != zh]
        context = first_use_unglossed(text, en, zh, longer)
        if context is not None:
            missing.append(f"{zh}（{en}） first used without it: …{context}…")
    assert not missing, f"notebooks/zh/{notebook.name}:\n" + "\n".join(missing)

"""The course language: which language a notebook's own printed strings and the checks' hints speak.

Introduced in notebook 00 (setup). The English and the Chinese copy of a notebook run the very same
code; what differs is the language `course_language()` returns, and so what `t()` gives back:

    from lessons.i18n import t
    timings[t("one short answer")] = ...            # "one short answer" / "一次简短回答"
    print(t("{n} characters", n=1200))               # "1200 characters" / "1200 个字符"

How the language is chosen (one setting, no action in the notebook):

1. a kernel running in a notebook folder of the course speaks that folder's language — `notebooks/zh/`
   (or `solutions/zh/`) is Chinese, `notebooks/` and `solutions/` are English. Jupyter starts a kernel in
   the notebook's folder, and so does `lessons.notebook_runner`, so the Chinese copy speaks Chinese
   without the learner doing anything;
2. anywhere else (a terminal, a script, `scripts/course.sh`): `AGENTIC_RAG_LANG` (`en`, the default, or
   `zh`), from the environment or `.env`.

`python -m lessons.i18n` prints the language the setting chooses, `--folder` where its learner copies
are (scripts/course.sh opens that folder).
The Chinese strings live in `ZH` below, keyed by the English text; a key missing there is an error in
the Chinese copy (tests/test_i18n.py also finds every `t("…")` of a translated master and fails on a
missing one), never a silent fall-back to English.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from lessons.settings import PROJECT_ROOT

ENGLISH = "en"
LANGUAGES = (ENGLISH, "zh")
VARIABLE = "AGENTIC_RAG_LANG"
# The folders the course's notebooks live in; a sub-folder named after a language holds that language's copies.
NOTEBOOK_FOLDERS = ("notebooks", "solutions")


class LanguageError(ValueError):
    """A language the course does not have; the message names the setting and the fix."""


def _checked(value: str, where: str) -> str:
    language = value.strip().lower()
    if language not in LANGUAGES:
        raise LanguageError(f"{where}: {VARIABLE}={value!r} is not a course language; "
                            f"set it to one of {', '.join(LANGUAGES)} (or remove it for English)")
    return language


def setting_language(env_file: Path | None = None) -> str:
    """The language `AGENTIC_RAG_LANG` chooses: the environment first, then `.env`; English when unset."""
    value = os.environ.get(VARIABLE, "").strip()
    if value:
        return _checked(value, "the environment")
    env_file = env_file or PROJECT_ROOT / ".env"
    value = (dotenv_values(env_file).get(VARIABLE) or "").strip() if env_file.exists() else ""
    return _checked(value, str(env_file)) if value else ENGLISH


def folder_language(folder: str | Path) -> str | None:
    """The language of a course notebook folder (`notebooks/zh` → "zh", `notebooks` → "en"), else None."""
    folder = Path(folder).resolve()
    if folder.name in LANGUAGES and folder.name != ENGLISH and folder.parent.name in NOTEBOOK_FOLDERS:
        return folder.name
    if folder.name in NOTEBOOK_FOLDERS and (folder.parent / "masters").is_dir():
        return ENGLISH
    return None


def course_language(cwd: str | Path | None = None) -> str:
    """The language this process speaks: its notebook folder's, else the `AGENTIC_RAG_LANG` setting's."""
    setting = setting_language()  # checked even when the folder decides: a bad value is an error, not ignored
    return folder_language(cwd if cwd is not None else Path.cwd()) or setting


def notebook_folder(language: str) -> str:
    """Where the learner copies in `language` live, relative to the project root."""
    language = _checked(language, "notebook_folder")
    return "notebooks" if language == ENGLISH else f"notebooks/{language}"


def t(text: str, /, **values: object) -> str:
    """`text` in the course language, formatted with `values` (str.format). English text is the key."""
    language = course_language()
    if language != ENGLISH:
        table = TRANSLATIONS[language]
        if text not in table:
            raise KeyError(f"no {language} translation of {text!r}: add it to lessons/i18n.py "
                           f"{language.upper()} (the notebook's own printed strings are translated there)")
        text = table[text]
    return text.format(**values) if values else text


# Chinese for the strings the notebooks' own cells print (table headers, plot labels, findings text),
# keyed by the English text of the t("…") call, one block per notebook.
ZH: dict[str, str] = {
    # notebook 00 (setup)
    "start or reuse the model": "启动（或复用）模型",
    "In one sentence: what is retrieval-augmented generation?": "用一句话回答：什么是检索增强生成（RAG）？",
    "one short answer": "一次简短回答",
    "two structured grades": "两次结构化评分",
    "embed {n} sentences with {name}": "用 {name} 嵌入 {n} 个句子",
    "convert a DOCX (or read the cache)": "转换一个 DOCX（或读缓存）",
    "cosine similarity": "余弦相似度",
    "{name:22} translations: {translation:.2f}   different meaning: {different:.2f}":
        "{name:22} 互为译文：{translation:.2f}   意思不同：{different:.2f}",
    "{source}: {format}, language {language}, {characters:,} characters, converter {converter}, from cache: {cached}":
        "{source}：格式 {format}，语言 {language}，{characters:,} 个字符，转换器 {converter}，来自缓存：{cached}",
    "{step:40} {seconds:7.2f} s": "{step:40} {seconds:7.2f} 秒",
}
TRANSLATIONS: dict[str, dict[str, str]] = {"zh": ZH}


def main(argv: list[str] | None = None) -> int:
    """`python -m lessons.i18n [--folder]`: print the language the setting chooses (or its notebook folder)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    try:
        language = setting_language()
    except LanguageError as error:
        print(error, file=sys.stderr)
        return 1
    print(notebook_folder(language) if "--folder" in args else language)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The course language: which language a notebook's own printed strings and the checks' hints speak.

Introduced in notebook 00 (setup). The English and the Chinese copy of a notebook run the very same
code; what differs is the language `course_language()` returns, and so what `t()` gives back:


    timings[t("one short answer")] = ...            # "one short answer" / "一次简短回答"
    print(t("{n} characters", n=1200))               # "1200 characters" / "1200 个字符"

How the language is chosen (one setting, no action in the notebook):

1. a kernel running in a notebook folder of the course speaks that folder's language — `notebooks/zh/`
   (or `solutions/zh/`) is Chinese, `notebooks/` and `solutions/` are English. Jupyter starts a kernel in
   the notebook's folder, and so does `tools.notebook_runner`, so the Chinese copy speaks Chinese
   without the learner doing anything;
2. anywhere else (a terminal, a script, `scripts/course.sh`): `AGENTIC_RAG_LANG` (`en`, the default, or
   `zh`), from the environment or `.env`.

`python -m lessons.core.i18n` prints the language the setting chooses, `--folder` where its learner copies
are (scripts/course.sh opens that folder).
The Chinese strings live in a gettext catalogue, `locale/zh/LC_MESSAGES/course.po`, keyed by the English
text and extracted from the code with Babel (`python -m tools.i18n_catalogue update`); a key missing there, or
still untranslated or fuzzy, is an error in the Chinese copy (tests/test_i18n.py fails on one too), never a
silent fall-back to English.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Self

from dotenv import dotenv_values

from lessons.core.settings import PROJECT_ROOT

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
        raise LanguageError(
            f"{where}: {VARIABLE}={value!r} is not a course language; "
            f"set it to one of {', '.join(LANGUAGES)} (or remove it for English)"
        )
    return language


def setting_language(env_file: Path | None = None) -> str:
    """The language `AGENTIC_RAG_LANG` chooses: the environment first, then `.env`; English when unset."""
    # Not a field of lessons.core.settings: t() asks on every call and follows a changed environment or .env at
    # once (get_settings() is read once per process), and the error names where the value came from.
    value = os.environ.get(VARIABLE, "").strip()
    if value:
        return _checked(value, "the environment")
    env_file = env_file or PROJECT_ROOT / ".env"
    try:
        stat = env_file.stat()
    except FileNotFoundError:
        return ENGLISH
    value = _dotenv_language(str(env_file), stat.st_mtime_ns, stat.st_size)
    return _checked(value, str(env_file)) if value else ENGLISH


@cache
def _dotenv_language(path: str, mtime_ns: int, size: int) -> str:
    """`AGENTIC_RAG_LANG` in a `.env` file, parsed once per version of the file (`t()` asks on every call)."""
    return (dotenv_values(path).get(VARIABLE) or "").strip()


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
        table = translations(language)
        if text not in table:
            raise KeyError(
                f"no {language} translation of {text!r} in locale/{language}/LC_MESSAGES/{DOMAIN}.po: "
                "run `python -m tools.i18n_catalogue update`, translate the new entry there and remove any fuzzy flag"
            )
        text = table[text]
    return text.format(**values) if values else text


def N_(text: str, /) -> str:  # gettext's name for the marker (gettext_noop)
    """Mark `text` for the catalogue where it is defined and give it back unchanged: a description in a table of
    specs, a config template. Where it is shown, `t_marked(text)` translates it. Introduced in notebook 06."""
    return text


LANGUAGE_NAMES = {ENGLISH: N_("English"), "zh": N_("Chinese")}


def language_name(code: str, /) -> str:
    """A course language's code ("en", "zh") as the reader's language names it ("English" / "英文"), for headings,
    legends and sentences; another code is shown as it is. Introduced in notebook 01 (its per-language tables)."""
    return t_marked(LANGUAGE_NAMES[code]) if code in LANGUAGE_NAMES else code


def t_marked(text: str, /, **values: object) -> str:
    """`t()` for a string marked with `N_()` where it was defined (so it is not a literal at this call)."""
    return t(text, **values)


# argparse's own texts that a course command line can show (its usage line, help headings, "-h"'s help, its errors),
# in argparse's %-style, marked for the catalogue: argparse asks its module's gettext function `_` for each.
ARGPARSE_TEXTS = frozenset(
    {
        N_("usage: "),
        N_("positional arguments"),
        N_("options"),
        N_("show this help message and exit"),
        N_("%(prog)s: error: %(message)s\n"),
        N_("argument %(argument_name)s: %(message)s"),
        N_("unrecognized arguments: %s"),
        N_("expected one argument"),
        N_("invalid %(type)s value: %(value)r"),
        N_("invalid choice: %(value)r (choose from %(choices)s)"),
        N_("ambiguous option: %(option)s could match %(matches)s"),
        N_("the following arguments are required: %s"),
        N_("ignored explicit argument %r"),
    }
)


@contextmanager
def argparse_in_course_language() -> Iterator[None]:
    """argparse's own texts in the course language while the block runs: "usage:", the help headings, `-h`'s help and
    its error lines ("error:", "invalid int value", "unrecognized arguments"), for a command line of the course
    (`python -m lessons.evaluation.cli`). argparse looks each one up through its module's gettext function `_` when
    a parser is built and when it prints, so the block puts the catalogue (`t_marked`) in that function's place and
    restores it after: build the parser, parse and call `parser.error` inside the block. A text of argparse's not in
    `ARGPARSE_TEXTS` (none the course's parsers produce) stays as argparse has it."""
    import argparse

    original = argparse._
    argparse._ = lambda text: t_marked(text) if text in ARGPARSE_TEXTS else original(text)
    try:
        yield
    finally:
        argparse._ = original


class ReaderText(str):
    """A message code writes for a model and shows a reader: the `str` is the English the models read (like every
    prompt), `shown` the same message in the course language. `template` is marked with `N_()` where it is defined.
    Introduced in notebook 05 (the verifier's findings); notebook 07's tool errors are the same.

    A value that is itself a `ReaderText` (a reason marked with `N_()`: `ReaderText(reason)`) goes into `str` in
    English and into `shown` in the course language."""

    shown: str

    def __new__(cls, template: str, /, **values: object) -> Self:
        text = super().__new__(cls, template.format(**values) if values else template)
        text.shown = t_marked(template, **{name: for_reader(value) for name, value in values.items()})
        return text

    def __reduce__(self):  # copied or pickled as both texts (the English alone is no catalogue key)
        return _reader_text, (str(self), self.shown)

    @classmethod
    def joined(cls, separator: str, parts: Sequence[str]) -> ReaderText:
        """`separator.join(parts)` in both languages: each `ReaderText` part in English and in the reader's language."""
        return _reader_text(separator.join(map(str, parts)), separator.join(map(for_reader, parts)))


def _reader_text(english: str, shown: str) -> ReaderText:
    text = str.__new__(ReaderText, english)
    text.shown = shown
    return text


def for_reader(text: str) -> str:
    """`text` as a reader sees it: a `ReaderText` in the course language, any other string as it is."""
    return getattr(text, "shown", text)


def schema_for_reader(schema: object) -> object:
    """A JSON schema (or a part of one) as a reader sees it: every `description` in the course language, the rest as it is.

    Introduced in notebook 03 (the QA pairs' schema); notebooks 04 and 05 print their graders' fields with it. The model
    reads the English descriptions; each is marked with `N_()` where the schema defines it (a class docstring that
    becomes a description too), so a description without a translation is an error in Chinese, never English.
    """
    if isinstance(schema, dict):
        return {
            key: t_marked(value) if key == "description" and isinstance(value, str) else schema_for_reader(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [schema_for_reader(value) for value in schema]
    return schema


def show_model_text(text: str, title: str) -> None:
    """Show a text the model reads in English (a prompt, exactly as sent) under `title`, in the reader's language.

    Introduced in notebook 03 (the QA prompt); notebook 07 shows its decision prompt with it. The course's prompts are
    English whatever the notebook's language, and they are not translated (a translation would not be what the model
    read). In English the text is printed under `title`; in another language `title` (already through `t()`) says what
    it is and the English is folded away in a <details> block the reader opens when they want to read it — the
    notebook's Markdown describes the prompt in the reader's language.
    """
    if course_language() == ENGLISH:
        print(f"--- {title} ---\n{text}")
        return
    from html import escape

    from IPython.display import HTML, display

    summary = t("{what} (the English the model reads: click to open)", what=title)
    display(
        HTML(
            f"<details><summary>{escape(summary)}</summary>"
            f'<pre style="white-space: pre-wrap">{escape(str(text))}</pre></details>'
        )
    )


def t_labels(table, keys, /, values=None):
    """`table` (a DataFrame or its Styler) showing the labels in `keys` in the course language, for display only.

    The summary tables of lessons/ helpers are read by their English column names, so a master translates
    them where it displays them: `display(t_labels(summary, ["questions", "language"]))`. The column and
    row labels (every level) and the names of the index and column axes that are in `keys` are shown
    through `t()`; other labels (metric names such as hit@5) stay as they are. `keys` is a literal list, so
    tests/test_i18n.py finds every key.

    `values` shows names the code keeps in English as data — the techniques of notebook 02 — in the course
    language too: a mapping from a column's or an index level's (English) name to the function that shows one
    value, e.g. `values=TECHNIQUE_LABELS` (lessons.evaluation: "technique" → `technique_label`). The labels of an
    index or columns level of that name and the cells of a column of that name are shown through it (plot the
    returned DataFrame and its axis and legend show them too). On a Styler only the display changes: its
    `.format()` and `subset=` still name the English columns. In English `t()` returns the key: no change.
    """
    names = {key: t(key) for key in keys}
    values = dict(values or {})
    if all(key == name for key, name in names.items()) and (not values or course_language() == ENGLISH):
        return table  # English: the very table, displayed as before

    def label(name):
        return names.get(name, name) if isinstance(name, str) else name

    def shown_by(show):
        return lambda value: show(value) if isinstance(value, str) else value

    if hasattr(table, "format_index"):  # a pandas Styler
        for column in [c for c in table.data.columns if c in values]:
            table = table.format(shown_by(values[column]), subset=[column])
        for axis, index in (("index", table.data.index), ("columns", table.data.columns)):
            for level, level_name in enumerate(index.names):
                table = table.format_index(shown_by(values.get(level_name, label)), axis=axis, level=level)
            table = table.format_index_names(label, axis=axis)
        return table
    if not hasattr(table, "columns"):  # a Series
        for level_name in [n for n in table.index.names if n in values]:
            table = table.rename(index=shown_by(values[level_name]), level=level_name)
        return table.rename(index=label).rename_axis(index=label)
    cells = [column for column in table.columns if column in values]
    if cells:
        table = table.assign(**{column: table[column].map(shown_by(values[column])) for column in cells})
    for axis, index in (("index", table.index), ("columns", table.columns)):
        for level_name in [n for n in index.names if n in values]:
            table = table.rename(**{axis: shown_by(values[level_name])}, level=level_name)
    return table.rename(index=label, columns=label).rename_axis(index=label, columns=label)


# The translations of the strings the code prints (table headers, plot labels, findings, messages), keyed by the
# English text of the t("…") call: one gettext catalogue per language, extracted from the code with Babel
# (`python -m tools.i18n_catalogue update`, see CONTRIBUTING.md "Adding a message") and read directly.
LOCALE_DIR = PROJECT_ROOT / "locale"
DOMAIN = "course"


@cache
def translations(language: str) -> dict[str, str]:
    """The translated messages of `language`'s catalogue (locale/<language>/LC_MESSAGES/course.po), by
    English text; an untranslated or fuzzy entry is left out, so t() reports it instead of printing English."""
    from babel.messages.pofile import read_po

    path = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as file:
        catalog = read_po(file, locale=language, domain=DOMAIN)
    return {message.id: message.string for message in catalog if message.id and message.string and not message.fuzzy}


def main(argv: list[str] | None = None) -> int:
    """`python -m lessons.core.i18n [--folder]`: print the language the setting chooses (or its notebook folder)."""
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
else:
    # A notebook that speaks Chinese draws Chinese plot text: every translated notebook imports `t` in its first
    # cell, so this registers the packaged font before any plot, no cell needed (imported here, at the end: plot_fonts
    # imports this module).
    from lessons.core.plot_fonts import chinese_plots

    chinese_plots()

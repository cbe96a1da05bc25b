"""The message catalogue of the course's printed strings: extract them with Babel, merge, check.

`lessons.core.i18n.t("English text")` looks the text up in `locale/<language>/LC_MESSAGES/course.po`
(gettext's format, the English text as msgid). This tool keeps that file in step with the code:

    python -m tools.i18n_catalogue update   # extract every t("…") and t_labels(…, […]) key from masters/, lessons/
                                            # and service/ with Babel; add new keys (empty msgstr, to translate),
                                            # mark keys no code uses any more obsolete (#~)
    python -m tools.i18n_catalogue check    # exit 1 naming every untranslated, fuzzy or obsolete entry and every
                                            # entry whose {placeholders} differ (Babel's checkers)

The placeholder check runs Babel's checkers (the `babel.checkers` entry points) on every entry, with `brace_format`
below, a checker of Babel's shape, in place of Babel's `python_format`: that one checks %-style messages only (and
reads "95%" as a placeholder), while the course's messages are `str.format` templates.
"""

from __future__ import annotations

import ast
import string
import sys
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog, Message, TranslationError
from babel.messages.checkers import checkers as babel_checkers
from babel.messages.checkers import python_format
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from lessons.core.settings import PROJECT_ROOT

DOMAIN = "course"
LOCALE_DIR = PROJECT_ROOT / "locale"
SOURCES = ("masters", "lessons", "service")  # where t() is called
KEYWORDS = {"t": None, "t_labels": None, "N_": None}  # the calls whose literal keys are msgids (extract_course)


def catalogue_path(language: str) -> Path:
    """The .po file of `language`."""
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def extract_course(fileobj, keywords, comment_tags, options) -> Iterator[tuple[int, str, str, list[str]]]:
    """A Babel extraction method: the literal first argument of every `t("…")` and `N_("…")` call and each literal
    key of every `t_labels(table, ["key", …])`. Babel's own Python extractor misses a t() nested in another t()'s arguments
    (`t("{text}.", text=t("gold quotes cut in two"))`) and the keys inside a list, so this one reads the syntax tree."""
    tree = ast.parse(fileobj.read().decode(options.get("encoding", "utf-8")))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in keywords):
            continue
        if node.func.id == "t_labels":
            literals = getattr(node.args[1], "elts", []) if len(node.args) == 2 else []
        else:
            literals = node.args[:1]
        for key in literals:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.lineno, node.func.id, key.value, []


def extract() -> Catalog:
    """Every key the code passes to t() or t_labels(), extracted with Babel (no locations: they churn)."""
    template = Catalog(domain=DOMAIN, project="agentic-rag-course")
    for source in SOURCES:
        root = PROJECT_ROOT / source
        for _file, _line, message, _comments, context in extract_from_dir(
            root, method_map=[("**.py", extract_course)], keywords=KEYWORDS, comment_tags=(), strip_comment_tags=True
        ):
            template.add(message, context=context)
    return template


def brace_format(catalog: Catalog | None, message: Message) -> None:
    """Babel checker: a translation uses exactly the `{placeholders}` (names and format specs) of its msgid."""
    if not message.id or not message.string or isinstance(message.id, tuple):
        return

    def fields(text: str) -> list[str]:
        try:
            return sorted(
                f"{{{name}:{spec}}}" for _, name, spec, _ in string.Formatter().parse(text) if name is not None
            )
        except ValueError as error:
            raise TranslationError(f"not a str.format template: {error}") from error

    if fields(message.id) != fields(message.string):
        raise TranslationError(f"placeholders differ: {fields(message.id)} in English, {fields(message.string)} here")


def problems(catalog: Catalog) -> list[str]:
    """Each untranslated, fuzzy or obsolete entry, and each one a checker rejects, as one line."""
    found = [f"obsolete (no code uses it): {key!r}" for key in catalog.obsolete]
    # Babel's python_format reads "95%" as a %-placeholder: the course's messages are str.format templates.
    checkers = [check for check in babel_checkers if check is not python_format and check is not brace_format]
    checkers.append(brace_format)
    for message in catalog:
        if not message.id:
            continue  # the header
        if not message.string:
            found.append(f"untranslated: {message.id!r}")
            continue
        if message.fuzzy:
            found.append(f"fuzzy (check the translation, then remove the fuzzy flag): {message.id!r}")
        for checker in checkers:
            try:
                checker(catalog, message)
            except TranslationError as error:
                found.append(f"{error}: {message.id!r}")
    return found


def read(language: str) -> Catalog:
    """The catalogue of `language` as Babel reads it."""
    with catalogue_path(language).open("rb") as file:
        return read_po(file, locale=language, domain=DOMAIN)


def write(catalog: Catalog, language: str) -> None:
    """Write the catalogue, every message flagged `python-brace-format` (what its placeholders are) and not
    `python-format` (which Babel guesses from a "%" in the text)."""
    for message in catalog:
        if message.id:
            message.flags.discard("python-format")
            message.flags.add("python-brace-format")
    path = catalogue_path(language)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_po(file, catalog, width=0, no_location=True, omit_header=False, include_previous=False)


def update(language: str = "zh") -> Catalog:
    """Merge the extracted keys into the catalogue: new keys untranslated, vanished keys obsolete."""
    catalog = read(language)
    template = extract()
    template.creation_date = catalog.creation_date  # the header changes only when the keys do
    catalog.update(template, no_fuzzy_matching=True, update_header_comment=False)
    write(catalog, language)
    return catalog


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] not in (["update"], ["check"]):
        print("usage: python -m tools.i18n_catalogue update|check", file=sys.stderr)
        return 2
    catalog = update() if args[0] == "update" else read("zh")
    found = problems(catalog)
    for line in found:
        print(f"{catalogue_path('zh').relative_to(PROJECT_ROOT)}: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

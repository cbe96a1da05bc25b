"""Chinese text in the course's plots: a packaged CJK font, registered with matplotlib as a fallback.

The Chinese copies of the notebooks (notebooks/zh/) title and label their plots through `lessons.core.i18n.t()`,
but matplotlib's own fonts (DejaVu, STIX) have no Chinese glyphs and a fresh laptop may have no CJK font it
finds: the text would render as empty boxes with "Glyph … missing from font(s) DejaVu Sans" warnings. The course therefore installs Noto Sans SC
(SIL Open Font License 1.1) from PyPI, inside the data-only package `pylopdf-fonts-zh-cn`, and
`use_chinese_font()` registers that file with matplotlib's font manager, lists its family right after
DejaVu Sans in `rcParams["font.sans-serif"]`, and appends it to `rcParams["font.family"]`, followed by the
common system Chinese fonts this machine has (`SYSTEM_FAMILIES`). matplotlib
resolves each entry of font.family to one font ("sans-serif" to the first installed one of font.sans-serif,
DejaVu Sans) and falls back glyph by glyph along font.family, so Latin text keeps DejaVu Sans (plots look as
before) and only the characters DejaVu lacks come from Noto.

Nothing is downloaded at run time. `chinese_plots()` sets this up when the course speaks Chinese; it runs when
`lessons.core.i18n` is imported (every translated notebook imports `t` in its first cell, so no notebook cell
mentions fonts) and again in every figure helper of lessons/ before it draws, so a figure is Chinese-ready even
when the language was chosen after that import. Without the package the figures still draw: with a system Chinese
font if there is one, else the course says once, in the reader's language, which pip command installs the font.
"""

from __future__ import annotations

import warnings
from pathlib import Path

PACKAGE = "pylopdf-fonts-zh-cn"
VERSION = "0.1.1"  # as pinned in pyproject.toml and requirements.lock
FAMILY = "Noto Sans SC"
# The font the plots' Latin text keeps; the Chinese fonts go right after it in the fallback list.
LATIN_FAMILY = "DejaVu Sans"
# Chinese fonts a machine may have (Linux, Windows, macOS, older Linux), tried after the packaged one. Only those
# matplotlib finds are listed: for a listed family it lacks it logs "findfont: Font family … not found" at each draw.
SYSTEM_FAMILIES = ("Noto Sans CJK SC", "Microsoft YaHei", "PingFang SC", "WenQuanYi Micro Hei")
INSTALL_COMMAND = f".venv/bin/pip install {PACKAGE}=={VERSION}"

_told: set[str] = set()  # the warnings already given: each is said once per process, not at every figure


class ChineseFontWarning(UserWarning):
    """The packaged Chinese font could not be set up: Chinese plot text will show as empty boxes."""


def chinese_font_path() -> Path | None:
    """The packaged Noto Sans SC file (NotoSansSC-Regular.otf), or None when its package is not installed."""
    try:
        import pylopdf_fonts_zh_cn
    except ImportError:
        return None
    path = Path(pylopdf_fonts_zh_cn.sans_path())
    return path if path.is_file() else None


def installed_system_families() -> list[str]:
    """The `SYSTEM_FAMILIES` matplotlib's font manager knows on this machine, in that order."""
    from matplotlib import font_manager

    known = {entry.name for entry in font_manager.fontManager.ttflist}
    return [name for name in SYSTEM_FAMILIES if name in known]


def chinese_plots() -> Path | None:
    """Set matplotlib up for Chinese text when the course speaks Chinese (`use_chinese_font()`), else do nothing.

    The one call the course makes: `lessons.core.i18n` on import, and every figure helper in lessons/ before it draws
    (cheap after the first time). A bad language setting is left to t() to report where it is used.
    """
    from lessons.core.i18n import ENGLISH, LanguageError, course_language

    try:
        language = course_language()
    except LanguageError:
        return None
    return use_chinese_font() if language != ENGLISH else None


def use_chinese_font() -> Path | None:
    """Let matplotlib draw Chinese text with the packaged Noto Sans SC; returns the font file, or None.

    Idempotent: registers the file once and keeps one entry for each Chinese family in `rcParams["font.sans-serif"]`,
    right after DejaVu Sans (at the end when DejaVu Sans has been taken out of the list), and at the end of
    `rcParams["font.family"]`, the list matplotlib falls back along glyph by glyph: the packaged font first, then the
    installed `SYSTEM_FAMILIES`. Never raises: with a packaged file matplotlib cannot read, or without the package and
    without a system Chinese font, it warns (ChineseFontWarning, each message once per process) with the fix; with no
    Chinese font at all it leaves matplotlib as it was.
    """
    import matplotlib
    from matplotlib import font_manager

    from lessons.core.i18n import t  # here: lessons.core.i18n calls this function while it is imported

    path, families, broken = chinese_font_path(), [], False
    if path is not None:
        try:
            manager = font_manager.fontManager
            if not any(Path(entry.fname) == path for entry in manager.ttflist):
                manager.addfont(str(path))
            families.append(font_manager.FontProperties(fname=str(path)).get_name())
        except Exception as error:  # noqa: BLE001 - a broken install must not stop a notebook; its plots lack Chinese
            _warn_once(
                t(
                    "Could not register the Chinese plot font {path} with matplotlib ({error}): Chinese "
                    "titles and labels will show as empty boxes. Reinstall it with: {command} --force-reinstall",
                    path=path,
                    error=repr(error),
                    command=INSTALL_COMMAND,
                )
            )
            path, broken = None, True
    families += [name for name in installed_system_families() if name not in families]
    if not families:
        if not broken:
            _warn_once(
                t(
                    "The Chinese font for plots is not installed: Chinese titles and labels will show as "
                    "empty boxes. Install it from PyPI, in the course folder, with: {command}  "
                    "(or run scripts/setup.sh again), then restart the kernel",
                    command=INSTALL_COMMAND,
                )
            )
        return None
    fallback = [name for name in matplotlib.rcParams["font.sans-serif"] if name not in families]
    at = fallback.index(LATIN_FAMILY) + 1 if LATIN_FAMILY in fallback else len(fallback)
    matplotlib.rcParams["font.sans-serif"] = [*fallback[:at], *families, *fallback[at:]]
    chosen = matplotlib.rcParams["font.family"]
    chosen = [chosen] if isinstance(chosen, str) else list(chosen)
    matplotlib.rcParams["font.family"] = [name for name in chosen if name not in families] + families
    return path


def _warn_once(message: str) -> None:
    """Warn with `message` (ChineseFontWarning) unless this process has already said it."""
    if message not in _told:
        _told.add(message)
        warnings.warn(message, ChineseFontWarning, stacklevel=3)

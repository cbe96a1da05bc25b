"""Chinese text in the course's plots: a packaged CJK font, registered with matplotlib as a fallback.

The Chinese copies of the notebooks (notebooks/zh/) title and label their plots through `lessons.core.i18n.t()`,
but matplotlib's own fonts (DejaVu, STIX) have no Chinese glyphs and a fresh laptop may have no CJK font it
finds: the text would render as empty boxes with "Glyph … missing from font(s) DejaVu Sans" warnings. The course therefore installs Noto Sans SC
(SIL Open Font License 1.1) from PyPI, inside the data-only package `pylopdf-fonts-zh-cn`, and
`use_chinese_font()` registers that file with matplotlib's font manager, lists its family right after
DejaVu Sans in `rcParams["font.sans-serif"]`, and appends it to `rcParams["font.family"]`. matplotlib
resolves each entry of font.family to one font ("sans-serif" to the first installed one of font.sans-serif,
DejaVu Sans) and falls back glyph by glyph along font.family, so Latin text keeps DejaVu Sans (plots look as
before) and only the characters DejaVu lacks come from Noto.

Nothing is downloaded at run time. `lessons.core.i18n` calls `use_chinese_font()` when it is imported in a
Chinese notebook (every translated notebook imports `t` in its first cell), so no notebook cell mentions
fonts. Without the package the call warns once, naming the pip command, and changes nothing.
"""

from __future__ import annotations

import warnings
from pathlib import Path

PACKAGE = "pylopdf-fonts-zh-cn"
VERSION = "0.1.1"  # as pinned in pyproject.toml and requirements.lock
FAMILY = "Noto Sans SC"
# The font the plots' Latin text keeps; the Chinese font goes right after it in the fallback list.
LATIN_FAMILY = "DejaVu Sans"
INSTALL_COMMAND = f".venv/bin/pip install {PACKAGE}=={VERSION}"


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


def use_chinese_font() -> Path | None:
    """Let matplotlib draw Chinese text with the packaged Noto Sans SC; returns the font file, or None.

    Idempotent: registers the file once and keeps one entry for it in `rcParams["font.sans-serif"]`, right
    after DejaVu Sans (at the end when DejaVu Sans has been taken out of the list), and one at the end of
    `rcParams["font.family"]`, the list matplotlib falls back along glyph by glyph. Never raises:
    without the package, or with a file matplotlib cannot read, it warns (ChineseFontWarning) with the
    fix and leaves matplotlib as it was.
    """
    from lessons.core.i18n import t  # here: lessons.core.i18n calls this function while it is imported

    path = chinese_font_path()
    if path is None:
        warnings.warn(
            t(
                "The Chinese font for plots is not installed: Chinese titles and labels will show as "
                "empty boxes. Install it from PyPI, in the course folder, with: {command}  "
                "(or run scripts/setup.sh again), then restart the kernel",
                command=INSTALL_COMMAND,
            ),
            ChineseFontWarning,
            stacklevel=2,
        )
        return None
    try:
        import matplotlib
        from matplotlib import font_manager

        manager = font_manager.fontManager
        if not any(Path(entry.fname) == path for entry in manager.ttflist):
            manager.addfont(str(path))
        family = font_manager.FontProperties(fname=str(path)).get_name()
        fallback = [name for name in matplotlib.rcParams["font.sans-serif"] if name != family]
        at = fallback.index(LATIN_FAMILY) + 1 if LATIN_FAMILY in fallback else len(fallback)
        matplotlib.rcParams["font.sans-serif"] = [*fallback[:at], family, *fallback[at:]]
        families = matplotlib.rcParams["font.family"]
        families = [families] if isinstance(families, str) else list(families)
        matplotlib.rcParams["font.family"] = [name for name in families if name != family] + [family]
    except Exception as error:  # noqa: BLE001 - a broken install must not stop a notebook; its plots lack Chinese
        warnings.warn(
            t(
                "Could not register the Chinese plot font {path} with matplotlib ({error}): Chinese "
                "titles and labels will show as empty boxes. Reinstall it with: {command} --force-reinstall",
                path=path,
                error=repr(error),
                command=INSTALL_COMMAND,
            ),
            ChineseFontWarning,
            stacklevel=2,
        )
        return None
    return path

"""lessons.core.plot_fonts: Chinese plot text renders with the packaged Noto Sans SC, English keeps DejaVu Sans,
and without the package the course warns with the pip command instead of failing."""

import builtins
import re
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from lessons.core import plot_fonts
from lessons.core.settings import PROJECT_ROOT

CHINESE_TITLE = "有门控 vs 无门控，按语言分列"


@pytest.fixture
def fresh_rc():
    """matplotlib's default font lists, whatever ran before; the test's changes are undone afterwards."""
    with matplotlib.rc_context({key: matplotlib.rcParamsDefault[key] for key in ("font.family", "font.sans-serif")}):
        yield


def _render(title: str) -> list[str]:
    """Draw a figure titled `title` on an Agg canvas; the warnings it raised."""
    figure = Figure(figsize=(3, 2))
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.set_xlabel("问题占比 (share of questions)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FigureCanvasAgg(figure).draw()
    return [str(w.message) for w in caught]


def test_the_font_ships_in_the_pinned_package_under_the_ofl():
    from importlib.metadata import distribution

    dist = distribution(plot_fonts.PACKAGE)
    assert dist.version == plot_fonts.VERSION
    assert "SIL Open Font License" in (dist.metadata["License"] or "")
    path = plot_fonts.chinese_font_path()
    assert path is not None and path.name == "NotoSansSC-Regular.otf"
    assert Path(dist.locate_file(f"pylopdf_fonts_zh_cn/{path.name}")).resolve() == path.resolve()
    assert font_manager.FontProperties(fname=str(path)).get_name() == plot_fonts.FAMILY
    pinned = re.search(r'"pylopdf-fonts-zh-cn==([^"]+)"', (PROJECT_ROOT / "pyproject.toml").read_text())
    assert pinned and pinned.group(1) == plot_fonts.VERSION


def test_chinese_title_renders_with_the_packaged_font_and_english_keeps_dejavu(fresh_rc):
    assert any("missing from font" in message for message in _render(CHINESE_TITLE)), (
        "without the helper DejaVu Sans has no Chinese glyphs (else this test proves nothing)"
    )

    path = plot_fonts.use_chinese_font()
    assert path == plot_fonts.chinese_font_path()
    sans_serif, families = matplotlib.rcParams["font.sans-serif"], matplotlib.rcParams["font.family"]
    assert sans_serif[:2] == [plot_fonts.LATIN_FAMILY, plot_fonts.FAMILY]
    assert families == ["sans-serif", plot_fonts.FAMILY], "matplotlib falls back glyph by glyph along font.family"

    assert not [m for m in _render(CHINESE_TITLE) if re.search(r"Glyph .* missing", m)]
    # The fonts a default Text draws with, in fallback order (what the Agg renderer asks the font manager).
    fonts = font_manager.fontManager._find_fonts_by_props(font_manager.FontProperties(family=families))
    assert [Path(f).name for f in fonts] == ["DejaVuSans.ttf", path.name]
    assert Path(fonts[1]).resolve() == path.resolve(), "the Chinese glyphs come from the packaged file"
    assert Path(font_manager.findfont(font_manager.FontProperties(family=["sans-serif"]))).name == "DejaVuSans.ttf", (
        "English text looks unchanged"
    )

    plot_fonts.use_chinese_font()
    assert matplotlib.rcParams["font.sans-serif"] == sans_serif, "a second call changes nothing"
    assert matplotlib.rcParams["font.family"] == families
    assert sum(Path(f.fname) == path for f in font_manager.fontManager.ttflist) == 1


def test_without_the_package_it_warns_with_the_pip_command_and_changes_nothing(fresh_rc, monkeypatch):
    real_import = builtins.__import__

    def no_font_package(name, *args, **kwargs):
        if name == "pylopdf_fonts_zh_cn":
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "pylopdf_fonts_zh_cn", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_font_package)
    monkeypatch.setattr(plot_fonts, "installed_system_families", list)  # a machine without a Chinese font
    monkeypatch.setattr(plot_fonts, "_told", set())
    before = list(matplotlib.rcParams["font.sans-serif"]), list(matplotlib.rcParams["font.family"])
    with pytest.warns(
        plot_fonts.ChineseFontWarning,
        match=r"empty boxes\. Install it .*: \.venv/bin/pip install pylopdf-fonts-zh-cn==0\.1\.1",
    ):
        assert plot_fonts.use_chinese_font() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", plot_fonts.ChineseFontWarning)
        assert plot_fonts.use_chinese_font() is None, "every figure helper calls it: said once, not at every figure"
    assert (matplotlib.rcParams["font.sans-serif"], matplotlib.rcParams["font.family"]) == before


def test_without_the_package_a_system_chinese_font_is_used_and_nothing_is_said(fresh_rc, monkeypatch):
    """A machine with one of the common Chinese fonts (here the packaged file, registered as if the system had it)."""
    path = plot_fonts.chinese_font_path()
    font_manager.fontManager.addfont(str(path))
    monkeypatch.setattr(plot_fonts, "chinese_font_path", lambda: None)
    monkeypatch.setattr(plot_fonts, "SYSTEM_FAMILIES", ("No Such Font SC", plot_fonts.FAMILY))
    monkeypatch.setattr(plot_fonts, "_told", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error", plot_fonts.ChineseFontWarning)
        assert plot_fonts.use_chinese_font() is None
    assert matplotlib.rcParams["font.family"] == ["sans-serif", plot_fonts.FAMILY], "only the installed one is listed"
    assert not [m for m in _render(CHINESE_TITLE) if re.search(r"Glyph .* missing", m)]


def test_a_font_matplotlib_cannot_read_warns_instead_of_failing(fresh_rc, monkeypatch, tmp_path):
    broken = tmp_path / "NotoSansSC-Regular.otf"
    broken.write_bytes(b"not a font")
    monkeypatch.setattr(plot_fonts, "chinese_font_path", lambda: broken)
    monkeypatch.setattr(plot_fonts, "_told", set())
    with pytest.warns(plot_fonts.ChineseFontWarning, match="--force-reinstall"):
        assert plot_fonts.use_chinese_font() is None


@pytest.mark.parametrize(("folder", "registered"), [("notebooks/zh", True), ("notebooks", False)])
def test_importing_t_in_a_notebook_folder_sets_up_chinese_plots_only_for_chinese(folder, registered):
    """What a notebook's first cell does (`import matplotlib.pyplot as plt` … `from lessons.core.i18n import t`), in
    the notebook's folder; a Chinese copy then draws a Chinese title with no warning at all."""
    draw = f"fig, ax = plt.subplots(); ax.set_title({CHINESE_TITLE!r}); fig.canvas.draw(); " if registered else ""
    code = f"import matplotlib.pyplot as plt; from lessons.core.i18n import t; {draw}print(plt.rcParams['font.family'])"
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=PROJECT_ROOT / folder,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT), "HOME": str(Path.home()), "MPLBACKEND": "Agg"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("['sans-serif', 'Noto Sans SC']" if registered else "['sans-serif']")


def test_the_course_figure_helpers_draw_chinese_without_missing_glyphs(fresh_rc, tmp_path, monkeypatch):
    """lessons.evaluation.plot_corpora (notebook 06) in a Chinese notebook folder: its titles, legend and corpus names
    are Chinese and every glyph is found, though the font was not set up when lessons.core.i18n was imported."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from lessons.core.i18n import t
    from lessons.evaluation import plot_corpora

    (tmp_path / "masters").mkdir()
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    monkeypatch.delenv("AGENTIC_RAG_LANG", raising=False)
    monkeypatch.chdir(tmp_path / "notebooks" / "zh")
    assert t("corpus") != "corpus", "the labels are Chinese, else this proves nothing"
    corpora = ("产品手册", "英文论文")
    retrieval = pd.DataFrame(
        [{"pipeline": name, "corpus": corpus, "recall@5": 0.5} for name in ("dense", "hybrid") for corpus in corpora]
    )
    table = pd.DataFrame(
        {"completeness": [0.5, 0.7], "abstained (out-of-KB)": [0.2, 0.4], "LLM calls/question": [1.0, 2.0]},
        index=["dense", "hybrid"],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure = plot_corpora(retrieval, dict.fromkeys(corpora, table), 5)
        figure.canvas.draw()
    plt.close(figure)
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]

"""Presentation sits above analysis: ``present/`` may import ``analysis/``, never the reverse.

``analysis/`` computes (statistics, slices, rank diffs) and reads no notes database;
``present/`` lays out what it computed (figures, the HTML report) for both the dashboard
and the command line, so it imports neither of them nor Streamlit. Checked on the source
text (``ast``), imports inside functions and ``TYPE_CHECKING`` blocks included.
"""

from __future__ import annotations

from pathlib import Path

import layering
import pytest

import mmbright_core

PACKAGE = Path(mmbright_core.__file__).parent
BANNED = {
    "analysis": (
        "mmbright_core.present",
        "mmbright_core.ui",
        "mmbright_core.cli",
        "mmbright_core.notes",
        "plotly",
        "streamlit",
    ),
    "present": ("mmbright_core.ui", "mmbright_core.cli", "mmbright_core.notes", "streamlit"),
}
MODULES = [
    (layer, path) for layer in sorted(BANNED) for path in sorted((PACKAGE / layer).glob("*.py"))
]


def _above(path: Path, layer: str) -> set[str]:
    found = layering.imported_modules(path, f"mmbright_core.{layer}")
    return {
        name
        for name in found
        if any(name == banned or name.startswith(f"{banned}.") for banned in BANNED[layer])
    }


def test_the_presentation_package_holds_the_figures_and_the_report() -> None:
    assert {p.stem for p in (PACKAGE / "present").glob("*.py")} >= {
        "figures",
        "palette",
        "report",
        "report_tables",
    }


@pytest.mark.parametrize(("layer", "path"), MODULES, ids=lambda v: getattr(v, "stem", v))
def test_module_imports_nothing_above_its_layer(layer: str, path: Path) -> None:
    above = _above(path, layer)
    assert not above, f"{layer}/{path.name} imports {sorted(above)}"


def test_the_check_sees_a_lazy_notes_import(tmp_path: Path) -> None:
    source = tmp_path / "bad.py"
    source.write_text(
        "def f():\n    from mmbright_core.notes import NotesStore\n"
        "    from ..present import figures\n",
        encoding="utf-8",
    )
    assert _above(source, "analysis") == {
        "mmbright_core.notes",
        "mmbright_core.notes.NotesStore",
        "mmbright_core.present",
        "mmbright_core.present.figures",
    }

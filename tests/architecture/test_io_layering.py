"""The I/O layer depends on nothing above it: no metrics, analysis, data, retrieval, UI or CLI.

Checked on the source (``ast``) rather than through ``sys.modules``: importing any
submodule runs ``mmbright_core/__init__.py``, which loads the metrics for the public API.
Imports inside functions and ``TYPE_CHECKING`` blocks count as well.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import layering
import pytest

import mmbright_core.io

FORBIDDEN = ("metrics", "analysis", "data", "retrieval", "ui", "cli")
IO_DIR = Path(mmbright_core.io.__file__).parent
MODULES = sorted(IO_DIR.glob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Every module the file imports, relative imports resolved against ``mmbright_core.io``."""
    return layering.imported_modules(path, "mmbright_core.io")


def test_every_io_module_is_checked() -> None:
    assert {p.stem for p in MODULES} >= {"__init__", "atomic", "official", "qrels", "runs"}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_io_module_imports_nothing_above_it(path: Path) -> None:
    name = "mmbright_core.io" if path.stem == "__init__" else f"mmbright_core.io.{path.stem}"
    importlib.import_module(name)  # it loads on its own
    above = {
        module
        for module in imported_modules(path)
        if module.split(".")[:2] in (["mmbright_core", layer] for layer in FORBIDDEN)
    }
    assert not above, f"{name} imports {sorted(above)}"


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    found = layering.imports_of_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from mmbright_core.metrics import evaluate\n"
        "def f():\n    import mmbright_core.ui.common.state\n    from ..analysis import table\n",
        tmp_path,
        "mmbright_core.io",
    )
    assert {
        "mmbright_core.metrics",
        "mmbright_core.ui.common.state",
        "mmbright_core.analysis",
    } <= found

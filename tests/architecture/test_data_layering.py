"""The task protocols read through a protocol, never through the source that builds them.

``sources`` builds tasks, so ``tasks`` importing ``sources`` (even for typing) would tie the
two together again; the parts of a source (files, records, images) sit below both.
Checked on the source text (``ast``), ``TYPE_CHECKING`` blocks and function bodies included.
"""

from __future__ import annotations

from pathlib import Path

import layering
import pytest

import mmbright_core.data

DATA_DIR = Path(mmbright_core.data.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module the file imports, relative imports resolved against ``mmbright_core.data``."""
    return layering.imported_modules(path, "mmbright_core.data")


@pytest.mark.parametrize(
    ("module", "below"),
    [
        ("tasks", ("sources", "view")),
        ("task_inputs", ("sources", "tasks", "view")),
        ("pairs", ("sources", "tasks", "view")),
        ("files", ("sources", "tasks", "records", "image_store", "view")),
        ("records", ("sources", "tasks", "image_store", "view")),
        ("image_store", ("sources", "tasks", "records", "view")),
        ("sources", ("view",)),
    ],
)
def test_module_does_not_import_what_builds_on_it(module: str, below: tuple[str, ...]) -> None:
    found = imported_modules(DATA_DIR / f"{module}.py")
    banned = {f"mmbright_core.data.{name}" for name in below}
    assert not found & banned, f"{module} imports {sorted(found & banned)}"


def test_the_check_sees_a_typing_only_import(tmp_path: Path) -> None:
    found = layering.imports_of_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from mmbright_core.data.sources import Source\n"
        "def f():\n    from . import records\n",
        tmp_path,
        "mmbright_core.data",
    )
    assert {"mmbright_core.data.sources.Source", "mmbright_core.data.records"} <= found


def test_a_source_satisfies_the_task_protocol(fixture_dir: Path) -> None:
    from mmbright_core.data.sources import FolderSource
    from mmbright_core.data.task_inputs import TaskSource, read_passages

    source: TaskSource = FolderSource(fixture_dir)
    ids, _ = read_passages(source, "academia", text=False)
    assert ids

"""The dashboard reads a run's configuration as the typed ``RunConfig``, never as raw JSON.

Checked on the source (``ast``): ``config.json`` is read and checked once, when a folder is
loaded (``analysis/lineage.py``), and a page asks the value's attributes and its lineage.
In ``ui/`` nothing reads the raw ``run_config`` of an outputs folder, subscripts a
configuration (``config["options"]``) or asks it for a key (``config.get("preset")``).
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import mmbright_core
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.ui.common.state import RunEntry

UI = Path(mmbright_core.__file__).parent / "ui"
_CONFIG_NAMES = frozenset({"config", "configs", "run_config", "recorded"})


def _names_a_config(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _CONFIG_NAMES
    return isinstance(node, ast.Attribute) and node.attr in _CONFIG_NAMES


def raw_reads(source: str) -> list[int]:
    """The lines that read a configuration as a dict: ``.run_config``, ``c[...]``, ``c.get``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        raw = (
            (isinstance(node, ast.Attribute) and node.attr == "run_config")
            or (isinstance(node, ast.Subscript) and _names_a_config(node.value))
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "items", "keys", "values")
                and _names_a_config(node.func.value)
            )
        )
        if raw:
            found.append(node.lineno)
    return sorted(found)


def test_the_check_sees_each_way_of_reading_a_raw_configuration() -> None:
    source = (
        "a = entry.config['options']\n"
        "b = config.get('preset')\n"
        "c = outputs.run_config\n"
        "d = entry.config.preset\n"
        "e = entry.lineage.reranks\n"
    )
    assert raw_reads(source) == [1, 2, 3]


def test_no_page_reads_a_raw_configuration() -> None:
    offending = {
        str(path.relative_to(UI)): lines
        for path in sorted(UI.rglob("*.py"))
        if (lines := raw_reads(path.read_text(encoding="utf-8")))
    }
    assert not offending, offending


def test_a_loaded_run_carries_its_configuration_typed() -> None:
    hints = typing.get_type_hints(RunEntry, localns={"RunConfig": RunConfig})
    assert hints["config"] == RunConfig | None

"""A task is read through one view: no function takes its source, task and protocol apart.

Checked on the source (``ast``): a function whose parameters include ``source``, ``task``
and ``protocol`` together takes what a :class:`~mmbright_core.data.view.TaskView` is, three
values that travel apart; a ``tuple[...]`` type wider than a query reference's key spells a
query's parts (the view's, its domain and id, a run's) as loose strings again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mmbright_core

PACKAGE = Path(mmbright_core.__file__).parent
LOOSE = {"source", "task", "protocol"}
WIDEST_KEY = 5
"""The widest tuple a type may spell: a query reference's key (source, task, protocol,
domain, query id)."""

ALLOWED = {
    # What a source builds a view's data from: below the source, so below the view
    # (tests/architecture/test_data_layering.py).
    "data/tasks.py:build_task",
    # A run's configuration records the source's name, the task and the protocol as its
    # fields: strings read back from config.json, with no source to view.
    "retrieval/base.py:build",
    # The notes' filter on any of a key's fields, each optional (``mmbright notes export
    # --task 2``): a selection, not a view.
    "notes/store.py:records",
}


def loose_functions(root: Path = PACKAGE) -> set[str]:
    """``path:function`` of every function taking ``source``, ``task`` and ``protocol``."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
                if names >= LOOSE:
                    found.add(f"{path.relative_to(root).as_posix()}:{node.name}")
    return found


def wide_tuples(root: Path = PACKAGE) -> list[str]:
    """``path:line`` of every ``tuple[...]`` type with more than :data:`WIDEST_KEY` items."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == "tuple"
                and isinstance(node.slice, ast.Tuple)
                and len(node.slice.elts) > WIDEST_KEY
            ):
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_no_function_takes_source_task_and_protocol_apart() -> None:
    assert loose_functions() <= ALLOWED, "take a TaskView (mmbright_core/data/view.py)"


def test_every_allowed_function_still_exists() -> None:
    assert loose_functions() >= ALLOWED, "drop the converted functions from ALLOWED"


def test_no_key_spells_a_query_as_loose_parts() -> None:
    assert wide_tuples() == [], "key a query by its QueryRef (mmbright_core/data/view.py)"


def test_the_checks_see_what_they_refuse(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "def f(source, task, domain, *, protocol='paper'): ...\n"
        "Key = tuple[str, int, str, str, str, str, str]\n",
        encoding="utf-8",
    )
    assert loose_functions(tmp_path) == {"m.py:f"}
    assert wide_tuples(tmp_path) == ["m.py:2"]

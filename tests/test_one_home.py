"""Each concept has one home in the package: a pair id's spelling, a task's facts.

Checked on the source (``ast``): a string constant in code (docstrings, which describe the
format to readers, aside) spelling a pair id's separator or text-only marker, outside the
module that owns them, is a second definition of the format.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mmbright_core

PACKAGE = Path(mmbright_core.__file__).parent
PAIR_HOME = PACKAGE / "data" / "ids.py"
PAIR_SPELLINGS = ("|||", "__NO_IMAGE__")


def spelled_lines(source: str) -> list[int]:
    """The lines of the string constants in code that spell a pair id's parts."""
    tree = ast.parse(source)
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and any(s in node.value for s in PAIR_SPELLINGS)
    )


def test_a_pair_id_is_spelled_only_in_data_ids() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PAIR_HOME
        for line in spelled_lines(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"pair id spelled outside data/ids.py: {found}"
    assert spelled_lines(PAIR_HOME.read_text(encoding="utf-8"))


def test_the_check_sees_a_spelling_in_code_and_not_in_a_docstring() -> None:
    source = (
        '"""Pairs read ``<p>|||<i>``."""\n'
        'def f(x):\n    """Split ``|||``."""\n    return x.split("|||")\n'
        'MARK = f"{1}__NO_IMAGE__"\n'
    )
    assert spelled_lines(source) == [4, 5]

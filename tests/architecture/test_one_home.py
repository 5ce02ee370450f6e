"""Each concept has one home in the package: a pair id's spelling, a task's facts, the answer
cache's layout.

Checked on the source (``ast``): a string constant in code (docstrings, which describe the
format to readers, aside) spelling a pair id's separator or text-only marker, or the main
measure, outside the module that owns them, is a second definition of it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mmbright_core
from mmbright_core.task_table import MAIN_SCORE, RUN_DEPTH

PACKAGE = Path(mmbright_core.__file__).parent
PAIR_HOME = PACKAGE / "data" / "ids.py"
PAIR_SPELLINGS = ("|||", "__NO_IMAGE__")
TASK_HOME = PACKAGE / "task_table.py"
ANSWERS_HOME = PACKAGE / "retrieval" / "cache" / "answers.py"


def spelled_lines(
    source: str, spellings: tuple[str, ...] = PAIR_SPELLINGS, *, whole: bool = False
) -> list[int]:
    """The lines of the string constants in code that spell one of ``spellings``.

    ``whole``: only constants that are one of them entirely (not a help text citing one).
    """
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
        and any(node.value == s if whole else s in node.value for s in spellings)
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


def test_the_main_measure_is_written_out_only_in_the_task_table() -> None:
    main = (MAIN_SCORE,)
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != TASK_HOME
        for line in spelled_lines(path.read_text(encoding="utf-8"), main, whole=True)
    ]
    assert not found, f"read task_table.MAIN_SCORE instead: {found}"
    assert spelled_lines(TASK_HOME.read_text(encoding="utf-8"), main, whole=True)


def depth_constants(source: str) -> list[str]:
    """The module-level names of a depth or a cut (``*DEPTH*``, ``*_K``) bound to 1,000."""
    return [
        target.id
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Constant)
        and node.value.value == RUN_DEPTH
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and ("DEPTH" in target.id or target.id.endswith("_K"))
    ]


def test_the_run_depth_is_one_constant() -> None:
    found = {
        str(path.relative_to(PACKAGE)): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if (names := depth_constants(path.read_text(encoding="utf-8")))
    }
    assert found == {"task_table.py": ["RUN_DEPTH"]}
    source = "DEFAULT_K = 1000\nRUN_DEPTH: int = 1000\nLIMIT = 1000\nTOP_K = 10\n"
    assert depth_constants(source) == ["DEFAULT_K", "RUN_DEPTH"]


def _task_number(node: ast.expr) -> bool:
    """Whether ``node`` is a task number literal, or a tuple / set / list of them."""
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return bool(node.elts) and all(_task_number(e) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _task_number(node.body) or _task_number(node.orelse)
    return isinstance(node, ast.Constant) and node.value in (1, 2, 3, 4)


def _is_task(node: ast.expr) -> bool:
    """Whether ``node`` reads a task: ``task``, ``<something>.task`` or ``current_task()``."""
    if isinstance(node, ast.Call):
        return _is_task(node.func) or (
            isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_task")
        )
    return (isinstance(node, ast.Name) and node.id == "task") or (
        isinstance(node, ast.Attribute) and node.attr == "task"
    )


def task_branches(source: str) -> list[int]:
    """The lines comparing a task with task numbers (``task == 3``, ``data.task in (1, 2)``)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Compare)
        and _is_task(node.left)
        and any(_task_number(c) for c in node.comparators)
    )


def test_no_module_branches_on_a_task_number() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in task_branches(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"read the fact from mmbright_core.task_table instead: {found}"


def test_the_check_sees_each_kind_of_task_branch() -> None:
    source = (
        "if task == 3: pass\n"
        "if data.task in (1, 2): pass\n"
        "if query.task != 1: pass\n"
        "if data.task > 1: pass\n"
        "if task in ((4,) if name else (1, 2)): pass\n"
        "disabled = state.current_task() != 4\n"
        "if info.task_type == 'text_text' or tasks == 3 or task == 7: pass\n"
    )
    assert task_branches(source) == [1, 2, 3, 4, 5, 6]


ROOT = PACKAGE.parent
# A citation of a rule: "docs/<page>.md, <Section>", the section a heading of that page.
CITATION = re.compile(r"docs/(\w+)\.md, ((?:[A-Z][\w'-]*)(?: [\w'-]+)*)")


def _headings(page: str) -> set[str]:
    text = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
    return {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("## ")}


def test_every_cited_rule_is_a_section_of_the_docs() -> None:
    # Code points at rules a reader of the repository can open, never at files it lacks.
    unknown, cited = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert "SPEC §" not in text and "STYLE.md" not in text, path
        for page, section in CITATION.findall(text):
            cited += 1
            known = _headings(page)
            # A citation may name two sections ("Scoring and What peer tools do differently").
            parts = [part for part in section.split(" and ") if part]
            if not all(
                any(part.startswith(h) or h.startswith(part) for h in known) for part in parts
            ):
                unknown.append(f"{path.relative_to(PACKAGE)}: docs/{page}.md, {section}")
    assert cited > 50
    assert not unknown, unknown


def _first_two(node: ast.AST) -> bool:
    """Whether ``node`` is ``<something>[:2]``."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Slice)
        and node.slice.lower is None
        and node.slice.step is None
        and isinstance(node.slice.upper, ast.Constant)
        and node.slice.upper.value == 2
    )


def sharded_paths(source: str) -> list[int]:
    """The lines building a path from a key's first two characters (``<folder>/<key[:2]>/``).

    A path joined with ``/`` or ``os.path.join``, or spelled in an f-string with a ``/``,
    one of whose parts is ``<something>[:2]``.
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        parts: list[ast.AST] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("path.join"):
            parts = list(node.args)
        elif isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.Constant) and "/" in str(v.value) for v in node.values
        ):
            parts = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
        if isinstance(node, ast.expr) and any(_first_two(part) for part in parts):
            found.add(node.lineno)
    return sorted(found)


def test_the_answer_cache_layout_is_built_only_in_its_home() -> None:
    # One answer-cache implementation: every keyed JSON answer goes through AnswerCache.
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != ANSWERS_HOME
        for line in sharded_paths(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"keep answers with retrieval.cache.answers.AnswerCache: {found}"
    assert sharded_paths(ANSWERS_HOME.read_text(encoding="utf-8"))


def test_the_check_sees_each_spelling_of_a_sharded_path() -> None:
    source = (
        "a = root / key[:2] / f'{key}.json'\n"
        "b = os.path.join(root, name[:2], name)\n"
        "c = f'{root}/{key[:2]}/{key}.json'\n"
        "d = data[:2] == MAGIC\n"
        "e = f'{key[:2]} and more'\n"
    )
    assert sharded_paths(source) == [1, 2, 3]

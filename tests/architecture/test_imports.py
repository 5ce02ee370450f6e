"""Modules import one another without circles, and ``retrieval`` sits below ``analysis``.

Read from the source (``ast``) of every module of ``mmbright_core``: imports at the top, inside
functions and under ``TYPE_CHECKING`` all count, relative ones resolved. An import of a name
is an edge to the module that defines it (``from a.b import c`` goes to ``a.b.c`` when that is
a module, else to ``a.b``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from layering import NAME, PACKAGE, circles, import_graph


def upward_imports(graph: Mapping[str, Iterable[str]], lower: str, upper: str) -> list[str]:
    """``a -> b`` for each import from a module under ``lower`` of one under ``upper``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module == lower or module.startswith(f"{lower}.")
        for target in targets
        if target == upper or target.startswith(f"{upper}.")
    )


def test_retrieval_imports_nothing_from_analysis() -> None:
    found = upward_imports(import_graph(), f"{NAME}.retrieval", f"{NAME}.analysis")
    assert found == [], f"retrieval sits below analysis, yet: {found}"


def test_the_endpoint_client_sits_below_every_stage_that_calls_an_endpoint() -> None:
    # The api retriever, the chat client and the LLM rerankers share it: it imports none.
    graph = import_graph()
    found = [
        edge
        for upper in ("retrieval", "llm", "rerank", "analysis", "ui", "cli")
        for edge in upward_imports(graph, f"{NAME}.endpoints", f"{NAME}.{upper}")
    ]
    assert found == [], f"endpoints sits below the stages that call an endpoint, yet: {found}"


def test_retrieval_shows_its_parts_in_at_most_thirteen_entries() -> None:
    # The contract, the explanations, the registry with the built-ins' records and the
    # plugins, and one folder per part (docs/development.md, Structure).
    entries = sorted(p.name for p in (PACKAGE / "retrieval").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 13, entries
    folders = {p.name for p in (PACKAGE / "retrieval").iterdir() if (p / "__init__.py").is_file()}
    assert folders == {"lexical", "dual", "backends", "search", "cache", "catalogue", "runner"}


def _said(found: list[list[str]]) -> str:
    return "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_modules_import_each_other_in_a_circle() -> None:
    found = circles(import_graph())
    assert found == [], _said(found)


def test_the_check_sees_lazy_typing_and_relative_imports_in_a_circle(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "low").mkdir(parents=True)
    (root / "high").mkdir()
    for folder in (root, root / "low", root / "high"):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    (root / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high.b import B\n",
        encoding="utf-8",
    )
    (root / "high" / "b.py").write_text(
        "def f():\n    from ..low import a\n    from . import c\n", encoding="utf-8"
    )
    (root / "high" / "c.py").write_text("import pkg.low.a\n", encoding="utf-8")
    (root / "high" / "d.py").write_text("from pkg.low.a import A\n", encoding="utf-8")
    graph = import_graph(root, "pkg")
    assert graph["pkg.high.b"] == {"pkg.low.a", "pkg.high.c"}
    assert circles(graph) == [["pkg.high.b", "pkg.high.c", "pkg.low.a"]]
    assert upward_imports(graph, "pkg.low", "pkg.high") == ["pkg.low.a -> pkg.high.b"]


def test_the_plugin_guide_imports_nothing_from_analysis() -> None:
    """A plugin author reads the capability and the question from ``retrieval``'s modules."""
    guide = (PACKAGE.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert "mmbright_core.retrieval.explanation.Question" in guide
    assert f"{NAME}.analysis" not in guide

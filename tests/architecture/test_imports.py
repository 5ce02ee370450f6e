"""Modules import one another without circles, and ``retrieval`` sits below ``analysis``.

Read from the source (``ast``) of every module of ``mmbright_core``: imports at the top, inside
functions and under ``TYPE_CHECKING`` all count, relative ones resolved. An import of a name
is an edge to the module that defines it (``from a.b import c`` goes to ``a.b.c`` when that is
a module, else to ``a.b``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import layering

import mmbright_core

PACKAGE = Path(mmbright_core.__file__).parent
NAME = "mmbright_core"


def module_name(path: Path, root: Path = PACKAGE, name: str = NAME) -> str:
    """``<name>.a.b`` for ``<root>/a/b.py``; ``<root>/a/__init__.py`` is ``<name>.a``."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join([name, *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _package_of(path: Path, module: str) -> str:
    """The package relative imports of ``path`` resolve against."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def import_graph(root: Path = PACKAGE, name: str = NAME) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (every import counted)."""
    paths = {module_name(p, root, name): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets: set[str | None] = set()
        for imported, taken in layering.import_statements(path, _package_of(path, module)):
            if not taken:  # import a.b.c
                targets.add(_defining_module(imported, paths))
            for name in taken:  # from a.b import c: the module c, else a name of a.b
                whole = f"{imported}.{name}"
                targets.add(whole if whole in paths else _defining_module(imported, paths))
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def _defining_module(imported: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of ``imported`` that is a module of the package, if any."""
    parts = imported.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


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


def test_retrieval_shows_its_parts_in_at_most_twelve_entries() -> None:
    # The contract, the explanations, the registry and the plugins, and one folder per part
    # (docs/development.md, Structure).
    entries = sorted(p.name for p in (PACKAGE / "retrieval").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 12, entries
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

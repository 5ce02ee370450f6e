"""Which modules a source file imports, read from its text (``ast``), for the layering tests.

Imports inside functions and ``TYPE_CHECKING`` blocks count as well: checked on the text
rather than through ``sys.modules``, since importing any submodule runs
``mmbright_core/__init__.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from locations import ROOT

PACKAGE = ROOT / "mmbright_core"
NAME = "mmbright_core"


def import_statements(path: Path, package: str) -> list[tuple[str, list[str]]]:
    """Each import of the file as ``(module, names taken from it)``, relative ones resolved.

    ``import a.b`` is ``("a.b", [])``; ``from .c import d, e`` in ``package`` ``p`` is
    ``("p.c", ["d", "e"])``.
    """
    parts = package.split(".")
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x / from ..metrics import y
                base = parts[: len(parts) + 1 - node.level]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((module, [alias.name for alias in node.names]))
    return found


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module the file imports, relative imports resolved against ``package``."""
    names: set[str] = set()
    for module, taken in import_statements(path, package):
        names.add(module)
        names.update(f"{module}.{name}" for name in taken)
    return names


def imports_of_text(text: str, folder: Path, package: str) -> set[str]:
    """What a module of ``package`` holding ``text`` imports (written to ``folder/bad.py``)."""
    path = folder / "bad.py"
    path.write_text(text, encoding="utf-8")
    return imported_modules(path, package)


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
        for imported, taken in import_statements(path, _package_of(path, module)):
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


def _part(module: str, package: str) -> str | None:
    """The part of ``package`` that ``module`` belongs to: its child module or sub-package.

    The package's own ``__init__`` is the part named after the package itself.
    """
    if module == package:
        return package
    if not module.startswith(f"{package}."):
        return None
    return f"{package}.{module[len(package) + 1 :].split('.')[0]}"


def part_arrows(
    graph: Mapping[str, Iterable[str]], package: str
) -> dict[tuple[str, str], list[str]]:
    """``(part, part)`` -> each import ``a -> b`` from a module of the one of one of the other."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        source = _part(module, package)
        for target in targets:
            upper = _part(target, package)
            if source is not None and upper is not None and upper != source:
                arrows.setdefault((source, upper), []).append(f"{module} -> {target}")
    return {pair: sorted(found) for pair, found in sorted(arrows.items())}


def _lowest_first(parts: list[str], weight: Mapping[tuple[str, str], int]) -> list[str]:
    """The order of ``parts``, lowest first, in which the fewest imports climb (exact)."""
    best: dict[int, tuple[int, tuple[str, ...]]] = {0: (0, ())}
    for below in range(1 << len(parts)):  # subsets in increasing order: each one's best is final
        if below not in best:
            continue
        climbs, order = best[below]
        for index, part in enumerate(parts):
            if below >> index & 1:
                continue
            up = sum(weight.get((lower, part), 0) for lower in order)  # lower ones import it
            candidate = (climbs + up, (*order, part))
            grown = below | 1 << index
            if grown not in best or candidate < best[grown]:
                best[grown] = candidate
    return list(best[(1 << len(parts)) - 1][1])


def layer_order(
    graph: Mapping[str, Iterable[str]], package: str
) -> tuple[list[list[str]], list[str]]:
    """The layers of ``package``'s parts, lowest first, and every import that climbs back up.

    A part is a child module or sub-package (the package's ``__init__`` is one more). A part
    sits above every part it imports; where parts import one another in a circle, the order
    chosen is the one in which the fewest imports climb, and those imports are returned.
    """
    arrows = part_arrows(graph, package)
    weight = {pair: len(found) for pair, found in arrows.items()}
    parts = sorted({p for p in (_part(m, package) for m in graph) if p is not None})
    climbing: list[str] = []
    kept = set(arrows)
    for circle in circles({p: [b for a, b in arrows if a == p] for p in parts}):
        order = _lowest_first(circle, weight)
        for lower, upper in arrows:
            if lower in circle and upper in circle and order.index(lower) < order.index(upper):
                climbing += arrows[lower, upper]
                kept.discard((lower, upper))
    height: dict[str, int] = {}

    def level(part: str) -> int:
        if part not in height:
            height[part] = 1 + max((level(b) for a, b in kept if a == part), default=-1)
        return height[part]

    layers: list[list[str]] = [[] for _ in range(1 + max(map(level, parts), default=-1))]
    for part in parts:
        layers[level(part)].append(part)
    return layers, sorted(climbing)

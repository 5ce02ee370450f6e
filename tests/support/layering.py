"""Which modules a source file imports, read from its text (``ast``), for the layering tests.

Imports inside functions and ``TYPE_CHECKING`` blocks count as well: checked on the text
rather than through ``sys.modules``, since importing any submodule runs
``mmbright_core/__init__.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path


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

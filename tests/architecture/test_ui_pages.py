"""The dashboard is one package per page and one common package: a page reads on its own.

A page's package (``ui/home/``, ``ui/inspector/``...) imports the common package
(``ui/common/``) and its own modules, never another page's; ``ui/common/`` imports no page;
every page package holds the ``page.py`` that ``st.navigation`` runs, and the navigation
names every page package. Checked on the source text (``ast``), imports inside functions and
``TYPE_CHECKING`` blocks included.
"""

from __future__ import annotations

from pathlib import Path

import layering

import mmbright_core
from mmbright_core.ui.common import navigation

UI = Path(mmbright_core.__file__).parent / "ui"
NAME = "mmbright_core.ui"
PAGES = sorted(p.name for p in UI.iterdir() if (p / "__init__.py").is_file() and p.name != "common")


def _ui_packages_imported(package: str) -> dict[str, set[str]]:
    """Module file -> the ``ui`` packages it imports (``common``, ``inspector``...)."""
    found = {}
    for path in sorted((UI / package).glob("*.py")):
        names = layering.imported_modules(path, f"{NAME}.{package}")
        found[path.name] = {
            name.split(".")[2] for name in names if name.startswith(f"{NAME}.") and name != NAME
        }
    return found


def test_every_page_is_a_package_with_its_script_and_is_navigated_to() -> None:
    assert sorted(["home", "per_query", "inspector", "compare", "run"]) == PAGES
    for page in PAGES:
        assert navigation.page_file(page) == UI / page / "page.py"
        assert (UI / page / "page.py").is_file()
    assert sorted(name for name, *_ in navigation._PAGES) == PAGES


def test_a_page_imports_the_common_package_and_its_own_modules_only() -> None:
    crossing = {
        f"ui/{page}/{module}: {sorted(other)}"
        for page in PAGES
        for module, packages in _ui_packages_imported(page).items()
        if (other := packages - {"common", page})
    }
    assert not crossing


def test_the_common_package_imports_no_page() -> None:
    climbing = {
        f"ui/common/{module}: {sorted(packages - {'common'})}"
        for module, packages in _ui_packages_imported("common").items()
        if packages - {"common"}
    }
    assert not climbing


def test_the_check_sees_a_page_importing_another(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text("from mmbright_core.ui.inspector import inspected\n")
    names = layering.imported_modules(page, f"{NAME}.compare")
    assert {name.split(".")[2] for name in names if name.startswith(f"{NAME}.")} == {"inspector"}

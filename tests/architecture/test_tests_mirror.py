"""Every module of the package has a findable test, and the tests mirror the package's parts.

A module ``mmbright_core/<part>/<module>.py`` is tested in ``tests/<part>/test_<module>.py``,
or by a test file of ``tests/<part>/`` (its part's folder, sub-folders included) that imports
it; a package's ``__init__.py`` by its part's folder of tests. ``docs/development.md``
("Tests") lists the files that test the few modules tested elsewhere; a module with none of
these fails here, as does a row that names a file that is gone or a module its part's folder
already tests.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from layering import imported_modules
from locations import ROOT

PACKAGE = ROOT / "mmbright_core"
TESTS = ROOT / "tests"
ROW = re.compile(r"^\| `(?P<module>[^`]+\.py)` \| (?P<tests>.+) \|$", re.MULTILINE)


def _dotted(module: Path, package: Path) -> str:
    parts = module.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _imports_of(folder: Path) -> frozenset[str]:
    """Every module the test files under ``folder`` import."""
    found: set[str] = set()
    for test in folder.rglob("test_*.py"):
        found |= imported_modules(test, "")
    return frozenset(found)


def _mirrored(module: Path, package: Path = PACKAGE, tests: Path = TESTS) -> bool:
    """Whether ``module``'s own test file exists, or its part's folder of tests holds its tests."""
    relative = module.relative_to(package)
    if relative.name == "__init__.py":
        folder = tests / relative.parent
        own = tests / relative.parent.parent / f"test_{relative.parent.name}.py"
        return own.is_file() or (relative.parent != Path(".") and any(folder.rglob("test_*.py")))
    folder = tests / relative.parent
    return (folder / f"test_{relative.stem}.py").is_file() or (
        folder.is_dir() and _dotted(module, package) in _imports_of(folder)
    )


def _documented() -> dict[str, list[str]]:
    """Module (relative to the package) -> the test files its row in the docs names."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    return {row["module"]: re.findall(r"`([^`]+)`", row["tests"]) for row in ROW.finditer(text)}


def test_every_module_has_its_tests_in_its_part_or_a_row_in_the_docs() -> None:
    documented = _documented()
    unfound = [
        str(module.relative_to(PACKAGE))
        for module in sorted(PACKAGE.rglob("*.py"))
        if not _mirrored(module) and str(module.relative_to(PACKAGE)) not in documented
    ]
    assert unfound == [], "add tests/<part>/test_<module>.py or a row in docs/development.md"


def test_every_row_names_a_module_tested_elsewhere_and_test_files_that_exist() -> None:
    documented = _documented()
    assert len(documented) > 3  # the table is found at all
    stale = [
        (module, test)
        for module, tests in documented.items()
        for test in (tests if (PACKAGE / module).is_file() else ["(no such module)"])
        if not (ROOT / test).is_file()
    ]
    assert stale == []
    needless = [module for module in documented if _mirrored(PACKAGE / module)]
    assert needless == [], "its part's tests already import it: drop the row"


def test_a_module_is_found_by_name_or_through_its_parts_tests(tmp_path: Path) -> None:
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    for module in ("part/__init__.py", "part/a.py", "part/b.py", "part/c.py", "other/d.py"):
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("", encoding="utf-8")
    (tests / "part" / "deeper").mkdir(parents=True)
    (tests / "part" / "test_a.py").write_text("", encoding="utf-8")
    (tests / "part" / "deeper" / "test_x.py").write_text(
        "from pkg.part import b\n", encoding="utf-8"
    )
    (tests / "other").mkdir()
    (tests / "other" / "test_y.py").write_text("import pkg.part.c\n", encoding="utf-8")
    found = {m: _mirrored(package / m, package, tests) for m in ("part/a.py", "part/b.py")}
    assert found == {"part/a.py": True, "part/b.py": True}
    assert _mirrored(package / "part" / "__init__.py", package, tests)
    # Imported only from another part's folder, or not at all: not found.
    assert not _mirrored(package / "part" / "c.py", package, tests)
    assert not _mirrored(package / "other" / "d.py", package, tests)

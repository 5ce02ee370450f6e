"""Every module of the package has a findable test: a file named after it, or a row naming it.

``docs/development.md`` ("Tests") lists, for the modules without a test file of their own,
the files that test them; a module added without either, or a row that names a file that is
gone, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from locations import ROOT

PACKAGE = ROOT / "mmbright_core"
TESTS = ROOT / "tests"
ROW = re.compile(r"^\| `(?P<module>[^`]+\.py)` \| (?P<tests>.+) \|$", re.MULTILINE)


def _own_test_file(module: Path) -> Path:
    """``tests/<package>/test_<module>.py`` for ``mmbright_core/<package>/<module>.py``."""
    relative = module.relative_to(PACKAGE)
    if relative.name == "__init__.py":
        return TESTS / relative.parent.parent / f"test_{relative.parent.name}.py"
    return TESTS / relative.parent / f"test_{relative.stem}.py"


def _documented() -> dict[str, list[str]]:
    """Module (relative to the package) -> the test files its row in the docs names."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    return {row["module"]: re.findall(r"`([^`]+)`", row["tests"]) for row in ROW.finditer(text)}


def test_every_module_has_its_own_test_file_or_a_row_in_the_docs() -> None:
    documented = _documented()
    unfound = [
        str(module.relative_to(PACKAGE))
        for module in sorted(PACKAGE.rglob("*.py"))
        if not _own_test_file(module).is_file()
        and str(module.relative_to(PACKAGE)) not in documented
    ]
    assert unfound == [], "add tests/<package>/test_<module>.py or a row in docs/development.md"


def test_every_row_names_a_module_and_test_files_that_exist() -> None:
    documented = _documented()
    assert len(documented) > 10  # the table is found at all
    stale = [
        (module, test)
        for module, tests in documented.items()
        for test in (tests if (PACKAGE / module).is_file() else ["(no such module)"])
        if not (ROOT / test).is_file()
    ]
    assert stale == []

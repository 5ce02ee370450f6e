"""Every test ``docs/safety.md`` names exists: each case it lists points at a real test.

A reference is a code span naming a test file (``io/test_errors.py``, relative to ``tests/``,
``tests/io/test_errors.py``, or by its name alone where one file under ``tests/`` has it), a
test in it (``io/test_errors.py::test_x``), or a test of the file named last (``::test_y``,
``…::test_y``); a parameter (``[text]``) is not checked. A test renamed or moved without its
row fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from locations import ROOT

TESTS = ROOT / "tests"
SAFETY = ROOT / "docs" / "safety.md"
FENCE = re.compile(r"```.*?```", re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
REFERENCE = re.compile(
    r"(?:…|\.\.\.)?(?P<file>(?:[\w.-]+/)*test_\w*\.py)?(?:::(?P<test>\w+))?(?:\[[^\]]*\])?"
)


def _path(file: str) -> Path | None:
    if file.startswith("tests/"):
        return ROOT / file
    if "/" in file:
        return TESTS / file
    named = list(TESTS.rglob(file))
    return named[0] if len(named) == 1 else None


def unfound(text: str) -> list[str]:
    """The references of ``text`` whose file or test does not exist, as written."""
    missing, last = [], None
    for span in SPAN.findall(FENCE.sub("", text)):
        found = REFERENCE.fullmatch(span)
        if found is None or not (found["file"] or found["test"]):
            continue
        last = found["file"] or last
        path = None if last is None else _path(last)
        if path is None or not path.is_file():  # gone, or a name several files have
            missing.append(span)
        elif found["test"] and not re.search(rf"def {found['test']}\b", path.read_text("utf-8")):
            missing.append(f"{span} (in {last})")
    return missing


def test_every_test_the_safety_page_names_exists() -> None:
    text = SAFETY.read_text(encoding="utf-8")
    assert len(SPAN.findall(text)) > 100  # the tables are read at all
    assert unfound(text) == []


def test_the_check_sees_a_test_that_is_gone() -> None:
    text = (
        "| case | `robust/test_limits.py::test_messages_cut_what_they_quote`, `::test_gone` |\n"
        "| other | `test_io_errors.py::test_x`, `[param]`, `tests/io/test_errors.py` |\n"
        "| named | `test_id_check.py::test_the_report_escapes_invisible_characters` |\n"
        "| twice | `test_page.py` |\n"
    )
    assert unfound(text) == [
        "::test_gone (in robust/test_limits.py)",
        "test_io_errors.py::test_x",
        "test_page.py",  # ui/home/, ui/inspector/ and ui/run/ each have one
    ]

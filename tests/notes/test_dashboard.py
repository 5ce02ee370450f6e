"""The inspector's "Add tag" refuses what the command line and an import refuse.

A tag name holding ESC or a bidi control would show reordered on every page that lists
tags; the dashboard names the fault on the page and the taxonomy stays as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest import fresh

from mmbright_core.notes import NotesStore

pytestmark = pytest.mark.slow  # AppTest runs of the inspector


@pytest.mark.parametrize("name", ["rtl \u202eevil", "esc\x1b[31m"], ids=ascii)
def test_add_tag_with_control_or_bidi_characters_is_refused_on_the_page(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "notes.sqlite3"
    monkeypatch.setenv("MMBRIGHT_NOTES", str(db))
    with NotesStore(db) as store:
        before = store.tags()
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(3).run()
    at.switch_page("inspector/page.py").run()
    at.text_input(key="insp_new_tag").input(name)
    at.button(key="insp_add_tag").click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any("invalid tag name" in e and "bidirectional" in e for e in errors), errors
    assert at.text_input(key="insp_new_tag").value == name  # kept in the box to fix
    with NotesStore(db) as store:
        assert store.tags() == before

"""The note box shared safely: two browsers on one query, a tag picked then saved at once.

Two chromium contexts (two sessions, as two tabs or two people) open the inspector on the same
query of the demo served by one ``streamlit run``. What one saves is never overwritten unseen
by the other: the second save is refused, the page shows the stored note and tags beside the
draft and offers to keep both, take theirs or overwrite. A tag picked and the list closed with
Escape, then saved at once, is stored and said to be saved, every try.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import serving

from mmbright_core.notes import NotesStore, QueryKey

pytestmark = serving.BROWSER_MARKS
TASK_LABEL = "Task 2: text+image → text"
QUICK_MS = 20_000
"""How long a save's run may take once the page is loaded (its callback writes one row)."""


def _inspector(context, url: str):  # type: ignore[no-untyped-def]
    page = context.new_page()
    page.set_default_timeout(serving.RUN_TIMEOUT_MS)
    serving.open_app(page, url)
    serving.choose(page, "task", TASK_LABEL)
    serving.go_to(page, "Inspector")
    page.locator(".st-key-insp_save button").wait_for()
    serving.no_exception(page)
    return page


def _key(page) -> QueryKey:  # type: ignore[no-untyped-def]
    domain, query_id = (part.strip() for part in page.locator("h3").first.inner_text().split(" / "))
    return QueryKey("demo", 2, "paper", domain, query_id)


def _pick(page, tag: str) -> bool:  # type: ignore[no-untyped-def]
    """Open the tag list, click a tag in it and close the list with Escape.

    Returns whether the tag was drawn as chosen before Escape (a click can land while the
    list is still being placed; such a try tells nothing about saving).
    """
    tags = page.locator(".st-key-insp_tags")
    tags.locator("input").click()
    page.get_by_role("option", name=tag, exact=True).click()
    try:
        tags.get_by_text(tag, exact=True).first.wait_for(state="attached", timeout=5_000)
    except Exception:  # Playwright's TimeoutError (playwright is an optional import here)
        return False
    finally:
        page.keyboard.press("Escape")
    return True


def _save(page) -> None:  # type: ignore[no-untyped-def]
    """Click Save and wait for the run it starts (a lost click fails here, not later)."""
    before = serving.run_number(page)
    page.locator(".st-key-insp_save button").click()
    page.wait_for_function(serving.RUN_FINISHED, arg=before, timeout=QUICK_MS)


def test_a_tag_picked_then_saved_at_once_is_stored_every_time(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Pick, Escape, Save at once: up to 20 tries within 90 s, all stored and "Saved.".

    The tags were in a form, which takes a pick in a frame after it is drawn: a Save sent
    before that frame goes without it. Each pick is now stored as it reaches the server.
    """
    sync_api = pytest.importorskip("playwright.sync_api")
    notes: Path = tmp_path_factory.mktemp("notes") / "notes.sqlite3"
    tries = [f"race {i:02d}" for i in range(20)]
    with NotesStore(notes) as store:
        for tag in tries:
            store.add_tag(tag)
    env = {"MMBRIGHT_NOTES": str(notes)}
    lost = []
    with (
        sync_api.sync_playwright() as p,
        serving.streamlit_server(tmp_path_factory.mktemp("server"), env=env) as (url, _),
    ):
        browser = serving.launch(p)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = _inspector(context, url)
        key = _key(page)
        deadline = time.monotonic() + 90
        for tag in tries:
            if lost or time.monotonic() > deadline:
                break
            if not _pick(page, tag):
                continue
            _save(page)
            saved = page.get_by_text("Saved.").count() > 0
            with NotesStore(notes) as store:
                stored = tag in store.get(key).tags
            if not (saved and stored):
                lost.append((tag, saved, stored))
            serving.no_exception(page)
        browser.close()
    assert not lost, f"a save lost its tag (tag, 'Saved.' shown, stored): {lost}"


def _conflict(page) -> str:  # type: ignore[no-untyped-def]
    """The conflict box's text, once it is drawn."""
    box = page.locator(".st-key-insp_conflict")
    box.wait_for()
    return str(box.inner_text())


def _resolve(page, label: str) -> None:  # type: ignore[no-untyped-def]
    with serving.rerun(page):
        page.locator(".st-key-insp_conflict").get_by_role("button", name=label).click()
    page.get_by_text("Saved.").wait_for()


def test_two_browsers_editing_one_note_lose_nothing_and_see_the_conflict(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    notes: Path = tmp_path_factory.mktemp("notes") / "notes.sqlite3"
    env = {"MMBRIGHT_NOTES": str(notes)}
    with (
        sync_api.sync_playwright() as p,
        serving.streamlit_server(tmp_path_factory.mktemp("server"), env=env) as (url, _),
    ):
        browser = serving.launch(p)
        size = {"viewport": {"width": 1400, "height": 1000}}
        a, b = (_inspector(browser.new_context(**size), url) for _ in range(2))
        key = _key(a)
        assert _key(b) == key

        # B saves a note; A, not reloaded, adds a tag: refused, B's note shown beside A's.
        b.locator(".st-key-insp_note textarea").fill("B: the chart is misread")
        _save(b)
        b.get_by_text("Saved.").wait_for()
        with serving.rerun(a):
            _pick(a, "OCR noise")
        assert "B: the chart is misread" in _conflict(a)
        a.get_by_text("Not saved").wait_for()
        with NotesStore(notes) as store:
            assert store.get(key).note == "B: the chart is misread"  # not emptied
        _resolve(a, "Keep both")
        with NotesStore(notes) as store:
            kept = store.get(key)
        assert (kept.note, kept.tags) == ("B: the chart is misread", ("OCR noise",))
        assert a.locator(".st-key-insp_note textarea").input_value() == kept.note

        # B, not reloaded either, rewrites the note: refused, A's tag shown; both kept.
        b.locator(".st-key-insp_note textarea").fill("B: on second thought, OCR noise")
        _save(b)
        assert "OCR noise" in _conflict(b)
        with NotesStore(notes) as store:
            assert store.get(key) == kept
        _resolve(b, "Keep both")
        with NotesStore(notes) as store:
            both = store.get(key)
        assert both.note.startswith("B: the chart is misread")
        assert both.note.endswith("B: on second thought, OCR noise")
        assert both.tags == ("OCR noise",)
        for page in (a, b):
            serving.no_exception(page)
        browser.close()

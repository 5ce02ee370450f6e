"""The inspector in the browser: why an image hurt, readable at 1000 and 1400 px, notes kept.

Headless chromium against ``streamlit run app.py`` on the demo: the inspector opens on the
query the OCR run loses most on; the words read from its image and the highlighted passage
that displaced a relevant one are on screen without a click, and Previous/Next are whole.
A tag and a note saved there are found again from a new browser context, after the
server restarts and after a visit to another page. Screenshots are kept as
``test-artifacts/screenshots/inspector-*.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import serving

from mmbright_core.notes import NotesStore

SHOTS = serving.ROOT / "test-artifacts" / "screenshots"
TASK_LABEL = "Task 2: text+image → text"
CLIPPED = "e => e.scrollWidth > e.clientWidth + 1"
TAG = "boot log words"
NOTE = "The OCR read a <boot log>; its words match a log passage, not the answer."

pytestmark = serving.BROWSER_MARKS


def _inspector(browser, url: str, width: int):  # type: ignore[no-untyped-def]
    page = serving.new_page(browser, viewport={"width": width, "height": 1000})
    serving.open_app(page, url)
    serving.choose(page, "task", TASK_LABEL)
    serving.go_to(page, "Inspector")
    page.get_by_text("What pushed relevant items down").first.wait_for()
    serving.no_exception(page)
    return page


def _check_explained(page, width: int) -> None:  # type: ignore[no-untyped-def]
    # The words read from the image, under the image and after the query text.
    page.locator("mark.origin-image").first.wait_for()  # waits until visible, or fails
    # The displacing passage: its terms and its snippet, highlighted, outside any expander.
    pushed = page.locator('[class*="st-key-insp_push_"]').first
    pushed.locator("[data-term] mark.origin-image").first.wait_for()
    pushed.locator('div[style*="line-height:1.6"] mark').first.wait_for()
    for key in ("insp_prev", "insp_next"):
        button = page.locator(f".st-key-{key} button")
        button.wait_for()
        assert not button.evaluate(CLIPPED), f"{key} is cut at {width} px"
        box = button.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width
    heading = page.locator("h3").first
    assert not heading.evaluate(CLIPPED), f"the query id is cut at {width} px"
    assert "_" in heading.inner_text()  # "askubuntu / askubuntu_3", whole


def _annotate(page) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text("Add a tag to the taxonomy").click()
    page.locator(".st-key-insp_new_tag input").fill(TAG)
    with serving.rerun(page):
        page.locator(".st-key-insp_add_tag button").click()
    tags = page.locator(".st-key-insp_tags")
    # Typed and chosen with Enter (inside a form: no rerun until it is sent). A click on
    # the list's option can land while the list is still being placed on a busy machine.
    tags.locator("input").fill(TAG)
    page.keyboard.press("Enter")
    chip = tags.get_by_text(TAG, exact=True)
    chip.wait_for()  # the chosen tag is drawn in the box
    serving.after_next_frame(page)  # and handed to the form
    page.keyboard.press("Escape")  # closes the list over the note
    chip.wait_for()
    page.locator(".st-key-insp_note textarea").fill(NOTE)
    with serving.rerun(page):
        page.locator(".st-key-insp_save button").click()
    page.get_by_text("Saved.").wait_for()


def _check_annotated(page) -> None:  # type: ignore[no-untyped-def]
    assert TAG in page.locator(".st-key-insp_tags").inner_text()
    assert page.locator(".st-key-insp_note textarea").input_value() == NOTE


def test_inspector_explains_the_hurt_query_and_keeps_notes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    notes: Path = tmp_path_factory.mktemp("notes") / "notes.sqlite3"
    env = {"MMBRIGHT_NOTES": str(notes)}
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        with serving.streamlit_server(tmp_path_factory.mktemp("server"), env=env) as (url, _):
            for width in (1400, 1000):
                page = _inspector(browser, url, width)
                _check_explained(page, width)
                page.screenshot(path=SHOTS / f"inspector-{width}.png")
                page.locator('[class*="st-key-insp_push_"]').first.scroll_into_view_if_needed()
                page.screenshot(path=SHOTS / f"inspector-{width}-pushed.png")
                page.locator(".st-key-hit_1_1").scroll_into_view_if_needed()
                page.screenshot(path=SHOTS / f"inspector-{width}-hits.png")
                if width == 1400:
                    _annotate(page)
                page.close()
            page = _inspector(browser, url, 1400)  # a new context: no shared session
            _check_annotated(page)
            page.close()
        with serving.streamlit_server(tmp_path_factory.mktemp("restart"), env=env) as (url, _):
            page = _inspector(browser, url, 1400)
            _check_annotated(page)
            page.locator(".st-key-insp_note").scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / "inspector-notes-after-restart.png")
        browser.close()


def test_saved_notes_stay_in_their_boxes_and_in_the_store_after_another_page(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    notes: Path = tmp_path_factory.mktemp("notes") / "notes.sqlite3"
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        env = {"MMBRIGHT_NOTES": str(notes)}
        with serving.streamlit_server(tmp_path_factory.mktemp("server"), env=env) as (url, _):
            page = _inspector(browser, url, 1400)
            _annotate(page)
            serving.go_to(page, "Home")
            serving.go_to(page, "Inspector")
            page.get_by_text("What pushed relevant items down").first.wait_for()
            _check_annotated(page)  # the stored note is in its box, not an empty one
            with serving.rerun(page):
                page.locator(".st-key-insp_save button").click()
            page.get_by_text("Saved.").wait_for()
            _check_annotated(page)
            key = page.locator("h3").first.inner_text().split(" / ")
            exported = {}
            for kind in ("csv", "json"):  # every note, as the command exports them
                with page.expect_download() as info:
                    page.locator(f".st-key-insp_notes_{kind} button").click()
                exported[kind] = info.value.path().read_bytes().decode("utf-8")
        browser.close()
    with NotesStore(notes) as store:
        saved = store.get(("demo", 2, "paper", key[0].strip(), key[1].strip()))
        assert exported["csv"] == store.export("csv")
        written = json.loads(store.export("json"))
    assert saved.note == NOTE and saved.tags == (TAG,)
    downloaded = json.loads(exported["json"])
    assert downloaded["queries"] == written["queries"] and downloaded["tags"] == written["tags"]
    assert [q["note"] for q in downloaded["queries"]] == [NOTE]

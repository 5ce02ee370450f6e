"""Controls that behave only in a browser: a refused number, the theme switch.

A number field keeps its last valid value when what is typed is out of range, and a click on
Run then ran with that value; "Documents kept per query" must refuse what is typed instead.
With the minimal toolbar Streamlit hides its menu, and the theme switch in it, unless the
page sets a menu item: light and dark must stay within reach.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import serving

pytestmark = serving.BROWSER_MARKS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving.streamlit_server(tmp_path_factory.mktemp("streamlit")) as (url, _):
        yield url


def test_an_out_of_range_number_of_documents_stops_the_run(server: str, tmp_path: Path):
    sync_api = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "outputs"
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        page = serving.new_page(browser, viewport={"width": 1400, "height": 1000})
        serving.open_app(page, server)
        serving.go_to(page, "Run a retriever")
        folder = page.locator(".st-key-run_out input")
        folder.fill(str(out))
        with serving.rerun(page):
            folder.press("Enter")
        page.locator(".st-key-run_k input").fill("0")
        with serving.rerun(page):  # as a user does: type, then click Run
            page.locator(".st-key-run_start button").click()
        message = page.get_by_text("documents kept per query must be a whole number")
        message.wait_for()  # the run the click started has drawn its answer...
        serving.wait_run(page, serving.run_number(page) - 1)  # ...and ended here
        serving.no_exception(page)
        assert page.get_by_text("Added run").count() == 0
        assert page.get_by_text("documents kept per query must be a whole number").count() == 1
        browser.close()
    assert not out.exists() or list(out.iterdir()) == []


def test_the_theme_switch_is_reachable_with_the_minimal_toolbar(server: str):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        page = serving.new_page(
            browser, viewport={"width": 1000, "height": 800}, color_scheme="light"
        )
        serving.open_app(page, server)
        app = page.locator('[data-testid="stApp"]')
        light = app.evaluate("e => getComputedStyle(e).backgroundColor")
        page.get_by_role("button", name="Main menu").click()
        page.get_by_role("menuitemradio", name="Dark").click()
        page.wait_for_function(
            "before => getComputedStyle(document.querySelector('[data-testid=\"stApp\"]'))"
            ".backgroundColor !== before",
            arg=light,
        )
        dark = app.evaluate("e => getComputedStyle(e).backgroundColor")
        channels = [int(c) for c in dark[dark.index("(") + 1 : dark.index(")")].split(",")[:3]]
        assert max(channels) < 80, dark  # a dark background, chosen from the menu
        browser.close()

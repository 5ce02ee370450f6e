"""The dashboard in a real browser: ``streamlit run app.py`` driven by headless chromium.

Uses Debian's chromium through playwright (no browser download). Every page is opened through
the sidebar navigation (one session, so the loaded runs stay), no exception box may appear,
the inspector must show the query's images beside the retrieved documents, and a screenshot
of each page is saved under ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from serving import (
    BROWSER_MARKS,
    CHROMIUM,
    LAUNCH_ARGS,
    ROOT,
    no_exception,
    open_runs_panel,
    settle,
    streamlit_server,
)

from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner import run_task

SHOTS = ROOT / "test-artifacts" / "screenshots"
TASK_LABEL = "Task 2: text+image → text"
PAGES = {  # sidebar link -> text that appears once the page has finished drawing
    "Per query": "queries shown",
    "Compare": "Image effect by slice",
    "Inspector": "The two runs aligned",
    "Run a retriever": "Output folder",
    "Home": "Published: Task",
}

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with streamlit_server(tmp_path_factory.mktemp("streamlit")) as (url, _):
        yield url


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two Task 2 runs on the demo: BM25 and random ranking, as official outputs."""
    out = tmp_path_factory.mktemp("demo-runs")
    source = open_source("demo")
    for name in ("bm25", "random"):
        run_task(source, 2, get_retriever(name), out, k=100)
    return out


def test_every_page_in_chromium(server: str, demo_runs: Path):
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(server)
        page.get_by_text("MM-BRIGHT failure analysis").wait_for(timeout=60_000)
        settle(page)
        no_exception(page)
        page.screenshot(path=str(SHOTS / "home-empty.png"), full_page=True)

        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name=TASK_LABEL).click()
        settle(page)
        open_runs_panel(page)  # the demo's own runs of the task keep it collapsed
        page.get_by_role("tab", name="Folder").click()
        field = page.get_by_label("Folder: official outputs")
        field.fill(str(demo_runs))  # holds run_it2t_bm25/ and run_it2t_random/: both are added
        field.press("Enter")
        settle(page)
        page.get_by_role("button", name="Add runs from folder").click()
        settle(page)
        page.get_by_text("Headline numbers").wait_for()
        no_exception(page)

        for title, marker in PAGES.items():
            page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
            page.get_by_text(marker).first.wait_for(timeout=60_000)
            settle(page)
            no_exception(page)
            slug = title.lower().replace(" ", "-")
            page.screenshot(path=str(SHOTS / f"{slug}.png"), full_page=True)
            if title == "Inspector":
                _check_inspector(page)
        browser.close()


def _check_inspector(page) -> None:  # type: ignore[no-untyped-def]
    # The query's images at the top, then each run's ranked documents side by side, each hit
    # with its score and judgment badge.
    assert page.locator('[data-testid="stImage"] img').count() >= 1, "the query images show"
    rows = page.locator('[data-testid="stHorizontalBlock"]').filter(has_text="Passage text")
    row = rows.filter(has=page.locator('[data-testid="stColumn"]').nth(1)).first
    columns = row.locator(':scope > [data-testid="stColumn"]')
    assert columns.count() >= 2, "the two runs' documents sit side by side"
    for i in range(2):
        assert columns.nth(i).get_by_text("score").count() >= 1

"""The inspector's "Where in the image", cancelled in chromium: stopped, nothing stored.

AppTest runs a script to its end before it looks at the page, so it cannot press Cancel
while the occlusion runs; the real server can. The run is made by a plugin that sees only
the image's top-left quarter and takes a tenth of a second per image
(``slow_corner_embedder``): a 16x16 grid then takes about 26 seconds. Pressed while its
progress bar moves, Cancel stops it at its next batch; the panel says so, shows no grid,
nothing is written under the cache's ``regions/`` folder, the page still answers, and a
2x2 grid asked for next is computed and shown. Screenshots are kept as
``test-artifacts/screenshots/inspector-regions-*.png``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serving
from corner_embedder import demo_run
from locations import SUPPORT
from slow_corner_embedder import DELAY, SPEC

from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval.dual.regions import FOLDER

SHOTS = serving.ROOT / "test-artifacts" / "screenshots"
TASK_LABEL = "Task 2: text+image → text"
DOMAIN, QUERY = "biology", "biology_1"
BIG, SMALL = 16, 2
CANCELLED = "Cancelled: nothing was stored. Press the button to start again."
# The occlusion of the BIG grid encodes BIG**2 masked copies; Cancel must end it well before.
CANCEL_WITHIN_S = BIG**2 * DELAY / 2

pytestmark = serving.BROWSER_MARKS


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo Task 2 biology run of the slow corner plugin."""
    return demo_run(tmp_path_factory.mktemp("slow-corner-run"), spec=SPEC)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The dashboard, able to import the plugin, on a cache of its own: its URL and cache."""
    cache = tmp_path_factory.mktemp("app-cache")
    path = os.pathsep.join([str(SUPPORT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {"PYTHONPATH": path, "MMBRIGHT_CACHE": str(cache)}
    with serving.streamlit_server(tmp_path_factory.mktemp("streamlit"), env=env) as (url, _):
        yield url, cache


def _stored(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / FOLDER).rglob("*") if p.is_file())


def _open_regions(page, url: str, folder: Path) -> None:  # type: ignore[no-untyped-def]
    """Add the run on Home, compare it with BM25, and open the inspector on QUERY."""
    serving.open_app(page, url)
    serving.choose(page, "task", TASK_LABEL)
    serving.add_runs_from_folder(page, str(folder))
    serving.go_to(page, "Compare")
    serving.choose(page, "cmp_a", "bm25")
    serving.choose(page, "cmp_b", read_outputs(folder).model)
    serving.go_to(page, "Inspector")
    with serving.rerun(page):
        page.locator(".st-key-insp_allow_0 button").click()  # the plugin's module, allowed
    serving.choose(page, "insp_domain", DOMAIN)
    serving.choose(page, "insp_query", QUERY)
    page.locator(".st-key-insp_regions_go button").wait_for()
    serving.no_exception(page)


def _grid(page, cells: int) -> None:  # type: ignore[no-untyped-def]
    """Type ``cells`` into the panel's grid size and let the page run with it."""
    field = page.locator(".st-key-insp_regions_grid input")
    field.fill(str(cells))
    with serving.rerun(page):
        field.press("Enter")
    assert field.input_value() == str(cells)


def test_cancel_stops_the_occlusion_stores_nothing_and_the_button_starts_again(
    slow_run: Path, served: tuple[str, Path]
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    queries = {q.query_id: q for q in open_source("demo").task(2, DOMAIN).queries}
    assert queries[QUERY].images  # an image to occlude
    url, cache = served
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        page = serving.new_page(browser, viewport={"width": 1400, "height": 1000})
        _open_regions(page, url, slow_run)
        assert serving.selected(page, "insp_regions_run") == read_outputs(slow_run).model
        main = page.locator('[data-testid="stMain"]')
        go = page.locator(".st-key-insp_regions_go button")
        cancel = page.locator(".st-key-insp_regions_cancel button")
        bar = main.locator('[data-testid="stProgress"]')
        shown = main.get_by_text("Red: the cell raised")  # under a grid, and only there

        _grid(page, BIG)
        go.click()
        cancel.wait_for()
        # The bar has moved past the image whole: the masked copies are being encoded.
        main.get_by_text(f"of {BIG**2 + 1} forward passes").wait_for()
        assert bar.count() == 1
        pressed = time.monotonic()
        with serving.rerun(page):
            cancel.click()
        main.get_by_text(CANCELLED).wait_for()
        assert time.monotonic() - pressed < CANCEL_WITHIN_S, "Cancel waited for the end"
        serving.no_exception(page)
        assert bar.count() == 0 and cancel.count() == 0
        assert shown.count() == 0, "a grid is shown after Cancel"
        assert _stored(cache) == [], "a cancelled occlusion stored a result"
        page.screenshot(path=str(SHOTS / "inspector-regions-cancelled.png"), full_page=True)

        # The page still answers: another tab of the inspector opens and draws.
        with serving.rerun(page):
            page.get_by_role("tab", name="The two runs aligned").click()
        main.get_by_text("Kendall tau").first.wait_for()
        serving.no_exception(page)

        _grid(page, SMALL)
        with serving.rerun(page):
            go.click()
        main.get_by_text(f"{SMALL**2 + 1} forward passes").wait_for()
        assert shown.count() == 1
        serving.no_exception(page)
        assert main.get_by_text(CANCELLED).count() == 0
        assert len(_stored(cache)) == 1  # the 2x2 result, and only it
        page.screenshot(path=str(SHOTS / "inspector-regions-after-cancel.png"), full_page=True)
        browser.close()


def test_once_the_grid_is_shown_cancel_is_gone(slow_run: Path, served: tuple[str, Path]) -> None:
    """Cancel is there while the occlusion runs, not beside a result it could not cancel."""
    sync_api = pytest.importorskip("playwright.sync_api")
    url, _ = served
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        page = serving.new_page(browser, viewport={"width": 1400, "height": 1000})
        _open_regions(page, url, slow_run)
        main = page.locator('[data-testid="stMain"]')
        _grid(page, 3)
        with serving.rerun(page):
            page.locator(".st-key-insp_regions_go button").click()
        main.get_by_text("Red: the cell raised").wait_for()
        serving.no_exception(page)
        assert page.locator(".st-key-insp_regions_cancel").count() == 0
        assert main.get_by_text(CANCELLED).count() == 0
        browser.close()

"""What a researcher sees in the browser: nothing clipped, every group drawn, clicks that open.

Headless chromium against ``streamlit run app.py`` on the demo, at 1000 and 1400 px wide,
in the light and the dark theme (Streamlit follows the browser's colour scheme). Screenshots
are kept under ``test-artifacts/screenshots/screen/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import serving

from mmbright_core.data.demo_source import DOMAINS
from mmbright_core.data.sources import open_source
from mmbright_core.notes import NotesStore, QueryKey

SHOTS = serving.ROOT / "test-artifacts" / "screenshots" / "screen"
TASK_LABEL = "Task 2: text+image → text"

pytestmark = serving.BROWSER_MARKS

CLIPPED = "e => e.scrollWidth > e.clientWidth + 1"
FRAMES = '[data-testid="stDataFrame"]'
TEXTS = "els => els.map(e => e.textContent)"
CHARTS = '[data-testid="stPlotlyChart"]'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # A notes file of its own: tags other tests gave the demo's queries would add a tags
    # column to the tables measured here.
    with serving.server_with_own_notes(tmp_path_factory, "screen-notes") as url:
        yield url


def _open(browser, server: str, width: int, scheme: str):  # type: ignore[no-untyped-def]
    page = serving.new_page(browser, viewport={"width": width, "height": 1000}, color_scheme=scheme)
    serving.open_app(page, server)
    serving.choose(page, "task", TASK_LABEL)
    page.get_by_text("Headline numbers").wait_for()
    serving.no_exception(page)
    return page


@contextmanager
def _screen(server: str, width: int, scheme: str) -> Iterator[Any]:
    """A page of a new chromium, ``width`` px wide in ``scheme``, open on Task 2's Home."""
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        yield _open(browser, server, width, scheme)
        browser.close()


def _goto(page, title: str, marker: str) -> None:  # type: ignore[no-untyped-def]
    serving.go_to(page, title)
    page.get_by_text(marker).first.wait_for()
    serving.no_exception(page)


def _tab(page, name: str, *, reruns: bool = True):  # type: ignore[no-untyped-def]
    """Open the tab ``name`` and return its panel, once its content is drawn.

    Compare's tabs rerun the app to draw the one opened (docs/dashboard.md); Home's are
    drawn already and only shown (``reruns=False``).
    """
    tab = page.get_by_role("tab", name=name)
    if reruns:
        with serving.rerun(page):
            tab.click()
    else:
        tab.click()
    panel = page.get_by_role("tabpanel").filter(visible=True)
    panel.locator("[data-testid]").first.wait_for()
    return panel


def _scrolls(page, frame) -> bool:  # type: ignore[no-untyped-def]
    """Whether a data grid needs sideways scrolling to show all its columns."""
    frame.scroll_into_view_if_needed()
    # The grid has laid out its columns once it has written its accessible table: the rows
    # inside its canvas (fallback content), which it does after drawing.
    frame.locator("canvas table tr").first.wait_for(state="attached")
    return bool(frame.locator(".dvn-scroller").first.evaluate(CLIPPED))


def _clipped_texts(page, selector: str) -> list[str]:  # type: ignore[no-untyped-def]
    found = page.locator(selector)
    return [
        found.nth(i).inner_text() for i in range(found.count()) if found.nth(i).evaluate(CLIPPED)
    ]


@pytest.mark.parametrize(("width", "scheme"), [(1000, "light"), (1000, "dark"), (1400, "light")])
def test_pages_fit_and_keep_every_group(server: str, width: int, scheme: str) -> None:
    with _screen(server, width, scheme) as page:
        # Home: neither the headline table nor the published one scrolls sideways.
        assert page.get_by_text("Published: Task 2").count() == 1
        page.screenshot(path=str(SHOTS / f"home-{width}-{scheme}.png"), full_page=True)
        headline = page.locator(FRAMES).first
        assert not _scrolls(page, headline), "the headline table scrolls sideways"
        published = _tab(page, f"Published: {TASK_LABEL}", reruns=False).locator(FRAMES).first
        assert not _scrolls(page, published), "the reference table scrolls sideways"
        page.screenshot(path=str(SHOTS / f"home-published-{width}-{scheme}.png"), full_page=True)

        _goto(page, "Compare", "Image effect by slice")
        assert not _clipped_texts(page, '[data-testid="stMetricLabel"] p')
        assert len(_tab(page, "Query by query").locator(CHARTS).all()) == 2
        page.screenshot(path=str(SHOTS / f"compare-{width}-{scheme}.png"), full_page=True)
        slices = _tab(page, "Image effect by slice")
        ticks = slices.locator(CHARTS).first.locator(".xtick text")
        ticks.first.wait_for()  # plotly draws its axes after the element is in the page
        assert "3-5" in ticks.evaluate_all(TEXTS), ticks.evaluate_all(TEXTS)
        hurt = _tab(page, "Where B loses most").locator(FRAMES).first
        assert not _scrolls(page, hurt), "the most-hurt table scrolls sideways"
        page.screenshot(path=str(SHOTS / f"compare-hurt-{width}-{scheme}.png"), full_page=True)

        _goto(page, "Per query", "queries shown")
        page.screenshot(path=str(SHOTS / f"per-query-{width}-{scheme}.png"), full_page=True)


def test_a_scatter_point_opens_the_inspector(server: str) -> None:
    with _screen(server, 1400, "light") as page:
        _goto(page, "Compare", "Image effect by slice")
        point = _tab(page, "Query by query").locator(CHARTS).first
        point = point.locator(".scatterlayer .point").first
        point.scroll_into_view_if_needed()
        label = point.evaluate("e => e.__data__.tx")  # the hover label: "domain / query id"
        with serving.rerun(page):  # the click opens the inspector on that query
            point.click(force=True)
        page.get_by_text("Query inspector").first.wait_for()
        serving.no_exception(page)
        domain, query_id = label.split(" / ")
        heading = page.get_by_role("heading", name=f"{domain} / {query_id}")
        heading.first.wait_for()
        assert heading.count() == 1
        page.screenshot(path=str(SHOTS / "inspector-from-scatter.png"), full_page=True)


RUN_LABELS = (  # Streamlit cuts a toggle's or a button's label in its "MarkdownEllipsis" element
    '[data-testid="stMain"] [data-testid="stWidgetLabel"] p, '
    '[data-testid="stMain"] [class*="stMarkdownEllipsis"]'
)


def test_per_query_names_a_and_b_and_fits_1000_px(server: str) -> None:
    # Per query's headers read A, B, B − A, J@10 A, J@10 B (the run names in their
    # tooltips): every column fits beside the sidebar, and no label is cut.
    with _screen(server, 1000, "light") as page:
        _goto(page, "Per query", "queries shown")
        page.locator(f"{FRAMES} canvas").first.wait_for()
        page.screenshot(path=str(SHOTS / "per-query-runs-1000.png"), full_page=True)
        assert page.locator(RUN_LABELS).count() >= 8  # the pickers, filters, toggle and button
        assert not _clipped_texts(page, RUN_LABELS)
        grid = page.locator(FRAMES).first
        grid.scroll_into_view_if_needed()
        assert not grid.locator(".dvn-scroller").first.evaluate(CLIPPED), "the table scrolls"
        picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Compared with (B)")
        chosen = picker.get_by_role("combobox").input_value()
        assert chosen == "ocr-bm25"  # B starts as Compare's B, not "(none)"


# The right edge of an element, and that of every box above it that clips what overflows.
SHOWN_RIGHT = """e => {
  let right = e.getBoundingClientRect().right, edge = window.innerWidth;
  for (let box = e.parentElement; box; box = box.parentElement) {
    if (getComputedStyle(box).overflowX !== "visible") {
      edge = Math.min(edge, box.getBoundingClientRect().right);
    }
  }
  return [right, edge];
}"""


def test_compare_tables_show_the_holm_column_at_1000_px(server: str) -> None:
    with _screen(server, 1000, "light") as page:
        _goto(page, "Compare", "Image effect by slice")
        tables = page.locator('[data-testid="stTable"]')
        tables.first.wait_for()
        for heading in ("p (t) Holm", "p (perm.) Holm", "ocr-bm25 (B)", "95% CI high"):
            cell = tables.locator("th", has_text=heading).first
            cell.scroll_into_view_if_needed()
            right, edge = cell.evaluate(SHOWN_RIGHT)
            assert right <= edge + 1, f"{heading!r} is cut at 1000 px ({right} > {edge})"
        page.screenshot(path=str(SHOTS / "compare-summary-1000.png"), full_page=True)


@pytest.fixture(scope="module")
def tagged_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard on a notes file in which every Task 2 demo query has two tags."""
    notes = tmp_path_factory.mktemp("tagged-notes") / "notes.sqlite3"
    source = open_source("demo")
    with NotesStore(notes) as store:
        for domain in DOMAINS:
            for query in source.task(2, domain).queries:
                key = QueryKey("demo", 2, "paper", domain, query.query_id)
                store.set_tags(key, ["OCR noise", "image essential but misread"])
    env = {"MMBRIGHT_NOTES": str(notes)}
    with serving.streamlit_server(tmp_path_factory.mktemp("streamlit"), env=env) as (url, _):
        yield url


def _tags_shown(page, frame) -> None:  # type: ignore[no-untyped-def]
    """The grid shows its tags column, and every column, without scrolling sideways."""
    assert not _scrolls(page, frame), "the table scrolls sideways"
    header = frame.locator("canvas table th", has_text="tags")
    assert header.count() == 1, "no tags column"


def test_tagged_tables_keep_their_tags_column_at_1000_px(tagged_server: str) -> None:
    with _screen(tagged_server, 1000, "light") as page:
        _goto(page, "Per query", "queries shown")
        _tags_shown(page, page.locator(FRAMES).first)
        page.screenshot(path=str(SHOTS / "per-query-tags-1000.png"), full_page=True)
        _goto(page, "Compare", "Image effect by slice")
        _tags_shown(page, _tab(page, "Where B loses most").locator(FRAMES).first)
        page.screenshot(path=str(SHOTS / "compare-hurt-tags-1000.png"), full_page=True)

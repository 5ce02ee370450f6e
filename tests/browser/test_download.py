"""A table's CSV, downloaded in chromium: written when the button is clicked, whole and right.

The dashboard writes a CSV only when its button is clicked (not on every rerun), which
AppTest cannot follow: it has no server to serve the file. Here the real server does. The
per-query CSV is named after both runs, every run's column carries the run's name, and the
query texts are whole (the table on the page cuts them). Every download of the pages loads
in pandas and averages: numbers are numbers, ranks whole, the runs named the same way.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterator

import pandas as pd
import pytest
from serving import (
    BROWSER_MARKS,
    choose,
    go_to,
    launch,
    new_page,
    open_app,
    rerun,
    selected,
    streamlit_server,
)

from mmbright_core.data.sources import open_source

TASK_LABEL = "Task 2: text+image → text"

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with streamlit_server(tmp_path_factory.mktemp("streamlit")) as (url, _):
        yield url


def test_per_query_csv_holds_the_rows_shown(server: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        # Each step waits for the run it started to finish: a click on the button of a run
        # still drawing the page can land on an element the run then replaces.
        open_app(page, server)
        choose(page, "task", TASK_LABEL)
        page.locator('[data-testid="stMain"]').get_by_text(f"· {TASK_LABEL} ·").wait_for()
        go_to(page, "Per query")
        caption = page.get_by_text("queries shown").first
        caption.wait_for()
        shown = int(re.match(r"(\d+) of", caption.inner_text()).group(1))  # type: ignore[union-attr]
        run, run_b = selected(page, "pq_run"), selected(page, "pq_run_b")
        with page.expect_download() as info:
            page.locator(".st-key-pq_csv button").click()
        download = info.value
        data = download.path().read_bytes()
        browser.close()
    assert data.startswith(codecs.BOM_UTF8)  # so that Excel reads it as UTF-8
    text = data.decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert download.suggested_filename == f"per_query_{run}_vs_{run_b}.csv"
    assert len(rows) == shown > 0
    named = {f"nDCG@10 ({run})", f"nDCG@10 ({run_b})", f"delta ({run_b} − {run})"}
    assert {"domain", "query_id", "query", f"Judged@10 ({run_b})", *named} <= set(rows[0])
    source = open_source("demo")
    texts = {
        (d, q.query_id): " ".join(q.text.split())
        for d in source.domains()
        for q in source.task(2, d).queries
    }
    assert max(len(row["query"]) for row in rows) > 160  # the demo has long queries
    for row in rows:
        assert row["query"] == texts[(row["domain"], row["query_id"])]


def _download(page, key: str) -> tuple[str, pd.DataFrame]:  # type: ignore[no-untyped-def]
    with page.expect_download() as info:
        page.locator(f".st-key-{key} button").click()
    download = info.value
    return download.suggested_filename, pd.read_csv(download.path())


def _tab(page, name: str) -> None:  # type: ignore[no-untyped-def]
    with rerun(page):
        page.get_by_role("tab", name=name).click()


def test_every_csv_download_analyses_with_pandas(server: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    files: dict[str, pd.DataFrame] = {}
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        open_app(page, server)
        choose(page, "task", TASK_LABEL)
        page.locator(".st-key-leaderboard_csv button").wait_for()
        files.update([_download(page, "leaderboard_csv")])
        go_to(page, "Per query")
        run, run_b = selected(page, "pq_run"), selected(page, "pq_run_b")
        files.update([_download(page, "pq_csv")])
        go_to(page, "Compare")
        files.update([_download(page, "cmp_summary_csv")])
        _tab(page, "Where B loses most")
        files.update([_download(page, "cmp_hurt_csv")])
        _tab(page, "Export")
        with page.expect_download() as info:
            page.locator(".st-key-cmp_report button").click()
        report = info.value.suggested_filename
        go_to(page, "Inspector")
        _tab(page, "The two runs aligned")
        files.update([_download(page, "insp_csv")])
        browser.close()
    assert len(files) == 5
    assert report == f"compare_task2_{run}_vs_{run_b}.html"  # the task in the report's name
    for name, frame in files.items():
        numeric = frame.select_dtypes("number")
        means = numeric.mean()
        assert len(numeric.columns) and means.notna().any(), name
        for column in frame.select_dtypes(exclude="number").columns:
            cells = frame[column].dropna().astype(str)
            assert not cells.str.fullmatch(r"'[-+]?[\d.]+(e[-+]?\d+)?").any(), (name, column)
        # One naming of the two runs: each run's column carries its name, never "a" or "b".
        assert not {"a", "b", "mean_a", "mean_b", "judged_a", "rank_a", "rank_b"} & set(frame)
        for column in frame.columns:
            if column.startswith(("rank", "first_relevant_rank", "queries", "wins")):
                cells = frame[column].dropna()
                assert (cells == cells.round()).all(), (name, column)
                assert str(frame[column].dtype) in ("int64", "float64"), (name, column)
    delta = f"delta ({run_b} − {run})"
    assert delta in files[f"compare_{run}_vs_{run_b}.csv"]
    assert delta in files[f"most_hurt_{run}_vs_{run_b}.csv"]
    aligned = next(frame for name, frame in files.items() if name.startswith("rank_diff_"))
    assert {"document", "doc_id", f"rank ({run})", f"rank ({run_b})", "move"} <= set(aligned)
    assert "change" not in aligned

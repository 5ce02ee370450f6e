"""The dashboard as a shared demo server, in chromium: many sessions, bad uploads, hostile data.

The server runs the way docs/safety.md says a shared one should: ``MMBRIGHT_DATA_ROOT`` set,
``--client.showErrorDetails type``, bound to 127.0.0.1, here with a 1 MB upload limit. Twenty
browser sessions open the demo at once (twice), each must see its pages whole, and the
server's resident memory must stay bounded; the figures go to
``test-artifacts/server_memory.json``. An oversized upload is refused in the page and the
session keeps working; script and HTML in the data (and in a run's name) stay text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serving
from hostile import A1, HOSTILE_NAME, HOSTILE_QUERY, SCRIPT, replace_cell

from mmbright_core.data.sources import open_source
from mmbright_core.ui.common.confine import ROOT_ENV

ARTIFACTS = serving.ROOT / "test-artifacts"
SESSIONS = 20
HEADLINE = "MM-BRIGHT failure analysis"
QUERY_CAPTION = re.compile(r"\d+ image\(s\) · \d+ relevant")  # drawn once the query is shown
# Per wave of 20 sessions, after the first: what the server may keep (caches are bounded).
GROWTH_LIMIT_MB = 150

pytestmark = serving.BROWSER_MARKS


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@pytest.fixture(scope="module")
def served(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's data root: a copy of the fixture with script and HTML in its text."""
    root = tmp_path_factory.mktemp("served")
    data = Path(shutil.copytree(fixture_dir, root / "hostile"))
    for config_name in ("examples", "examples_multimodal"):
        replace_cell(data / config_name / "academia.parquet", "id", "a1", "query", HOSTILE_QUERY)
    return root


@pytest.fixture(scope="module")
def server(served: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    options = ("--server.maxUploadSize", "1", "--client.showErrorDetails", "type")
    log_dir = tmp_path_factory.mktemp("streamlit")
    with serving.streamlit_server(log_dir, *options, env={ROOT_ENV: str(served)}) as (url, process):
        yield url, process.pid


# Each session opens one page by its URL: the home page or the inspector (which reads the
# demo's corpus and decodes its images), with the text that shows it was drawn in full.
PAGES = (("", HEADLINE), ("inspector", QUERY_CAPTION))


async def _session(browser, url: str, page_index: int) -> str:  # type: ignore[no-untyped-def]
    """One user on one page; returns what went wrong, if anything."""
    path, marker = PAGES[page_index % len(PAGES)]
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    wait = {"timeout": 300_000}
    try:
        await page.goto(f"{url}/{path}", **wait)
        await page.wait_for_function(serving.RUN_FINISHED, arg=0, **wait)
        await page.get_by_text(marker).first.wait_for(**wait)
        boxes = await page.locator('[data-testid="stException"]').count()
        return f"{boxes} exception box(es)" if boxes else ""
    except Exception as err:  # a timeout or a closed page: the session failed, say how
        return f"{type(err).__name__}: {err}"
    finally:
        await context.close()


async def _waves(url: str, pid: int) -> dict[str, float | list[str]]:
    """Warm-up sessions, then two waves of concurrent sessions, with the server's memory.

    Memory the first wave leaves (session state, caches filled) must not grow again with
    the second: the caches are bounded and closed sessions are freed.
    """
    from playwright.async_api import async_playwright

    figures: dict[str, float | list[str]] = {"start_mb": round(rss_mb(pid), 1)}
    async with async_playwright() as p:
        browser = await serving.launch(p)
        warm_up = [await _session(browser, url, i) for i in range(len(PAGES))]
        figures["warm_up_problems"] = [e for e in warm_up if e]
        figures["warm_mb"] = round(rss_mb(pid), 1)
        problems: list[str] = []
        for wave in (1, 2):
            started = time.monotonic()
            found = await asyncio.gather(*(_session(browser, url, i) for i in range(SESSIONS)))
            problems += [f"wave {wave}, session {i}: {e}" for i, e in enumerate(found) if e]
            figures[f"wave{wave}_seconds"] = round(time.monotonic() - started, 1)
            await asyncio.sleep(2)
            figures[f"after_wave{wave}_mb"] = round(rss_mb(pid), 1)
        figures["problems"] = problems
        await browser.close()
    return figures


@pytest.mark.timeout(1500)
def test_twenty_concurrent_sessions_on_the_demo(server: tuple[str, int]):
    pytest.importorskip("playwright.async_api")
    url, pid = server
    figures = asyncio.run(_waves(url, pid))
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "server_memory.json").write_text(json.dumps(figures, indent=2) + "\n")
    assert figures["warm_up_problems"] == [] and figures["problems"] == []
    growth = figures["after_wave2_mb"] - figures["after_wave1_mb"]  # type: ignore[operator]
    assert growth < GROWTH_LIMIT_MB, figures


def _demo_run() -> bytes:
    data = open_source("demo").judgments(1, "biology")
    lines = [
        f"biology/{query_id} Q0 {doc} {rank} {10.0 - rank} t\n"
        for query_id, docs in data.qrels.items()
        for rank, doc in enumerate(sorted(docs), start=1)
    ]
    return "".join(lines).encode()


def _upload(page, name: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    """Choose one file in the runs panel's uploader: the app reruns with it."""
    with serving.rerun(page):
        _choose_file(page, name, data)


@contextlib.contextmanager
def _home(url: str, width: int = 1400) -> Iterator:  # type: ignore[type-arg]
    """A chromium page on the app's home page, drawn; the browser closes after the block."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        page = serving.new_page(browser, viewport={"width": width, "height": 1000})
        serving.open_app(page, url)
        page.get_by_text(HEADLINE).wait_for()
        yield page
        browser.close()


def _add_upload(page, name: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    """Upload one file and add it with "Add uploaded runs"."""
    _upload(page, name, data)
    with serving.rerun(page):
        page.get_by_role("button", name="Add uploaded runs").click()


def _choose_file(page, name: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "text/plain", "buffer": data}]
    )


def test_oversized_upload_is_refused_and_the_session_goes_on(server: tuple[str, int]):
    url, _ = server
    with _home(url) as page:
        serving.open_runs_panel(page)  # the demo's own runs of the task keep it collapsed
        # 1.5 MB over a 1 MB limit: the browser refuses it, and the app does not rerun
        _choose_file(page, "huge.trec", b"x" * (3 * 2**20 // 2))
        page.get_by_text("must be 1.0MB or smaller").wait_for()
        _upload(page, "good.trec", _demo_run())
        with serving.rerun(page):
            page.get_by_role("button", name="Add uploaded runs").click()
        page.get_by_text("Added run 'good'").wait_for()
        serving.no_exception(page)
        page.get_by_text("Headline numbers").wait_for()


def test_hostile_text_stays_text_in_the_browser(server: tuple[str, int]):
    sync_api = pytest.importorskip("playwright.sync_api")
    url, _ = server
    dialogs: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = serving.launch(p)
        page = serving.new_page(browser, viewport={"width": 1500, "height": 1000})
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        serving.open_app(page, url)
        page.get_by_text(HEADLINE).wait_for()
        serving.local_folder(page, "/etc")
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("outside the folder this server may read").wait_for()
        sidebar.get_by_label("Folder with").fill("hostile")  # inside the root
        with serving.rerun(page):
            sidebar.get_by_label("Folder with").press("Enter")
        serving.choose(page, "task", "Task 2: text+image → text")
        _upload(page, "<img src=x onerror=alert(5)>.trec", b"academia/a1 Q0 broken\n")
        with serving.rerun(page):
            page.get_by_role("button", name="Add uploaded runs").click()
        page.get_by_text("wrong number of columns").wait_for()
        run = f"academia/a1 Q0 {A1} 1 2.0 t\n".encode()
        _upload(page, f"{HOSTILE_NAME}.trec", run)
        with serving.rerun(page):
            page.get_by_role("button", name="Add uploaded runs").click()
        serving.go_to(page, "Inspector")
        page.get_by_text("Query inspector").wait_for()
        page.get_by_text(HOSTILE_QUERY, exact=True).wait_for()
        page.get_by_role("heading", name=HOSTILE_NAME).wait_for()
        serving.no_exception(page)
        assert page.locator("script", has_text="alert(1)").count() == 0
        assert page.locator("img[src='x']").count() == 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "hostile-inspector.png"), full_page=True)
        browser.close()
    assert dialogs == []
    assert SCRIPT in HOSTILE_QUERY


MARKDOWN_NAME = "A [lnk](lnk.html) ![t](t.png)"
"""A run's name (from its file's) with a Markdown link and image, relative to the server."""


def test_markdown_in_names_makes_no_link_image_or_heading(server: tuple[str, int]):
    url, _ = server
    with _home(url, 1500) as page:
        serving.local_folder(page, "hostile")
        serving.choose(page, "task", "Task 2: text+image → text")
        # A file name opens the error: at the start of its Markdown, a heading and a link.
        _add_upload(page, "# BIG www.evil.example.trec", b"academia/a1 Q0 broken\n")
        page.get_by_text("wrong number of columns").wait_for()
        assert page.get_by_role("heading", name="BIG").count() == 0
        assert page.locator('a[href*="evil.example"]').count() == 0
        _add_upload(page, f"{MARKDOWN_NAME}.trec", f"academia/a1 Q0 {A1} 1 2.0 t\n".encode())
        serving.go_to(page, "Inspector")
        page.get_by_role("heading", name=MARKDOWN_NAME).wait_for()  # the run's name, literal
        serving.no_exception(page)
        assert page.locator('a[href*="lnk.html"]').count() == 0
        assert page.locator('img[src*="t.png"]').count() == 0

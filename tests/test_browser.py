"""The dashboard in a real browser: ``streamlit run app.py`` driven by headless chromium.

Uses Debian's chromium through playwright (no browser download). Every page is opened through
the sidebar navigation (one session, so the loaded runs stay), no exception box may appear,
the inspector must show the query's images beside the retrieved documents, and a screenshot
of each page is saved under ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner import run_task

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts" / "screenshots"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TASK_LABEL = "Task 2: text+image → text"
PAGES = {  # sidebar link -> text that appears once the page has finished drawing
    "Per query": "queries shown",
    "Compare": "By number of query images",
    "Inspector": "Rank diff",
    "Run a retriever": "Output folder",
    "Home": "Published (nDCG@10",
}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"
    ),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"streamlit did not answer at {url}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    command += ["--server.headless", "true", "--server.address", "127.0.0.1"]
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two Task 2 runs on the demo: BM25 and random ranking, as official outputs."""
    out = tmp_path_factory.mktemp("demo-runs")
    source = open_source("demo")
    for name in ("bm25", "random"):
        run_task(source, 2, get_retriever(name), out, k=100)
    return out


def _no_exception(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_timeout(500)
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()


def _settle(page) -> None:  # type: ignore[no-untyped-def]
    # Streamlit shows a running indicator while the script runs; wait until it is gone.
    page.wait_for_load_state("networkidle")
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=60_000)
    page.wait_for_timeout(300)


def test_every_page_in_chromium(server: str, demo_runs: Path):
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(server)
        page.get_by_text("MM-BRIGHT failure analysis").wait_for(timeout=60_000)
        _settle(page)
        _no_exception(page)
        page.screenshot(path=str(SHOTS / "home-empty.png"), full_page=True)

        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name=TASK_LABEL).click()
        _settle(page)
        page.get_by_role("tab", name="Folder").click()
        field = page.get_by_label("Folder: official outputs")
        field.fill(str(demo_runs))  # holds run_bm25/ and run_random/: both are added
        field.press("Enter")
        _settle(page)
        page.get_by_role("button", name="Add runs from folder").click()
        _settle(page)
        page.get_by_text("Headline numbers").wait_for()
        _no_exception(page)

        for title, marker in PAGES.items():
            page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
            page.get_by_text(marker).first.wait_for(timeout=60_000)
            _settle(page)
            _no_exception(page)
            slug = title.lower().replace(" ", "-")
            page.screenshot(path=str(SHOTS / f"{slug}.png"), full_page=True)
            if title == "Inspector":
                _check_inspector(page)
        browser.close()


def _check_inspector(page) -> None:  # type: ignore[no-untyped-def]
    columns = page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=page.locator('[data-testid="stImage"]')
    )
    row = columns.filter(has_text="Passage text").first
    assert row.count() == 1, "the query images and the ranked documents share one row"
    query_column = row.locator('[data-testid="stColumn"]').first
    assert query_column.locator('[data-testid="stImage"] img').count() >= 1
    assert row.locator('[data-testid="stColumn"]').nth(1).get_by_text("score").count() >= 1

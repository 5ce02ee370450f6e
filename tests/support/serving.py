"""The real dashboard server and Debian's chromium, shared by the browser tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from locations import ROOT

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"
    ),
]


def launch(playwright):  # type: ignore[no-untyped-def]
    """Debian's chromium, headless with the suite's settings (a sync or an async Playwright)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
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


@contextmanager
def streamlit_server(
    log_dir: Path,
    *options: str,
    env: Mapping[str, str] = {},
    script: str | Path = "app.py",
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``streamlit run <script>`` (the dashboard by default) on a free loopback port.

    The server runs from the repository root, so it reads the repository's Streamlit
    settings whichever script it serves; it stops when the block ends.
    """
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port)]
    command += ["--server.headless", "true", "--server.address", "127.0.0.1", *options]
    with (log_dir / "server.log").open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=20)


@contextmanager
def server_with_own_notes(tmp: pytest.TempPathFactory, notes: str = "notes") -> Iterator[str]:
    """The dashboard on a notes file of its own (under ``tmp``'s folder ``notes``), its URL.

    Tags other tests gave the demo's queries would otherwise show on its pages.
    """
    env = {"MMBRIGHT_NOTES": str(tmp.mktemp(notes) / "notes.sqlite3")}
    with streamlit_server(tmp.mktemp("streamlit"), env=env) as (url, _):
        yield url


# A run of the dashboard has finished when Streamlit says its script is not running and the
# newest run marker the app leaves (mmbright_core/ui/app.py; docs/dashboard.md, "A marker
# for each run") names a later run than ``before`` that did not end in a rerun. It counts
# the session's runs, so the page as it was before an action never meets the condition
# (Streamlit's "not running" alone is also true before the rerun has begun). Its page is
# drawn once no element still waits for its code to load (Streamlit loads most element types
# on first use and shows a skeleton meanwhile).
RUN_FINISHED = """before => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (app === null || app.dataset.testScriptState !== "notRunning") return false;
  const last = [...document.querySelectorAll("[data-mmb-run]")].at(-1);
  return last !== undefined && Number(last.dataset.mmbRun) > before
    && last.dataset.mmbState !== "rerun"
    && document.querySelector('[data-testid="stSkeleton"]') === null;
}"""
RUN_NUMBER = """() => Number(
  [...document.querySelectorAll("[data-mmb-run]")].at(-1)?.dataset.mmbRun ?? 0
)"""
RUN_TIMEOUT_MS = 180_000
"""How long one run may take: a busy machine's first inspector page takes a minute or more."""


def new_page(browser, **options):  # type: ignore[no-untyped-def]
    """A page whose waits allow a slow run (a busy machine), not Playwright's 30 s."""
    page = browser.new_page(**options)
    page.set_default_timeout(RUN_TIMEOUT_MS)
    return page


def run_number(page) -> int:  # type: ignore[no-untyped-def]
    """The number of the session's newest run on the page (0 before the first)."""
    return int(page.evaluate(RUN_NUMBER))


def wait_run(page, before: int = 0) -> None:  # type: ignore[no-untyped-def]
    """Wait until a run later than run ``before`` has finished and its page is drawn."""
    page.wait_for_function(RUN_FINISHED, arg=before, timeout=RUN_TIMEOUT_MS)


@contextmanager
def rerun(page) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """Around an action that reruns the app: wait, after it, for that run to finish."""
    before = run_number(page)
    yield
    wait_run(page, before)


def open_app(page, url: str) -> None:  # type: ignore[no-untyped-def]
    """Open ``url`` in ``page`` (a new session) and wait until its first run has finished."""
    page.goto(url)
    wait_run(page)


# Resolves once the browser has drawn its next frame and run the tasks queued before that
# frame's end: a task boundary, not a length of time.
NEXT_FRAME = "() => new Promise(done => requestAnimationFrame(() => setTimeout(done)))"


def after_next_frame(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the page has drawn what the last input changed, and what follows that.

    A widget inside a form hands its new value to Streamlit in a React effect that runs
    after the change is drawn; a form sent before then goes without it.
    """
    page.evaluate(NEXT_FRAME)


def go_to(page, title: str) -> None:  # type: ignore[no-untyped-def]
    """Open the page ``title`` from the sidebar's navigation and wait for its run."""
    with rerun(page):
        page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()


def selected(page, key: str) -> str:  # type: ignore[no-untyped-def]
    """The option shown in the select box whose widget key is ``key``."""
    return str(page.locator(f".st-key-{key} input[role=combobox]").input_value()).strip()


def choose(page, key: str, option: str) -> None:  # type: ignore[no-untyped-def]
    """Choose ``option`` in the select box ``key``; the app reruns only if it changes."""
    if selected(page, key) == option:
        return
    page.locator(f".st-key-{key} input[role=combobox]").click()
    with rerun(page):
        page.get_by_role("option", name=option, exact=True).click()


def no_exception(page) -> None:  # type: ignore[no-untyped-def]
    """No exception box on a page whose run has finished (nothing more is coming)."""
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()


def open_runs_panel(page) -> None:  # type: ignore[no-untyped-def]
    """Expand Home's "Add or remove runs" panel (collapsed once the task has runs)."""
    tab = page.get_by_role("tab", name="Folder")
    if not tab.is_visible():
        page.get_by_text("Add or remove runs").click()
        tab.wait_for()


def add_runs_from_folder(page, folder: str) -> None:  # type: ignore[no-untyped-def]
    """Add the runs of an official outputs folder through Home's run panel (its Folder tab)."""
    open_runs_panel(page)
    page.get_by_role("tab", name="Folder").click()
    field = page.get_by_label("Folder: official outputs")
    field.fill(folder)
    with rerun(page):
        field.press("Enter")
    with rerun(page):
        page.get_by_role("button", name="Add runs from folder").click()


def local_folder(page, folder: str) -> None:  # type: ignore[no-untyped-def]
    """Type a dataset folder into the sidebar (a local source) and press Enter."""
    sidebar = page.locator('[data-testid="stSidebar"]')
    with rerun(page):
        sidebar.get_by_text("Local folder").click()
    sidebar.get_by_label("Folder with").fill(folder)
    with rerun(page):
        sidebar.get_by_label("Folder with").press("Enter")


def open_task(browser, url: str, width: int, task: str, scheme: str = "light"):  # type: ignore[no-untyped-def]
    """A new page of the dashboard at ``width`` px in ``scheme``, with ``task`` chosen."""
    page = new_page(browser, viewport={"width": width, "height": 1000}, color_scheme=scheme)
    open_app(page, url)
    choose(page, "task", task)
    return page


LOOPBACK = {"127.0.0.1", "localhost"}
WEB = {"http", "https", "ws", "wss"}  # schemes that ask a host


class Traffic:
    """Every request a page makes, its failures and what it writes to the console."""

    def __init__(self, page) -> None:  # type: ignore[no-untyped-def]
        self.urls: list[str] = []
        self.failed: list[str] = []
        self.console: list[tuple[str, str, str]] = []  # (type, text, url of its source)
        page.on("request", lambda request: self.urls.append(request.url))
        page.on("response", self._response)
        page.on("console", lambda m: self.console.append((m.type, m.text, m.location["url"])))

    def _response(self, response) -> None:  # type: ignore[no-untyped-def]
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.url}")

    def hosts(self) -> set[str]:
        """The hosts asked (data: and blob: URLs ask none)."""
        return {urlsplit(u).hostname or "" for u in self.urls if urlsplit(u).scheme in WEB}


def upload_run(page, path: Path) -> None:  # type: ignore[no-untyped-def]
    """Upload one run file through Home's runs panel and add it, confirming a weak match."""
    with rerun(page):
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))
    with rerun(page):
        page.get_by_role("button", name="Add uploaded runs").click()
    with rerun(page):
        page.get_by_role("button", name="Add it anyway").click()
    page.get_by_text(f"Added run '{path.stem}'").wait_for(timeout=600_000)
    no_exception(page)

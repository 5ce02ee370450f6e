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

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
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


def no_exception(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_timeout(500)
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()


def settle(page) -> None:  # type: ignore[no-untyped-def]
    # Streamlit shows a running indicator while the script runs; wait until it is gone.
    page.wait_for_load_state("networkidle")
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=60_000)
    page.wait_for_timeout(300)


def open_runs_panel(page) -> None:  # type: ignore[no-untyped-def]
    """Expand Home's "Add or remove runs" panel (collapsed once the task has runs)."""
    tab = page.get_by_role("tab", name="Folder")
    if not tab.is_visible():
        page.get_by_text("Add or remove runs").click()
        tab.wait_for()


def open_task(browser, url: str, width: int, task: str, scheme: str = "light"):  # type: ignore[no-untyped-def]
    """A new page of the dashboard at ``width`` px in ``scheme``, with ``task`` chosen."""
    page = browser.new_page(viewport={"width": width, "height": 1000}, color_scheme=scheme)
    page.goto(url)
    page.get_by_text("MM-BRIGHT failure analysis").wait_for(timeout=60_000)
    settle(page)
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name=task).click()
    settle(page)
    return page

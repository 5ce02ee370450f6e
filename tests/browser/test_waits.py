"""A browser test's wait ends when the run its click started has drawn the page, not before.

A small app runs through the dashboard's own :func:`mmbright_core.ui.app.run_marked`; each
button starts a run that works for a while (longer than any fixed pause a test could take)
before it draws, ends by ``st.stop()``, or reruns itself first. Right after
:func:`serving.rerun`, what the run drew must be on the page, checked without any wait.
Streamlit's status widget alone is hidden before the rerun has begun, so a wait for it
returns at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from serving import BROWSER_MARKS, launch, new_page, open_app, rerun, streamlit_server

pytestmark = BROWSER_MARKS

# ``work()`` is a slow computation (about a second of hashing on two cores, more on a busy
# machine): its run sends nothing while it works.
APP = """
import hashlib

import streamlit as st

from mmbright_core.ui.app import run_marked


def work() -> int:
    digest = b""
    for _ in range(3_000_000):
        digest = hashlib.sha256(digest).digest()
    return st.session_state.setdefault("runs", 0) + 1


def draw() -> None:
    slow, stop, rerun = st.button("Slow"), st.button("Stop"), st.button("Rerun")
    if rerun:  # the run reruns the app at once; the next one does the work
        st.session_state["again"] = True
        st.rerun()
    if slow or stop or st.session_state.pop("again", False):
        st.session_state["runs"] = work()
        st.write(f"work {st.session_state['runs']} done")
    if stop:
        st.stop()


run_marked(draw)
"""
ACTIONS = (("Slow", "work 1 done"), ("Stop", "work 2 done"), ("Rerun", "work 3 done"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("waits")
    script = folder / "slow_app.py"
    script.write_text(APP, encoding="utf-8")
    with streamlit_server(folder, script=Path(script)) as (url, _):
        yield url


def test_the_wait_covers_a_slow_run_a_stopped_one_and_a_rerun(server: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = new_page(browser)
        open_app(page, server)
        for button, drawn in ACTIONS:
            with rerun(page):
                page.get_by_role("button", name=button).click()
            assert page.get_by_text(drawn).count() == 1, f"{button}: the wait ended too soon"
        browser.close()

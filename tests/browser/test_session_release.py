"""A closed tab's uploaded runs are freed once the app closes its session.

The dashboard is served as it is, by a script that also opens a probe on a loopback port.
Asked, the probe waits until the server has seen the tab close, takes weak references to the
uploaded runs' entries, closes the ended sessions as the app's watcher does
(:func:`mmbright_core.ui.common.sessions.close_sessions`, without waiting for the TTL) and says how
many entries are still alive after a full garbage collection. Streamlit's message loop keeps
the session it flushed last, so on a server whose only tab has closed, a session closed
without its state emptied keeps all its runs (docs/safety.md, "Bounded memory").
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from serving import (
    BROWSER_MARKS,
    free_port,
    launch,
    new_page,
    open_app,
    open_runs_panel,
    streamlit_server,
    upload_run,
)

pytestmark = BROWSER_MARKS

PROBE = """
import gc
import json
import os
import socket
import threading
import time
import weakref

import streamlit as st
from streamlit import runtime

from mmbright_core.ui.common import sessions
from mmbright_core.ui.common.state import RunEntry

SEEN: set[str] = set()  # the sessions the dashboard ran in
_DISCONNECTED = threading.Condition()
_live = runtime.get_instance()
_disconnect = _live.disconnect_session


def _disconnect_and_tell(session_id: str, **kwargs: object) -> None:
    _disconnect(session_id, **kwargs)
    with _DISCONNECTED:
        _DISCONNECTED.notify_all()


_live.disconnect_session = _disconnect_and_tell  # the server calls it when a tab closes


def _closed_tab() -> None:
    with _DISCONNECTED:
        _DISCONNECTED.wait_for(
            lambda: not any(_live.is_active_session(s) for s in SEEN), timeout=60
        )


def probe() -> dict[str, int]:
    _closed_tab()
    uploads = [
        weakref.ref(o)
        for o in gc.get_objects()
        if type(o) is RunEntry and o.origin.startswith("upload:")
    ]
    now = time.monotonic()
    grace = float(st.get_option("server.disconnectedSessionTTL")) / 2
    ended = sessions.ended_sessions(now) + sessions.ended_sessions(now + grace)
    if not sessions.close_sessions(ended).wait(60):
        return {"closed": -1}
    gc.collect()
    alive = sum(ref() is not None for ref in uploads)
    return {"closed": len(ended), "before": len(uploads), "after": alive}


def _serve(server: socket.socket) -> None:
    while True:
        conn, _ = server.accept()
        with conn:
            conn.recv(16)
            conn.sendall(json.dumps(probe()).encode())


_server = socket.create_server(("127.0.0.1", int(os.environ["PROBE_PORT"])))
threading.Thread(target=_serve, args=(_server,), daemon=True).start()
"""

APP = """
from streamlit.runtime.scriptrunner import get_script_run_ctx

import probe
from mmbright_core.ui.app import main

probe.SEEN.add(get_script_run_ctx().session_id)
main()
"""


def _ask(port: int) -> dict[str, int]:
    with socket.create_connection(("127.0.0.1", port), timeout=180) as conn:
        conn.sendall(b"probe")
        answer = b"".join(iter(lambda: conn.recv(65536), b""))
    result: dict[str, int] = json.loads(answer)
    return result


def _run_file(path: Path) -> Path:
    # The demo's queries with doc ids its corpus lacks: a weak match, added anyway.
    lines = [
        f"{domain}/{domain}_{n} Q0 {domain}/x{d}.txt {d + 1} {9 - d}.5 t\n"
        for domain in ("biology", "gis")
        for n in range(3)
        for d in range(8)
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_closed_sessions_uploaded_runs_are_no_longer_reachable(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "release_app.py").write_text(APP, encoding="utf-8")
    port = free_port()
    served = streamlit_server(
        tmp_path, script=tmp_path / "release_app.py", env={"PROBE_PORT": str(port)}
    )
    with served as (url, _), sync_api.sync_playwright() as p:
        browser = launch(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        open_app(page, url)
        open_runs_panel(page)
        upload_run(page, _run_file(tmp_path / "small.trec"))
        page.context.close()
        result = _ask(port)
        browser.close()
    assert result == {"closed": 1, "before": 1, "after": 0}

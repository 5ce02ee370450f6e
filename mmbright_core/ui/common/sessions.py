"""Memory per dashboard session: a budget for uploaded runs, and release when a session ends.

An uploaded run is held three times over while its session lives: the file's bytes in
Streamlit's upload manager, the parsed run (about five times the file) in the session's
state, and the tables scored from it. ``MMBRIGHT_SESSION_MAX_BYTES`` (default 512 MiB)
bounds the uploaded bytes a session holds, counted over the runs it still has, so removing
a run frees its share.

Streamlit keeps a closed tab's session for ``server.disconnectedSessionTTL`` seconds, so a
reconnect finds it, and then only drops it from a cache the next time that cache is used,
without shutting the session down: its uploaded files stay in the upload manager for as long
as the server runs. A watcher thread here closes every session that has been disconnected
for half that TTL through Streamlit's own ``Runtime.close_session`` (which frees its
uploaded files), empties its state, drops the cached score tables of the uploads no other
open session holds (:func:`mmbright_core.ui.common.loaders.forget_tables`), then returns the freed
memory to the system: a full garbage collection and glibc's ``malloc_trim``, since glibc
otherwise keeps freed arenas mapped (docs/safety.md, "Bounded memory"). Python's own
small-object allocator would still keep every 1 MiB arena in which one object lives on:
``mmbright app`` serves with ``PYTHONMALLOC=malloc`` so that the pages go back too.

Emptying the state is what frees the runs: ``close_session`` shuts a session down but leaves
its state as it was, and Streamlit's message loop keeps the session it flushed last in a
local variable until it flushes another one, so on a server whose last tab just closed, the
closed session and all it read stay reachable.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

import streamlit as st

from mmbright_core.errors import InputError
from mmbright_core.io.reading import size_text
from mmbright_core.ui.common import loaders

if TYPE_CHECKING:
    from streamlit.runtime.app_session import AppSession

SESSION_MAX_ENV = "MMBRIGHT_SESSION_MAX_BYTES"
DEFAULT_SESSION_MAX_BYTES = 512 * 2**20
UPLOAD_BYTES_KEY = "upload_bytes"
"""Session key: run fingerprint -> the bytes of the uploaded file it was read from."""
WATCH_SECONDS = 5.0
"""How often the watcher looks for sessions to close."""

_seen: dict[str, float | None] = {}  # session id -> when it was first seen disconnected
_sessions: dict[str, weakref.ref[AppSession]] = {}  # session id -> the session, state emptied
_uploaders: dict[str, set[str]] = {}  # uploaded run's fingerprint -> the sessions holding it
_lock = threading.Lock()
_watcher: list[threading.Thread] = []


def session_max_bytes() -> int:
    """The most bytes of uploaded runs one session may hold (``MMBRIGHT_SESSION_MAX_BYTES``).

    Raises:
        InputError: The variable is set to something other than a positive integer.
    """
    raw = os.environ.get(SESSION_MAX_ENV, "").strip()
    if not raw:
        return DEFAULT_SESSION_MAX_BYTES
    if not raw.isdigit() or int(raw) <= 0:
        raise InputError(
            f"bad {SESSION_MAX_ENV}",
            expected="a positive number of bytes (e.g. 536870912 for 512 MiB)",
            found=repr(raw),
        )
    return int(raw)


def held_upload_bytes(fingerprints: set[str]) -> int:
    """The uploaded bytes the session still holds: those of its runs named by ``fingerprints``."""
    sizes: Mapping[str, int] = st.session_state.get(UPLOAD_BYTES_KEY, {})
    return sum(size for key, size in sizes.items() if key in fingerprints)


def check_upload_budget(name: str, size: int, held: int) -> None:
    """Refuse an upload of ``size`` bytes that would take the session past its budget.

    Raises:
        InputError: ``held + size`` passes :func:`session_max_bytes`.
    """
    budget = session_max_bytes()
    if held + size <= budget:
        return
    raise InputError(
        "the upload would pass this session's budget for uploaded runs",
        source=name,
        expected=f"at most {size_text(budget)} of uploaded runs per session ({SESSION_MAX_ENV})",
        found=f"{size_text(held)} held and {size_text(size)} more",
        hint="Remove a run you no longer need, or load large runs from a folder",
    )


def record_upload(fingerprint: str, size: int) -> None:
    """Count an uploaded file's bytes against the session's budget (under its run)."""
    sizes = dict(st.session_state.get(UPLOAD_BYTES_KEY, {}))
    sizes[fingerprint] = size
    st.session_state[UPLOAD_BYTES_KEY] = sizes
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:
        with _lock:
            _uploaders.setdefault(fingerprint, set()).add(ctx.session_id)


def forget_uploads(session_id: str) -> list[str]:
    """Forget a closed session's uploads; return those no other open session uploaded too."""
    orphans = []
    with _lock:
        for key, owners in list(_uploaders.items()):
            owners.discard(session_id)
            if not owners:
                del _uploaders[key]
                orphans.append(key)
    return orphans


def watch_session() -> None:
    """Note the running session, so that its memory is released once it ends.

    Does nothing outside a served app (AppTest runs no Streamlit server).
    """
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None or not runtime.exists():
        return
    live = runtime.get_instance()
    with _lock:
        _seen[ctx.session_id] = None
        app_session = None if ctx.session_id in _sessions else live.get_app_session(ctx.session_id)
        if app_session is not None:
            # Weak: the note must not be what keeps a session alive.
            _sessions[ctx.session_id] = weakref.ref(app_session)
        if not _watcher:
            thread = threading.Thread(target=_watch, name="mmbright-sessions", daemon=True)
            _watcher.append(thread)
            thread.start()


def _watch() -> None:
    release_ticks = 0
    while True:
        time.sleep(WATCH_SECONDS)  # a background thread's period, not a test waiting
        ended = ended_sessions(time.monotonic())
        if ended:
            close_sessions(ended)
            # A closed session's script thread and its last messages let go of its objects
            # a little later: release again on the next ticks.
            release_ticks = 3
        elif release_ticks:
            release_ticks -= 1
            release_memory()


def ended_sessions(now: float) -> list[str]:
    """Forget and return the sessions disconnected for half of Streamlit's TTL or longer.

    Half: once the TTL has passed, Streamlit's storage no longer finds the session, and
    ``close_session`` could not shut it down (its uploaded files would stay behind).
    """
    from streamlit import runtime

    if not runtime.exists():
        return []
    live = runtime.get_instance()
    grace = float(st.get_option("server.disconnectedSessionTTL")) / 2
    ended = []
    with _lock:
        for session_id, since in list(_seen.items()):
            if live.is_active_session(session_id):
                _seen[session_id] = None  # reconnected
            elif since is None:
                _seen[session_id] = now
            elif now - since >= grace:
                ended.append(session_id)
                del _seen[session_id]
    return ended


def close_sessions(session_ids: list[str]) -> threading.Event:
    """Close the sessions named, empty their state and release memory, on the event loop.

    Safe to call from any thread: the work is handed to Streamlit's event loop.

    Returns:
        An event set once the sessions are closed and the memory released.
    """
    from streamlit import runtime

    live = runtime.get_instance()
    done = threading.Event()

    def close() -> None:  # on the event loop: Runtime.close_session must run there
        try:
            for session_id in session_ids:
                live.close_session(session_id)
                empty_state(session_id)
                loaders.forget_tables(forget_uploads(session_id))
            release_memory()
        finally:
            done.set()

    # Streamlit's own cross-thread calls into the runtime go through this loop the same way.
    loop = live._get_async_objs().eventloop
    loop.call_soon_threadsafe(close)
    return done


def empty_state(session_id: str) -> None:
    """Drop every value a closed session kept (its runs, pending uploads, choices).

    The session is shut down and never runs again, so nothing reads its state any more;
    only the objects Streamlit still holds it by (see the module's docstring) would keep it.
    """
    with _lock:
        ref = _sessions.pop(session_id, None)
    app_session = ref() if ref is not None else None
    if app_session is not None:
        app_session.session_state.clear()


def release_memory() -> None:
    """Collect garbage and hand freed heap memory back to the system (glibc only)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return  # not glibc (musl, macOS): nothing to trim
    trim(0)

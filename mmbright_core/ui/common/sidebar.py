"""The sidebar every page shares: data source, task, protocol and the runs to show.

It is drawn by the entry point on every rerun, so its widgets (and their session-state keys)
live as long as the session, whichever page is open.
"""

from __future__ import annotations

import streamlit as st

from mmbright_core.data.choices import PROTOCOLS
from mmbright_core.data.layout import PINNED_REVISION
from mmbright_core.data.sources import parse_source_spec
from mmbright_core.errors import InputError
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.ui.common import loaders, state, widgets
from mmbright_core.ui.common.literal import literal, visible

SOURCE_KINDS = ("Demo (synthetic)", "Local folder", "Hugging Face")
TASK_LABELS = {number: info.label for number, info in TASK_TABLE.items()}
"""task number -> how the task reads on screen (the task table's labels)."""


def initial_source() -> tuple[str, str, str]:
    """The source widgets' first values, from ``MMBRIGHT_SOURCE``: (kind, folder, revision).

    The spec reads as ``mmbright --source`` reads it (``parse_source_spec``): ``demo`` (or
    unset), ``hf``, ``hf@<revision>``, or a folder. The user may still change it in the sidebar.
    """
    parsed = parse_source_spec(state.initial_source_spec())
    if parsed.kind == "demo":
        return SOURCE_KINDS[0], "", PINNED_REVISION
    if parsed.kind == "hf":
        return SOURCE_KINDS[2], "", parsed.revision
    return SOURCE_KINDS[1], parsed.folder, PINNED_REVISION


def _source_spec(kind: str) -> str:
    """Turn the source widgets into the spec ``open_source`` takes."""
    _, first_folder, first_revision = initial_source()
    if kind == SOURCE_KINDS[1]:
        folder = st.sidebar.text_input(
            "Folder with {config}/{domain}.parquet",
            **widgets.sticky("source_folder", first_folder),
            placeholder="/data/mm-bright",
        ).strip()
        if folder:
            try:
                loaders.dataset_folder(folder)  # the pages refuse it too (loaders.get_source)
            except (InputError, OSError) as err:
                st.sidebar.error(literal(err), icon=":material/block:")
        return folder or state.DEFAULT_SOURCE
    if kind == SOURCE_KINDS[2]:
        revision = st.sidebar.text_input(
            "Revision",
            **widgets.sticky("source_revision", first_revision),
        )
        return f"hf@{revision.strip() or PINNED_REVISION}"
    return state.DEFAULT_SOURCE


def render_sidebar() -> None:
    """Draw the shared sidebar and store the choices in session state."""
    st.sidebar.header("Data")
    kind = st.sidebar.radio(
        "Source",
        SOURCE_KINDS,
        **widgets.sticky("source_kind", initial_source()[0]),
    )
    st.session_state[state.SOURCE_KEY] = _source_spec(kind)
    st.sidebar.selectbox(
        "Task",
        tuple(TASK_LABELS),
        format_func=TASK_LABELS.__getitem__,
        **widgets.sticky(state.TASK_KEY, state.DEFAULT_TASK),
    )
    st.sidebar.selectbox(
        "Task 4 protocol",
        PROTOCOLS,
        **widgets.sticky(state.PROTOCOL_KEY, state.DEFAULT_PROTOCOL),
        disabled=not TASK_TABLE[state.current_task()].protocols,
        help="paper: fixed passage key (default); legacy: the key of the published Tables 5-6; "
        "release: scored as the January 2026 release code scores it (every pair of a gold "
        "passage relevant, nothing excluded)",
    )
    names = tuple(state.task_runs())
    st.sidebar.header("Runs")
    if not names:
        st.sidebar.caption("No run for this task yet: add some on the Home page.")
    key = state.selected_key()
    previous = state.remembered(key)
    chosen = [n for n in previous if n in names] if isinstance(previous, list) else list(names)
    chosen += [n for n in state.take_fresh_runs() if n in names and n not in chosen]
    st.session_state[key] = chosen
    _keep_selection(key)
    st.sidebar.multiselect(
        "Runs shown", names, key=key, on_change=_keep_selection, args=(key,), format_func=visible
    )


def _keep_selection(key: str) -> None:
    """Remember the runs chosen, and those chosen on another source while it is not shown.

    Runs are filed under their source; a choice made on the demo must still stand once the
    user has looked at a local folder and come back.
    """
    shown, before = set(state.task_runs()), state.remembered(key)
    held = state.all_runs()
    elsewhere = [
        name
        for name in (before if isinstance(before, list) else [])
        if name not in shown and (state.current_task(), name) in held
    ]
    state.keep(key, [*st.session_state[key], *elsewhere])


def selected_runs() -> list[str]:
    """The names of the runs chosen in the sidebar for the current task."""
    names = state.task_runs()
    chosen = state.remembered(state.selected_key())
    return [n for n in chosen if n in names] if isinstance(chosen, list) else []

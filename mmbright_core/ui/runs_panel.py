"""The Home page's run panel: upload files, point at a folder, load the demo's runs.

Loading happens in widget callbacks, which Streamlit runs before the script: the sidebar
drawn afterwards already lists (and selects) the new runs. A load that fails leaves a
message for the page and changes nothing else.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from mmbright_core.errors import MMBrightError
from mmbright_core.ui import loaders, render, state, workspace

MESSAGES_KEY = "run_messages"
UPLOAD_KEY = "upload_files"
FOLDER_KEY = "runs_folder"
AUTOLOADED_KEY = "demo_runs_loaded"
USED_KEY = "runs_panel_used"


def _report(kind: str, text: str) -> None:
    st.session_state[MESSAGES_KEY] = [*st.session_state.get(MESSAGES_KEY, []), (kind, text)]
    st.session_state[USED_KEY] = True


def _add(entries: list[state.RunEntry]) -> None:
    # Runs are filed under the source spec in use, which is how the sidebar finds them.
    for entry in entries:
        name = state.unique_name(entry.name, entry.task)
        state.add_run(dataclasses.replace(entry, name=name, source=state.source_spec()))
        _report("success", f"Added run {name!r} ({entry.provenance}).")


def _on_add_uploads() -> None:
    files = st.session_state.get(UPLOAD_KEY) or []
    try:
        source = loaders.get_source(state.source_spec())
    except (MMBrightError, OSError) as err:
        _report("error", str(err))
        return
    for file in files:
        try:
            entry = workspace.entry_from_bytes(
                file.name,
                file.getvalue(),
                source,
                state.current_task(),
                state.current_protocol(),
                max_bytes=int(st.get_option("server.maxUploadSize")) * 2**20,
            )
        except MMBrightError as err:
            _report("error", str(err))
            continue
        _add([entry])


def _on_add_folder() -> None:
    folder = str(st.session_state.get(FOLDER_KEY, "")).strip()
    try:
        source = loaders.get_source(state.source_spec())
        entries = workspace.entries_from_folder(
            folder, source, state.current_task(), state.current_protocol()
        )
    except (MMBrightError, OSError) as err:
        _report("error", str(err))
        return
    _add(entries)


def _on_add_demo() -> None:
    try:
        entries = workspace.demo_entries(state.current_task())
    except (MMBrightError, OSError) as err:
        _report("error", str(err))
        return
    if not entries:
        _report("info", f"The demo has no run for task {state.current_task()}.")
    _add([e for e in entries if (e.task, e.name) not in state.all_runs()])


def autoload_demo_runs() -> None:
    """Load the demo's runs once per session when the demo source is in use.

    A failure is left as a message for the Home page; the app keeps working without runs.
    """
    if state.source_spec() != state.DEFAULT_SOURCE or st.session_state.get(AUTOLOADED_KEY):
        return
    st.session_state[AUTOLOADED_KEY] = True
    try:
        tasks = workspace.demo_tasks()
        for task in tasks:
            for entry in workspace.demo_entries(task):
                state.add_run(entry)
        if tasks and state.current_task() not in tasks:
            state.set_task(tasks[0])  # open on a task the demo has runs for
    except (MMBrightError, OSError) as err:
        _report("error", f"The demo's runs could not be loaded: {err}")


def used() -> bool:
    """Whether the panel has reported a load or a removal in this session.

    Home keeps the panel open from then on: it would otherwise fold away on the rerun that
    shows the report, or on the next one, and hide it.
    """
    return bool(st.session_state.get(USED_KEY))


def render_messages() -> None:
    """Show (once) what the last loads reported."""
    for kind, text in st.session_state.pop(MESSAGES_KEY, []):
        {"error": st.error, "info": st.info}.get(kind, st.success)(render.escape_message(text))


def render_panel() -> None:
    """Draw the three ways of adding runs and the list of loaded runs."""
    upload, folder, demo = st.tabs(["Upload files", "Folder", "Demo runs"])
    with upload:
        st.file_uploader(
            "Run files (TREC, JSON scores, parquet)", accept_multiple_files=True, key=UPLOAD_KEY
        )
        st.button("Add uploaded runs", key="add_uploads", on_click=_on_add_uploads)
    with folder:
        st.text_input(
            "Folder: official outputs (<domain>/scores.json) or run files",
            key=FOLDER_KEY,
            placeholder="outputs/run_bm25",
        )
        st.button("Add runs from folder", key="add_folder", on_click=_on_add_folder)
    with demo:
        st.caption("The demo's runs: text-only BM25 and BM25 with OCR text of the query images.")
        st.button("Load the demo runs", key="add_demo", on_click=_on_add_demo)
    render_messages()
    _render_loaded()


def _render_loaded() -> None:
    runs = state.task_runs()
    if not runs:
        st.info(f"No run for task {state.current_task()} yet.")
        return
    for name, entry in runs.items():
        left, right = st.columns([5, 1])
        left.text(f"{name}  ·  {entry.provenance}  ·  {len(entry.runs)} domain(s)")
        right.button(
            "Remove",
            key=f"remove_{entry.fingerprint}_{name}",
            on_click=state.remove_run,
            args=(name,),
        )

"""The Home page's run panel: upload files, point at a folder, load the demo's runs.

Loading happens in widget callbacks, which Streamlit runs before the script: the sidebar
drawn afterwards already lists (and selects) the new runs. A load that fails leaves a
message for the page and changes nothing else.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from mmbright_core.data.matching import MatchCounts
from mmbright_core.errors import MMBrightError
from mmbright_core.types import Task
from mmbright_core.ui.common import loaders, sessions, state, workspace
from mmbright_core.ui.common.literal import literal, visible

MESSAGES_KEY = "run_messages"
UPLOAD_KEY = "upload_files"
FOLDER_KEY = "runs_folder"
AUTOLOADED_KEY = "demo_runs_loaded"
USED_KEY = "runs_panel_used"
OFFERS_KEY = "folder_other_tasks"


def _report(kind: str, text: str) -> None:
    st.session_state[MESSAGES_KEY] = [*st.session_state.get(MESSAGES_KEY, []), (kind, text)]
    st.session_state[USED_KEY] = True


def _add(entries: list[state.RunEntry]) -> None:
    # Runs are filed under the source spec in use, which is how the sidebar finds them.
    for entry in entries:
        name = state.unique_name(entry.name, entry.task)
        state.add_run(dataclasses.replace(entry, name=name, source=state.source_spec()))
        _report("success", f"Added run {name!r} ({entry.provenance}).")
        for warning in entry.warnings:  # no silent zeros: what its outputs say lowered it
            _report("warning", f"{name}: {warning}")


def _on_add_uploads() -> None:
    # Each file is read once for the source and task: a run the user removed, or a file
    # already refused, would otherwise come back (with its old error) on every click.
    files = [f for f in st.session_state.get(UPLOAD_KEY) or [] if not state.upload_read(f.file_id)]
    if not files:
        _report(
            "info",
            "No new file to read: the files in the uploader were read already for this task. "
            "Upload a file again to read it once more.",
        )
        return
    try:
        view = loaders.current_view()
    except (MMBrightError, OSError) as err:
        _report("error", str(err))
        return
    for file in files:
        state.mark_upload_read(file.file_id)
        try:
            data = file.getvalue()
            sessions.check_upload_budget(file.name, len(data), _held_upload_bytes())
            upload = workspace.read_upload(
                file.name, data, view, int(st.get_option("server.maxUploadSize")) * 2**20
            )
            entry, counts = upload.entry, upload.match(view)
        except MMBrightError as err:
            _report("error", str(err))
            continue
        sessions.record_upload(entry.fingerprint, len(data))
        if counts.weak:  # it would score 0 where it matches nothing: ask first
            _pending()[file.file_id] = _Pending(state.source_spec(), file.name, entry, counts)
            st.session_state[USED_KEY] = True
        else:
            _add([entry])


def _held_upload_bytes() -> int:
    # The runs the session still holds, added or awaiting a word: a removed run frees its share.
    held = {entry.fingerprint for entry in state.all_runs().values()}
    held |= {waiting.entry.fingerprint for waiting in _pending().values()}
    return sessions.held_upload_bytes(held)


@dataclasses.dataclass(frozen=True)
class _Pending:
    """An upload that matches the task only a little, kept until the user decides."""

    spec: str
    file_name: str
    entry: state.RunEntry
    counts: MatchCounts


def _pending() -> dict[str, _Pending]:
    pending: dict[str, _Pending] = st.session_state.setdefault(state.UPLOADS_PENDING_KEY, {})
    return pending


def _on_confirm(file_id: str) -> None:
    held = _pending().pop(file_id, None)
    if held is not None:
        _add([held.entry])


def _on_discard(file_id: str) -> None:
    held = _pending().pop(file_id, None)
    if held is not None:
        _report("info", f"Discarded {held.file_name}: it was not added.")


def _render_pending() -> None:
    """Show each upload awaiting a word, with its counts and the two ways to decide."""
    for file_id, held in list(_pending().items()):
        if held.spec != state.source_spec() or held.entry.task != state.current_task():
            continue  # it was read for another source or task; it waits for them
        how = "nothing" if held.counts.nothing else "only a little"
        st.warning(
            literal(
                f"{held.file_name} matches {how} of task {held.entry.task}: "
                f"{held.counts.describe()}. A query or document the task does not know scores "
                "0. Check the source and the task, or add it anyway."
            ),
            icon=":material/warning:",
        )
        add, discard, _ = st.columns([2, 2, 3])
        add.button(
            "Add it anyway", key=f"upload_add_{file_id}", on_click=_on_confirm, args=(file_id,)
        )
        discard.button(
            "Discard it", key=f"upload_discard_{file_id}", on_click=_on_discard, args=(file_id,)
        )


def _on_add_folder() -> None:
    _add_folder(str(st.session_state.get(FOLDER_KEY, "")).strip())


def _add_folder(folder: str) -> None:
    # The tasks of the outputs left out are offered until the next folder is read.
    st.session_state[OFFERS_KEY] = (folder, ())
    try:
        found = workspace.entries_from_folder(folder, loaders.current_view())
    except (MMBrightError, OSError) as err:
        _report("error", str(err))
        return
    _add(found.entries)
    for sentence in found.skipped:
        _report("info", f"Skipped {sentence}.")
    st.session_state[OFFERS_KEY] = (folder, found.other_tasks)


def _on_switch_and_add(folder: str, task: Task) -> None:
    state.set_task(task)
    _add_folder(folder)


def _render_offers() -> None:
    """A button per task of the outputs a folder read left out: it chooses the task, adds them."""
    folder, tasks = st.session_state.get(OFFERS_KEY, ("", ()))
    for task in tasks:
        if task != state.current_task():
            st.button(
                literal(f"Choose task {task} and add its runs from this folder"),
                key=f"switch_add_{task}",
                on_click=_on_switch_and_add,
                args=(folder, task),
            )


def _on_add_demo() -> None:
    try:
        entries = loaders.demo_runs().get(state.current_task(), ())
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
        by_task = loaders.demo_runs()
        tasks = tuple(by_task)
        for task in tasks:
            for entry in by_task[task]:
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
        show = {"error": st.error, "info": st.info, "warning": st.warning}.get(kind, st.success)
        show(literal(text))


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
            literal("Folder: official outputs (<domain>/scores.json) or run files"),
            key=FOLDER_KEY,
            placeholder="outputs/run_bm25",
        )
        st.button("Add runs from folder", key="add_folder", on_click=_on_add_folder)
    with demo:
        st.caption("The demo's runs: text-only BM25 and BM25 with OCR text of the query images.")
        st.button("Load the demo runs", key="add_demo", on_click=_on_add_demo)
    render_messages()
    _render_offers()
    _render_pending()
    _render_loaded()


def _render_loaded() -> None:
    runs = state.task_runs()
    if not runs:
        st.info(f"No run for task {state.current_task()} yet.")
        return
    for name, entry in runs.items():
        left, right = st.columns([5, 1])
        left.text(visible(f"{name}  ·  {entry.provenance}  ·  {len(entry.runs)} domain(s)"))
        right.button(
            "Remove",
            key=f"remove_{entry.fingerprint}_{name}",
            on_click=state.remove_run,
            args=(name,),
        )

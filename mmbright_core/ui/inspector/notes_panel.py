"""Failure tags and a free note on the inspected query, kept in the shared notes database.

The database is one SQLite file (:class:`~mmbright_core.notes.NotesStore`, path from
``MMBRIGHT_NOTES``): it is read on every run of the page (one indexed look-up), so what one
browser saved shows in every other and after a restart. A failed save (a locked or corrupt
file) shows the store's message and leaves what the user typed in the boxes. Saves are
conditional on the version the boxes were filled from: one refused because another session
saved meanwhile shows the stored notes beside the draft, to keep both, take theirs or
overwrite (docs/safety.md, "Notes shared safely"). An unsaved note is kept for its query
while the page or the query changes. A tag can be renamed here (its labels follow), and
every note exported as CSV or JSON, as ``mmbright notes export`` writes them.
"""

from __future__ import annotations

import functools

import streamlit as st

from mmbright_core.data.view import QueryRef
from mmbright_core.errors import NotesError
from mmbright_core.notes import NotesStore, QueryKey, QueryNotes
from mmbright_core.notes.database import default_path
from mmbright_core.notes.records import Conflict
from mmbright_core.notes.store import Format
from mmbright_core.notes.tables import keep_both
from mmbright_core.ui.common import state, widgets
from mmbright_core.ui.common.failure_tags import notes_scope
from mmbright_core.ui.common.literal import literal, visible

TAGS_KEY = "insp_tags"
NOTE_KEY = "insp_note"
AUTHOR_KEY = "notes_author"
NEW_TAG_KEY = "insp_new_tag"
RENAME_FROM_KEY = "insp_rename_from"
RENAME_TO_KEY = "insp_rename_to"
SHOWN_KEY = "insp_notes_shown"
"""(query key, version, note, tags) of the notes last put into the boxes: what the user edits."""
MESSAGE_KEY = "insp_notes_message"
CONFLICT_KEY = "insp_notes_conflict"
"""(query key, stored notes) of a save refused because someone else saved meanwhile."""
DRAFTS_KEY = "insp_notes_drafts"
"""Unsaved notes by query key, each with the version it was typed over: kept when the boxes
are dropped (another page, another query)."""


@st.cache_resource(max_entries=4, show_spinner=False)
def _store(path: str) -> NotesStore:
    return NotesStore(path)


def store() -> NotesStore:
    """The notes database of this server (one shared connection per file)."""
    return _store(str(default_path()))


def query_key(ref: QueryRef) -> QueryKey:
    """The notes key of a query: its view's (:func:`notes_scope`), its domain and id."""
    return QueryKey(*notes_scope(ref.view), ref.domain, ref.query_id)


def _drafts() -> dict[QueryKey, tuple[str, int]]:
    drafts: dict[QueryKey, tuple[str, int]] = st.session_state.setdefault(DRAFTS_KEY, {})
    return drafts


def _load(key: QueryKey, notes: QueryNotes) -> None:
    """Put the stored notes into the boxes unless the user is editing the same query's.

    The boxes hold the user's own values only while they are drawn: Streamlit drops a
    widget's state on a run that does not draw it (another page, a stop above the panel),
    so boxes that are gone are filled from the store again, and an unsaved note kept for
    the query (:data:`DRAFTS_KEY`) is put back into its box. A save then sends only what
    the boxes showed, conditional on the version they were filled from.
    """
    shown = st.session_state.get(SHOWN_KEY)
    drawn = NOTE_KEY in st.session_state and TAGS_KEY in st.session_state
    if drawn and shown is not None and shown[0] == key:
        note, tags = st.session_state[NOTE_KEY], list(st.session_state[TAGS_KEY])
        edited = note != shown[2] or set(tags) != set(shown[3])
        if edited or shown[1] == notes.version:
            return
    _show(key, notes)
    draft, version = _drafts().get(key, (notes.note, notes.version))
    if draft != notes.note:
        st.session_state[NOTE_KEY] = draft
        # Saved against the version it was typed over: a save made meanwhile is a conflict.
        st.session_state[SHOWN_KEY] = (key, version, notes.note, notes.tags)
        st.session_state[MESSAGE_KEY] = (
            "info",
            "Your unsaved note on this query was kept; save it to store it.",
        )


def _show(key: QueryKey, notes: QueryNotes) -> None:
    """Fill the boxes with ``notes`` and base the next save on their version."""
    st.session_state[NOTE_KEY] = notes.note
    st.session_state[TAGS_KEY] = list(notes.tags)
    _shown(key, notes)


def _shown(key: QueryKey, notes: QueryNotes) -> None:
    st.session_state[SHOWN_KEY] = (key, notes.version, notes.note, notes.tags)
    conflict = st.session_state.get(CONFLICT_KEY)
    if conflict is not None and conflict[0] == key:
        del st.session_state[CONFLICT_KEY]


def _based_on(key: QueryKey) -> tuple[int, str]:
    """The version and note the boxes were filled from (version 0: nothing was shown)."""
    shown = st.session_state.get(SHOWN_KEY)
    return (shown[1], shown[2]) if shown is not None and shown[0] == key else (0, "")


def _write(key: QueryKey, note: str, tags: list[str], based_on: int) -> None:
    """Store the note and tags if the query is still at ``based_on``; say what happened.

    A save refused because someone else saved meanwhile stores nothing and keeps the
    stored notes (:data:`CONFLICT_KEY`) for the page to show beside the draft.
    """
    author = str(state.remembered(AUTHOR_KEY, "") or "").strip() or None
    try:
        saved = store().save(key, note, tags, author, based_on=based_on)
    except NotesError as err:
        st.session_state[MESSAGE_KEY] = ("error", str(err))  # the boxes keep what was typed
        return
    if isinstance(saved, Conflict):
        st.session_state[CONFLICT_KEY] = (key, saved.stored)
        st.session_state[MESSAGE_KEY] = (
            "warning",
            "Not saved: someone else saved this query's notes after you opened them. "
            "Their notes are shown beside yours; nothing was overwritten.",
        )
        return
    _shown(key, saved)
    _drafts().pop(key, None)
    st.session_state[MESSAGE_KEY] = ("success", "Saved.")


def _draft() -> tuple[str, list[str]]:
    return str(st.session_state.get(NOTE_KEY, "")), [
        str(t) for t in st.session_state.get(TAGS_KEY, [])
    ]


def _save(key: QueryKey) -> None:
    """Button callback: store the tags and the note; on failure keep them in the boxes."""
    note, tags = _draft()
    _write(key, note, tags, _based_on(key)[0])


def _tags_changed(key: QueryKey) -> None:
    """Multiselect callback: store the tags as soon as they reach the server.

    The tags are not held back for the Save button: a pick handed to the page after the
    button was clicked (a busy browser) would otherwise be missing from that save. The
    note stays a draft until it is saved.
    """
    version, note = _based_on(key)
    _write(key, note, _draft()[1], version)


def _note_changed(key: QueryKey) -> None:
    """Text area callback: keep the unsaved note, so that leaving the page loses nothing."""
    _drafts()[key] = (str(st.session_state.get(NOTE_KEY, "")), _based_on(key)[0])


def _resolve(key: QueryKey, choice: str) -> None:
    """Conflict button callback: keep both, take theirs, or overwrite them with the draft."""
    conflict = st.session_state.get(CONFLICT_KEY)
    if conflict is None or conflict[0] != key:
        return
    stored: QueryNotes = conflict[1]
    note, tags = _draft()
    if choice == "theirs":
        _show(key, stored)
        _drafts().pop(key, None)
        st.session_state[MESSAGE_KEY] = ("success", "The boxes show the stored notes.")
        return
    if choice == "both":
        note, tags = keep_both(stored, note, tags)
        st.session_state[NOTE_KEY] = note
        st.session_state[TAGS_KEY] = tags
    _write(key, note, tags, stored.version)


def _show_conflict(key: QueryKey) -> None:
    """The stored notes beside the draft, and the three ways out of the conflict."""
    conflict = st.session_state.get(CONFLICT_KEY)
    if conflict is None or conflict[0] != key:
        return
    stored: QueryNotes = conflict[1]
    with st.container(border=True, key="insp_conflict"):
        who = f" by {stored.author}" if stored.author else ""
        st.markdown(literal(f"Saved meanwhile{who} ({(stored.updated_at or '')[:19]}):"))
        st.text(visible("Tags: " + (", ".join(stored.tags) or "none")))
        st.text(visible(stored.note or "(no note)"))
        choices = (
            ("both", "Keep both", "their note, then yours; every tag of either"),
            ("theirs", "Take theirs", "drop your changes, show the stored notes"),
            ("mine", "Overwrite", "store yours in place of theirs"),
        )
        for column, (choice, label, meaning) in zip(st.columns(3), choices, strict=True):
            column.button(
                literal(label),
                key=f"insp_conflict_{choice}",
                help=literal(meaning),
                on_click=_resolve,
                args=(key, choice),
            )


def _add_tag() -> None:
    """Form callback: append a tag to the taxonomy (the name stays in the box on failure)."""
    name = str(st.session_state.get(NEW_TAG_KEY, "")).strip()
    try:
        store().add_tag(name)
    except NotesError as err:
        st.session_state[MESSAGE_KEY] = ("error", str(err))
        return
    st.session_state[NEW_TAG_KEY] = ""
    st.session_state[MESSAGE_KEY] = ("success", f"Tag {name!r} added.")


def _rename_tag() -> None:
    """Form callback: rename a tag of the taxonomy (its labels follow it)."""
    old = str(st.session_state.get(RENAME_FROM_KEY) or "")
    new = str(st.session_state.get(RENAME_TO_KEY, "")).strip()
    try:
        store().rename_tag(old, new)
    except NotesError as err:
        st.session_state[MESSAGE_KEY] = ("error", str(err))
        return
    # The boxes show the new name once the notes are read again.
    st.session_state.pop(SHOWN_KEY, None)
    st.session_state[RENAME_TO_KEY] = ""
    st.session_state[MESSAGE_KEY] = ("success", f"Tag {old!r} renamed {new!r}.")


def _exports() -> None:
    """Every note of the notes database, as the command's export writes it (CSV or JSON)."""
    formats: tuple[tuple[Format, str, str], ...] = (
        ("csv", "text/csv", "Export notes (CSV)"),
        ("json", "application/json", "Export notes (JSON)"),
    )
    for column, (kind, mime, label) in zip(st.columns(len(formats)), formats, strict=True):
        column.download_button(
            literal(label),
            functools.partial(store().export, kind),
            file_name=f"notes.{kind}",
            mime=mime,
            key=f"insp_notes_{kind}",
            icon=":material/download:",
            on_click="ignore",  # a download changes nothing on the page: no rerun
        )


def show_notes(ref: QueryRef) -> None:
    """Tags, note and author for one query, with a form to add a tag to the taxonomy."""
    key = query_key(ref)
    try:
        notes = store().get(key)
        taxonomy = [tag.name for tag in store().tags()]
    except NotesError as err:
        st.error(literal(err), icon=":material/error:")
        return
    _load(key, notes)
    chosen = [t for t in st.session_state.get(TAGS_KEY, []) if t not in taxonomy]
    # Not a form: a form hands a multiselect's pick to the page in a later frame than the
    # pick is drawn, so a Save clicked meanwhile sent the form without it. Each pick is
    # stored as it arrives; the note is kept as a draft until Save (_note_changed).
    st.multiselect(
        "Failure tags",
        [*taxonomy, *chosen],
        key=TAGS_KEY,
        format_func=visible,
        on_change=_tags_changed,
        args=(key,),
    )
    st.text_area("Note", key=NOTE_KEY, height=100, on_change=_note_changed, args=(key,))
    st.button("Save tags and note", key="insp_save", on_click=_save, args=(key,), type="primary")
    _show_conflict(key)
    st.text_input(
        "Your name (optional)",
        **widgets.sticky(AUTHOR_KEY, ""),
    )
    message = st.session_state.pop(MESSAGE_KEY, None)
    if message is not None:
        kind, text = message
        show = {"error": st.error, "warning": st.warning, "info": st.info}.get(kind, st.success)
        show(literal(text))
    if notes.updated_at:
        who = f" by {notes.author}" if notes.author else ""
        st.caption(literal(f"Last saved {notes.updated_at[:19]}{who}."))
    with st.expander("Add a tag to the taxonomy"), st.form("insp_tag_form", border=False):
        st.text_input("New tag", key=NEW_TAG_KEY)
        st.form_submit_button("Add tag", key="insp_add_tag", on_click=_add_tag)
    if taxonomy:
        with st.expander("Rename a tag"), st.form("insp_rename_form", border=False):
            st.selectbox("Tag", taxonomy, key=RENAME_FROM_KEY, format_func=visible)
            st.text_input("New name", key=RENAME_TO_KEY)
            st.form_submit_button("Rename tag", key="insp_rename", on_click=_rename_tag)
    _exports()

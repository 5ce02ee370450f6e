"""Failure tags and a free note on the inspected query, kept in the shared notes database.

The database is one SQLite file (:class:`~mmbright_core.notes.NotesStore`, path from
``MMBRIGHT_NOTES``): it is read on every run of the page (one indexed look-up), so what one
browser saved shows in every other and after a restart. A failed save (a locked or corrupt
file) shows the store's message and leaves what the user typed in the boxes. A tag can be
renamed here (its labels follow), and every note exported as CSV or JSON, as
``mmbright notes export`` writes them.
"""

from __future__ import annotations

import functools

import streamlit as st

from mmbright_core.errors import NotesError
from mmbright_core.notes import NotesStore, QueryKey, QueryNotes
from mmbright_core.notes.database import default_path
from mmbright_core.notes.store import Format
from mmbright_core.ui import state, widgets
from mmbright_core.ui.literal import literal, visible

TAGS_KEY = "insp_tags"
NOTE_KEY = "insp_note"
AUTHOR_KEY = "notes_author"
NEW_TAG_KEY = "insp_new_tag"
RENAME_FROM_KEY = "insp_rename_from"
RENAME_TO_KEY = "insp_rename_to"
SHOWN_KEY = "insp_notes_shown"
"""(query key, updated_at) of the notes last put into the boxes: what the user edits."""
MESSAGE_KEY = "insp_notes_message"


@st.cache_resource(max_entries=4, show_spinner=False)
def _store(path: str) -> NotesStore:
    return NotesStore(path)


def store() -> NotesStore:
    """The notes database of this server (one shared connection per file)."""
    return _store(str(default_path()))


def query_key(domain: str, query_id: str) -> QueryKey:
    """The notes key of a query of the current source, task and protocol."""
    return QueryKey(
        state.source_spec(), state.current_task(), state.current_protocol(), domain, query_id
    )


def _load(key: QueryKey, notes: QueryNotes) -> None:
    """Put the stored notes into the boxes unless the user is editing the same query's.

    The boxes hold the user's own values only while they are drawn: Streamlit drops a
    widget's state on a run that does not draw it (another page, a stop above the panel),
    so boxes that are gone are filled from the store again, whatever was shown before.
    A save then sends back only what the boxes showed.
    """
    shown = st.session_state.get(SHOWN_KEY)
    drawn = NOTE_KEY in st.session_state and TAGS_KEY in st.session_state
    if drawn and shown is not None and shown[0] == key:
        note, tags = st.session_state[NOTE_KEY], list(st.session_state[TAGS_KEY])
        edited = note != shown[2] or tags != list(shown[3])
        if edited or shown[1] == notes.updated_at:
            return
    st.session_state[NOTE_KEY] = notes.note
    st.session_state[TAGS_KEY] = list(notes.tags)
    st.session_state[SHOWN_KEY] = (key, notes.updated_at, notes.note, notes.tags)


def _save(key: QueryKey) -> None:
    """Form callback: store the tags and the note; on failure keep them in the boxes."""
    note = str(st.session_state.get(NOTE_KEY, ""))
    tags = [str(t) for t in st.session_state.get(TAGS_KEY, [])]
    author = str(state.remembered(AUTHOR_KEY, "") or "").strip() or None
    try:
        store().set_tags(key, tags, author)
        saved = store().set_note(key, note, author)
    except NotesError as err:
        st.session_state[MESSAGE_KEY] = ("error", str(err))
        # The widgets keep their values; the text the store could not write is put back too.
        st.session_state[NOTE_KEY] = note
        st.session_state[TAGS_KEY] = tags
        return
    st.session_state[SHOWN_KEY] = (key, saved.updated_at, saved.note, saved.tags)
    st.session_state[MESSAGE_KEY] = ("success", "Saved.")


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


def show_notes(domain: str, query_id: str) -> None:
    """Tags, note and author for one query, with a form to add a tag to the taxonomy."""
    key = query_key(domain, query_id)
    try:
        notes = store().get(key)
        taxonomy = [tag.name for tag in store().tags()]
    except NotesError as err:
        st.error(literal(err), icon=":material/error:")
        return
    _load(key, notes)
    chosen = [t for t in st.session_state.get(TAGS_KEY, []) if t not in taxonomy]
    with st.form("insp_notes_form", border=False):
        st.multiselect("Failure tags", [*taxonomy, *chosen], key=TAGS_KEY, format_func=visible)
        st.text_area("Note", key=NOTE_KEY, height=100)
        st.form_submit_button(
            "Save tags and note", key="insp_save", on_click=_save, args=(key,), type="primary"
        )
    st.text_input(
        "Your name (optional)",
        **widgets.sticky(AUTHOR_KEY, ""),
    )
    message = st.session_state.pop(MESSAGE_KEY, None)
    if message is not None:
        kind, text = message
        show = st.error if kind == "error" else st.success
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

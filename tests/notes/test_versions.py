"""Saves conditional on the version a draft was loaded from; older files upgraded in place.

Every write to a query's note or labels raises its row's version. A save names the version
its draft was loaded from and is refused, writing nothing, when the row moved on since: the
caller gets the stored notes back to show beside the draft. ``replace`` imports keep what
was changed here after the file's version, unless forced.
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

from mmbright_core.errors import NotesError
from mmbright_core.notes import SCHEMA_VERSION, Conflict, NotesStore, QueryKey
from mmbright_core.notes.database import _create_1
from mmbright_core.notes.tables import BOTH_KEPT, keep_both

K1 = QueryKey("demo", 2, "paper", "askubuntu", "askubuntu_4")
K2 = QueryKey("demo", 2, "paper", "askubuntu", "askubuntu_5")
HEADER = "source,task,protocol,domain,query_id,tags,note,author,created_at,updated_at\n"
OLD = "2020-01-01T00:00:00+00:00"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "notes.sqlite3"


def test_a_stale_save_is_refused_and_returns_the_stored_notes(db):
    with NotesStore(db) as tab_a, NotesStore(db) as tab_b:
        loaded = tab_a.get(K1)  # A opens the query: no notes yet
        assert loaded.version == 0
        saved_b = tab_b.save(K1, "B's note", ["OCR noise"], "bea", based_on=tab_b.get(K1).version)
        assert not isinstance(saved_b, Conflict) and saved_b.version > 0
        refused = tab_a.save(K1, "", ["OCR noise", "other"], based_on=loaded.version)
        assert isinstance(refused, Conflict)
        assert (refused.stored.note, refused.stored.tags) == ("B's note", ("OCR noise",))
        assert refused.stored.version == saved_b.version
        assert tab_a.get(K1) == saved_b  # nothing written: the note is not emptied
        # Saving again based on the version now seen overwrites, as the user chose.
        mine = tab_a.save(K1, "A's note", ["other"], based_on=refused.stored.version)
        assert not isinstance(mine, Conflict)
        assert (tab_b.get(K1).note, tab_b.get(K1).tags) == ("A's note", ("other",))


def test_a_stale_save_of_what_is_stored_already_is_no_conflict(db):
    with NotesStore(db) as store:
        store.save(K1, "same", ["OCR noise"], based_on=0)
        again = store.save(K1, "same", ["OCR noise"], based_on=0)
        assert not isinstance(again, Conflict) and again.note == "same"


def test_every_write_raises_the_version(db):
    with NotesStore(db) as store:
        seen = [store.set_note(K1, "one").version]
        seen.append(store.set_tags(K1, ["OCR noise"]).version)
        seen.append(store.add_tag_to(K1, "other").version)
        store.rename_tag("other", "another")
        seen.append(store.get(K1).version)
        store.import_(
            io.StringIO(HEADER + f"demo,2,paper,askubuntu,askubuntu_4,custom,,,{OLD},{OLD}\n")
        )
        seen.append(store.get(K1).version)  # merge: the note kept, a label added
        store.remove_tag("custom", force=True)
        seen.append(store.get(K1).version)
        assert seen == sorted(set(seen)) and seen[0] == 1
        assert store.get(K2).version == 0


def _schema_1_file(path: Path) -> None:
    """A notes file as the previous version wrote it: schema 1, no row versions."""
    with sqlite3.connect(path) as conn:
        _create_1(conn)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO query_notes VALUES (?, ?, ?, ?, ?, 'kept', 'ana', ?, ?)", (*K1, OLD, OLD)
        )
        conn.execute(
            "INSERT INTO query_tags VALUES (?, ?, ?, ?, ?, 'OCR noise', 'ana', ?)", (*K1, OLD)
        )
    conn.close()


def test_a_file_of_the_previous_schema_is_upgraded_in_place_keeping_every_note(db):
    _schema_1_file(db)
    with NotesStore(db) as store:
        notes = store.get(K1)
        assert (notes.note, notes.tags, notes.author, notes.version) == (
            "kept",
            ("OCR noise",),
            "ana",
            1,
        )
        assert isinstance(store.save(K1, "stale", [], based_on=0), Conflict)
        assert store.save(K1, "newer", [], based_on=1).version > 1  # type: ignore[union-attr]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    conn.close()


def test_keep_both_joins_two_notes_and_unites_the_tags(db):
    with NotesStore(db) as store:
        stored = store.set_note(K1, "theirs")
        stored = store.set_tags(K1, ["other"])
    assert keep_both(stored, "mine", ["OCR noise", "other"]) == (
        "theirs" + BOTH_KEPT + "mine",
        ["other", "OCR noise"],
    )
    assert keep_both(stored, "theirs", []) == ("theirs", ["other"])
    assert keep_both(stored, "", []) == ("theirs", ["other"])


def test_replace_keeps_a_note_changed_here_after_the_files_version_unless_forced(db):
    with NotesStore(db) as store:
        store.set_note(K1, "changed here after the export")
        store.set_note(K2, "older here")
    with sqlite3.connect(db) as conn:  # K2 last changed before the file's version of it
        conn.execute("UPDATE query_notes SET updated_at = ? WHERE query_id = ?", (OLD, K2[4]))
    conn.close()
    file = HEADER + "".join(
        f"demo,2,paper,askubuntu,{key.query_id},other,from the file,,{OLD},2021-01-01T00:00:00Z\n"
        for key in (K1, K2)
    )
    with NotesStore(db) as store:
        report = store.import_(io.StringIO(file), format="csv", mode="replace")
        assert (report.conflicts, report.replaced, report.overwrote_newer) == (1, 1, 0)
        assert "1 kept (newer here, not replaced)" in report.summary()
        assert (store.get(K1).note, store.get(K1).tags) == ("changed here after the export", ())
        assert store.get(K2).note == "from the file"
        forced = store.import_(io.StringIO(file), format="csv", mode="replace", force=True)
        assert (forced.conflicts, forced.overwrote_newer) == (0, 1)
        assert store.get(K1).note == "from the file"


def test_a_read_only_store_creates_no_file_and_writes_nothing(db):
    with NotesStore(db, read_only=True) as store:
        assert store.records() == [] and len(store.tags()) == 6
        with pytest.raises(NotesError, match="opened for reading only"):
            store.set_note(K1, "x")
    assert not db.exists() and not db.parent.joinpath("notes.sqlite3-wal").exists()

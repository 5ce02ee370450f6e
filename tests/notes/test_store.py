"""The notes database: taxonomy, notes, concurrency, damaged files, export and import."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import re
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mmbright_core.errors import InputError, NotesError, WriteError
from mmbright_core.notes import (
    DEFAULT_TAGS,
    SCHEMA_VERSION,
    NotesStore,
    QueryKey,
    QueryNotes,
    ScopeKey,
    default_path,
)

K1 = QueryKey("demo", 1, "paper", "biology", "q1")
K2 = QueryKey("demo", 1, "paper", "economics", "q2")
K3 = QueryKey("hf@abc123", 4, "legacy", "biology", "q1")
DEFAULTS = [name for name, _ in DEFAULT_TAGS]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "notes.sqlite3"


@pytest.fixture
def store(db: Path):
    with NotesStore(db) as opened:
        yield opened


def contents(store: NotesStore) -> list[QueryNotes]:
    return store.records()


# Where the file lives.


def test_default_path_explicit_then_env_then_data_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("MMBRIGHT_NOTES", str(tmp_path / "env.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path(tmp_path / "arg.db") == tmp_path / "arg.db"
    assert default_path() == tmp_path / "env.db"
    monkeypatch.delenv("MMBRIGHT_NOTES")
    assert default_path() == tmp_path / "xdg" / "mmbright" / "notes.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / ".local/share/mmbright/notes.sqlite3"


def test_default_path_macos_and_windows(monkeypatch, tmp_path):
    monkeypatch.delenv("MMBRIGHT_NOTES", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "darwin")
    assert default_path() == tmp_path / "Library/Application Support/mmbright/notes.sqlite3"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert default_path() == tmp_path / "Roaming" / "mmbright" / "notes.sqlite3"


def test_first_use_creates_folders_schema_and_wal(tmp_path):
    path = tmp_path / "a" / "b" / "notes.sqlite3"
    NotesStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"tags", "query_notes", "query_tags"}


# Notes and tags of one query.


def test_unannotated_query_is_empty(store):
    assert store.get(K1) == QueryNotes(K1)


def test_note_round_trip_keeps_created_and_moves_updated(store):
    first = store.set_note(K1, "image is a chart\nline 2, with a comma", author="ana")
    second = store.set_note(K1, "rewritten")
    assert first.note == "image is a chart\nline 2, with a comma"
    assert (second.note, second.author) == ("rewritten", "ana")  # no author given: kept
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.updated_at.endswith("+00:00")
    assert store.get(K1) == second


def test_set_tags_replaces_the_set_in_taxonomy_order(store):
    store.set_tags(K1, ["other", "OCR noise"], author="ana")
    assert store.get(K1).tags == ("OCR noise", "other")
    assert store.set_tags(K1, ["judgment looks wrong"]).tags == ("judgment looks wrong",)
    assert store.add_tag_to(K1, "OCR noise").tags == ("OCR noise", "judgment looks wrong")
    assert store.set_tags(K1, []).tags == ()


def test_unknown_tag_changes_nothing_and_suggests(store):
    store.set_tags(K1, ["other"])
    with pytest.raises(NotesError, match=r"unknown tag 'OCR nose'.*'OCR noise'") as err:
        store.set_tags(K1, ["OCR noise", "OCR nose"])
    assert err.value.unsaved == "OCR noise; OCR nose"
    assert isinstance(err.value, InputError)
    assert store.get(K1).tags == ("other",)


def test_malformed_key_is_refused(store):
    with pytest.raises(NotesError, match="query key") as err:
        store.set_note(("demo", "one", "paper", "biology", "q1"), "kept text")
    assert err.value.unsaved == "kept text"
    with pytest.raises(NotesError, match="incomplete"):
        store.get(("demo", 1, "paper", "", "q1"))


def test_for_scope_filters_one_task_view(store):
    store.set_note(K1, "a")
    store.set_note(K2, "b")
    store.set_note(K3, "c")
    scope = store.for_scope(ScopeKey("demo", 1, "paper"))
    assert sorted(scope) == [("biology", "q1"), ("economics", "q2")]
    assert list(store.for_scope(ScopeKey("demo", 1, "paper"), "economics")) == [("economics", "q2")]
    assert store.for_scope(ScopeKey("demo", 4, "paper")) == {}


# The taxonomy.


def test_default_taxonomy_then_add(store):
    assert [t.name for t in store.tags()] == DEFAULTS
    added = store.add_tag("caption missing", "no alt text")
    assert (added.position, added.description, added.uses) == (len(DEFAULTS), "no alt text", 0)
    assert store.tags()[-1] == added
    with pytest.raises(NotesError, match="already"):
        store.add_tag("caption missing")
    for bad in ("", " padded", "a;b", "two\nlines"):
        with pytest.raises(NotesError, match="invalid tag name"):
            store.add_tag(bad)


def test_rename_carries_labels(store):
    store.set_tags(K1, ["other", "OCR noise"])
    store.set_tags(K2, ["other"])
    renamed = store.rename_tag("other", "something else")
    assert (renamed.position, renamed.uses) == (DEFAULTS.index("other"), 2)
    assert store.get(K1).tags == ("OCR noise", "something else")
    assert store.get(K2).tags == ("something else",)
    with pytest.raises(NotesError, match="that tag exists"):
        store.rename_tag("OCR noise", "something else")
    with pytest.raises(NotesError, match="unknown tag 'other'"):
        store.rename_tag("other", "x")


def test_remove_refuses_a_used_tag_unless_forced(store):
    store.set_tags(K1, ["other", "OCR noise"])
    assert store.remove_tag("judgment looks wrong") == 0
    with pytest.raises(NotesError, match=r"still in use.*1 labelled query"):
        store.remove_tag("other")
    assert store.get(K1).tags == ("OCR noise", "other")
    assert store.remove_tag("other", force=True) == 1
    assert store.get(K1).tags == ("OCR noise",)
    assert "other" not in [t.name for t in store.tags()]


# Several writers and readers on one file.


def test_second_store_sees_writes_and_reopen_keeps_everything(db):
    first, second = NotesStore(db), NotesStore(db)
    first.set_note(K1, "from the first session")
    first.add_tag("new label")
    assert second.get(K1).note == "from the first session"
    second.set_tags(K1, ["new label"])
    assert first.get(K1).tags == ("new label",)
    before = first.records()
    first.close()
    second.close()
    with pytest.raises(NotesError, match="closed"):
        first.get(K1)
    with NotesStore(db) as reopened:
        assert reopened.records() == before
        assert reopened.tags()[-1].name == "new label"


WRITERS, WRITES = 20, 50
SHARED_TAGGED, SHARED_NOTED = 20, 5  # the other 25 writes of each writer hit shared keys


def _writer(path: str, worker: int, start) -> None:  # runs in a child process
    start.wait(30)
    store = NotesStore(path, timeout=60)
    tag = f"writer {worker:02d}"
    store.add_tag(tag)
    for j in range(WRITES):
        if j < WRITES // 2:
            store.set_note(("own", 1, "paper", f"w{worker}", f"q{j}"), f"note {worker}/{j}")
        elif j - WRITES // 2 < SHARED_TAGGED:
            store.add_tag_to(("shared", 1, "paper", "d", f"q{j - WRITES // 2}"), tag)
        else:
            store.set_note(("noted", 1, "paper", "d", f"q{j}"), f"by {tag}", author=tag)
    store.close()


def test_twenty_concurrent_writers_lose_nothing(db):
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [context.Process(target=_writer, args=(str(db), i, start)) for i in range(WRITERS)]
    for process in workers:
        process.start()
    start.set()  # every process opens the (not yet created) file at about the same time
    for process in workers:
        process.join(120)
    assert [p.exitcode for p in workers] == [0] * WRITERS

    with NotesStore(db) as store:
        own = store.records(source="own")
        assert len(own) == WRITERS * (WRITES // 2)  # 500 distinct notes
        assert {n.note for n in own} == {
            f"note {i}/{j}" for i in range(WRITERS) for j in range(WRITES // 2)
        }
        every_tag = {f"writer {i:02d}" for i in range(WRITERS)}
        shared = store.records(source="shared")
        assert len(shared) == SHARED_TAGGED
        assert all(set(n.tags) == every_tag for n in shared)  # 20 x 20 labels
        noted = store.records(source="noted")
        assert len(noted) == SHARED_NOTED
        assert all(n.note == f"by {n.author}" for n in noted)  # one writer's note, whole
        assert len(store.tags()) == len(DEFAULTS) + WRITERS
        assert sorted(t.position for t in store.tags()) == list(range(len(DEFAULTS) + WRITERS))


# Damaged, locked and unwritable files.


def test_corrupt_file_is_reported_and_left_untouched(db):
    garbage = os.urandom(4096)
    db.write_bytes(garbage)
    with pytest.raises(NotesError, match="not a readable SQLite database") as err:
        NotesStore(db)
    assert "left as it is" in str(err.value)
    assert db.read_bytes() == garbage


def test_another_programs_database_is_refused_and_left_untouched(db):
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE embeddings (key TEXT)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(NotesError, match="not a notes file"):
        NotesStore(db)
    assert db.read_bytes() == before


def test_newer_schema_is_refused(db):
    NotesStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(NotesError, match="newer version"):
        NotesStore(db)


def test_locked_file_gives_the_note_back_and_changes_nothing(db):
    with NotesStore(db, timeout=0.2) as store:
        store.set_note(K1, "saved before")
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(NotesError, match="locked") as err:
                store.set_note(K1, "typed while locked")
            assert err.value.unsaved == "typed while locked"
            assert "unsaved text is kept" in str(err.value)
            with pytest.raises(NotesError, match="locked"):
                store.add_tag("blocked")
            assert store.get(K1).note == "saved before"  # WAL: readers still read
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert store.get(K1).note == "saved before"
        assert store.set_note(K1, err.value.unsaved).note == "typed while locked"


def test_folder_that_cannot_be_made(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(NotesError, match="cannot write the notes file"):
        NotesStore(blocker / "notes.sqlite3")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs POSIX, not root")
def test_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(NotesError, match="cannot write the notes file"):
            NotesStore(folder / "notes.sqlite3")
    finally:
        folder.chmod(0o700)


# Export and import.


def _annotate(store: NotesStore) -> None:
    store.add_tag("custom", "an added label")
    store.set_note(K1, 'chart misread, "quoted"\nsecond line', author="ana")
    store.set_tags(K1, ["image essential but misread", "custom"], author="ana")
    store.set_tags(K2, ["OCR noise"])
    store.set_note(K3, "ünïcode ✓")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_then_import_into_a_fresh_file_is_equal(store, tmp_path, fmt):
    _annotate(store)
    out = tmp_path / f"notes.{fmt}"
    text = store.export(fmt, out)
    assert out.read_bytes().decode("utf-8") == text
    with NotesStore(tmp_path / "fresh.sqlite3") as fresh:
        report = fresh.import_(out)
        assert contents(fresh) == contents(store)
        assert (report.added, report.labels_added, report.tags_created) == (3, 3, 1)
        if fmt == "json":  # JSON also carries the descriptions
            assert [(t.name, t.description) for t in fresh.tags()] == [
                (t.name, t.description) for t in store.tags()
            ]


def test_export_filters_and_writes_to_an_open_file(store):
    _annotate(store)
    buffer = io.StringIO()
    store.export("json", buffer, source="demo", domain="biology")
    queries = json.loads(buffer.getvalue())["queries"]
    assert [(q["domain"], q["query_id"], q["tags"]) for q in queries] == [
        ("biology", "q1", ["image essential but misread", "custom"])
    ]
    with pytest.raises(NotesError, match=r"unknown export filter.*found 'colour'"):
        store.export("csv", colour="red")


def test_export_to_a_path_goes_through_the_atomic_writer(store, tmp_path):
    _annotate(store)
    out = tmp_path / "exports" / "notes.csv"  # its folder is made, as for every output
    text = store.export("csv", out)
    assert out.read_bytes().decode("utf-8") == text
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(WriteError, match=f"^{re.escape(str(blocker / 'n.csv'))}: cannot write"):
        store.export("csv", blocker / "n.csv")


CSV_HEADER = "source,task,protocol,domain,query_id,tags,note,author,created_at,updated_at\n"
OLD = "2020-01-01T00:00:00Z"
OLD_STORED = "2020-01-01T00:00:00.000000+00:00"


def _soon() -> str:
    """A time just after now, within the clock tolerance of an import: newer than any note."""
    return (datetime.now(timezone.utc) + timedelta(minutes=1)).isoformat(timespec="microseconds")


def _csv(*rows: str) -> io.StringIO:
    return io.StringIO(CSV_HEADER + "".join(row + "\n" for row in rows))


def test_merge_keeps_the_newer_note_and_unions_tags(store):
    here = store.set_note(K1, "written here")
    store.set_tags(K1, ["OCR noise"])
    report = store.import_(
        _csv(f"demo,1,paper,biology,q1,other,older text,bob,{OLD},{OLD}"), format="csv"
    )
    assert (report.kept_newer, report.updated, report.labels_added) == (1, 0, 1)
    now = store.get(K1)
    assert (now.note, now.tags) == ("written here", ("OCR noise", "other"))
    assert now.created_at == here.created_at
    newer = _soon()
    report = store.import_(_csv(f"demo,1,paper,biology,q1,,newer text,bob,{OLD},{newer}"))
    assert report.updated == 1
    now = store.get(K1)
    assert (now.note, now.author, now.updated_at) == ("newer text", "bob", newer)
    assert now.tags == ("OCR noise", "other")  # merge never drops a tag
    assert now.created_at == OLD_STORED  # the earlier of the two


def test_replace_sets_the_files_content_and_counts_newer_overwrites(store):
    store.set_note(K1, "newer here")
    store.set_tags(K1, ["OCR noise"])
    store.set_note(K2, "not in the file")
    report = store.import_(
        _csv(f"demo,1,paper,biology,q1,other,from file,,{OLD},{OLD}"), mode="replace", force=True
    )
    assert (report.replaced, report.overwrote_newer) == (1, 1)
    assert "1 replaced, 1 of which newer here" in report.summary()
    now = store.get(K1)
    assert (now.note, now.tags, now.updated_at) == (
        "from file",
        ("other",),
        OLD[:-1] + ".000000+00:00",
    )
    assert store.get(K2).note == "not in the file"


@pytest.mark.parametrize(
    ("rows", "where", "message"),
    [
        (["demo,1,paper,biology,q1,,ok,,,", "demo,one,paper,biology,q2,,x,,,"], ":3", "bad task"),
        (["demo,1,paper,biology,,,x,,,"], ":2", "empty query_id"),
        (["demo,1,paper,biology,q1,,x,,yesterday,"], ":2", "bad created_at"),
        (["demo,1,paper,b,q1,,x,,,", "demo,1,paper,b,q1,,y,,,"], ":3", "same query twice"),
        (
            ['demo,1,paper,b,q1,,"two', 'lines",,,', "demo,1,paper,b,q1,,x,,,,extra"],
            ":4",
            "more cells",
        ),
    ],
)
def test_malformed_csv_names_file_and_line_and_changes_nothing(
    store, tmp_path, rows, where, message
):
    store.set_note(K1, "kept")
    path = tmp_path / "bad.csv"
    path.write_text(CSV_HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(NotesError, match=message) as err:
        store.import_(path)
    assert str(err.value).startswith(f"{path}{where}: ")
    assert contents(store) == [store.get(K1)] and store.get(K1).note == "kept"


def test_malformed_csv_header_and_json(store, tmp_path):
    bad_header = tmp_path / "a.csv"
    bad_header.write_text("qid,note\n1,x\n")
    with pytest.raises(NotesError, match=r"a.csv:1: not a notes export.*missing source"):
        store.import_(bad_header)
    bad_json = tmp_path / "b.json"
    bad_json.write_text('{"queries": [\n  {"source": "demo",}\n]}\n')
    with pytest.raises(InputError, match=r"b.json:2: invalid JSON at column 21"):
        store.import_(bad_json)
    entry = tmp_path / "c.json"
    entry.write_text(json.dumps({"queries": [{"source": "demo", "task": 1}]}))
    with pytest.raises(NotesError, match=r"c.json: queries entry 1: missing protocol"):
        store.import_(entry)
    with pytest.raises(NotesError, match="import mode"):
        store.import_(entry, mode="overwrite")  # type: ignore[arg-type]
    assert contents(store) == []


def test_a_notes_file_created_by_another_process_mid_check_opens(
    db: Path, monkeypatch: pytest.MonkeyPatch
):
    # Another writer creates the schema while this one checks the new, empty file: the check
    # must read the version and the tables from one snapshot, never "no version, tables".
    from mmbright_core.notes import database

    real_connect = sqlite3.connect
    created: list[bool] = []

    def connect(*args, **kwargs):
        conn = real_connect(*args, **kwargs)

        def between(statement: str) -> None:
            if "sqlite_master" in statement and not created:
                created.append(True)
                with NotesStore(db) as other:  # commits the whole schema
                    other.add_tag("made meanwhile")

        conn.set_trace_callback(between)
        return conn

    monkeypatch.setattr(database.sqlite3, "connect", connect)
    with NotesStore(db) as store:
        assert created and "made meanwhile" in {t.name for t in store.tags()}

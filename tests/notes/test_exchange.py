"""``mmbright notes import`` reads as strictly as the run readers, and stores all or nothing.

A device, a FIFO, invalid UTF-8, deeply nested JSON, a file past the input limit and
wrongly typed records each give one line on stderr with exit status 2, and the notes file
is left as it was. Tag names holding control or bidi characters are refused wherever a
tag is named, and ``notes tags`` never prints such a character raw.

A CSV naming a column twice or a column the export lacks is refused; a time in the future
cannot win a merge; a replacing import keeps what was changed here after the file's version;
reading commands work on a read-only notes file and create none; an export to a terminal
shows control and bidi characters as escapes.
"""

from __future__ import annotations

import json
import os
import pty
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzzing import mutations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mmbright_core.cli import main
from mmbright_core.errors import InputError, NotesError
from mmbright_core.notes import NotesStore, QueryKey

K1 = QueryKey("demo", 1, "paper", "biology", "q1")
CAP = int(1.5 * 2**30)  # address space of the command under test
GOOD = {"source": "demo", "task": 2, "protocol": "paper", "domain": "biology", "query_id": "q2"}
HEADER = "source,task,protocol,domain,query_id,tags,note,author,created_at,updated_at"
ROW = "demo,1,paper,biology,q1,other,from the file,bob,2020-01-01T00:00:00Z,2020-01-01T00:00:00Z"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "notes.sqlite3"
    with NotesStore(path) as store:
        store.set_note(K1, "kept as it was", author="ana")
    return path


def records(db: Path) -> list[object]:
    with NotesStore(db) as store:
        return [*store.records(), *store.tags()]


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def import_command(file: Path | str, db: Path, **env: str) -> tuple[int, str]:
    """Run ``mmbright notes import`` in its own process, under a memory cap and a timeout."""
    command = [sys.executable, "-m", "mmbright_core", "notes", "import", str(file)]
    done = subprocess.run(
        [*command, "--db", str(db)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_cap,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
        check=False,
    )
    return done.returncode, done.stderr


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[:2000]
    assert lines[0].startswith("mmbright notes: error: ")
    return lines[0]


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "notes.csv"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    return fifo


def _written(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


HOSTILE_FILES = {
    "device": (lambda tmp: Path("/dev/zero"), "/dev/zero: not a regular file"),
    "fifo": (_fifo, "found a named pipe (FIFO)"),
    "folder": (lambda tmp: tmp, "not a regular file; expected a regular file; found a folder"),
    "invalid utf-8": (
        lambda tmp: _written(tmp, "bad.csv", HEADER.encode() + b"\ndemo,1,paper,b,q\xe9,,,,,\n"),
        "bad.csv:2: the content is not UTF-8 text",
    ),
    "deep json": (
        lambda tmp: _written(tmp, "deep.json", b"[" * 100_000),
        "deep.json: JSON nested too deeply",
    ),
    "past the limit": (
        lambda tmp: _written(tmp, "big.csv", (HEADER + "\n" + "x" * 300_000).encode()),
        "big.csv: the input is larger than the input size limit",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_FILES))
def test_hostile_files_are_one_line_and_store_nothing(case, db, tmp_path):
    make, message = HOSTILE_FILES[case]
    before = records(db)
    status, stderr = import_command(make(tmp_path), db, MMBRIGHT_MAX_INPUT_BYTES="200000")
    assert status == 2 and message in one_line(stderr)
    assert records(db) == before


def test_a_refused_import_creates_no_notes_file(tmp_path):
    absent = tmp_path / "new" / "notes.sqlite3"
    status, stderr = import_command("/dev/zero", absent)
    assert status == 2 and "not a regular file" in one_line(stderr)
    assert not absent.parent.exists()


def _json(tmp_path: Path, document: object) -> Path:
    return _written(tmp_path, "notes.json", json.dumps(document).encode())


WRONGLY_TYPED = [
    (
        {"tags": 5, "queries": []},
        'notes.json: bad tags; expected a "tags" list; found the number 5',
    ),
    ([GOOD, {**GOOD, "query_id": ["q1", "q2"]}], "queries entry 2: bad query_id; expected a "),
    ([{**GOOD, "note": {"a": 1}}], "queries entry 1: bad note; expected a string; found an object"),
    ([{**GOOD, "task": 9999}], "bad task; expected one of the tasks 1, 2, 3, 4 (a number)"),
    (
        [{**GOOD, "task": "2"}],
        "bad task; expected one of the tasks 1, 2, 3, 4 (a number); found the string '2'",
    ),
    ([{**GOOD, "task": True}], "found true (a boolean)"),
    (
        [{**GOOD, "protocol": "papr"}],
        "bad protocol; expected paper or legacy or release; found 'papr'",
    ),
    ([{**GOOD, "tags": "OCR noise"}], 'bad tags; expected a "tags" list; found the string'),
    ([{**GOOD, "tags": [1]}], "bad tag in tags; expected a list of tag names (strings)"),
    ([{**GOOD, "author": 7}], "bad author; expected a string or null; found the number 7"),
    ([{**GOOD, "notes": "misspelt"}], "queries entry 1: unknown field 'notes'"),
    ({"queries": [GOOD], "tags": [{"name": 3}]}, "tags entry 1: bad name"),
    ({"format": "other", "queries": []}, "not a notes export of this version"),
    ('{"queries": [], "queries": []}', "field 'queries' given twice"),
]


@pytest.mark.parametrize(("document", "message"), WRONGLY_TYPED)
def test_wrongly_typed_records_name_the_record_and_field(document, message, db, tmp_path, capsys):
    path = (
        _written(tmp_path, "notes.json", document.encode())
        if isinstance(document, str)
        else _json(tmp_path, document)
    )
    before = records(db)
    assert main(["notes", "import", str(path), "--db", str(db)]) == 2
    assert message in one_line(capsys.readouterr().err)
    assert records(db) == before


def test_a_bad_last_record_stores_nothing_of_the_good_ones(db, tmp_path):
    rows = [f"demo,1,paper,biology,q{i},OCR noise,fine,,," for i in range(2, 50)]
    path = _written(tmp_path, "n.csv", "\n".join([HEADER, *rows, "demo,9,paper,b,q,,,,,"]).encode())
    before = records(db)
    with NotesStore(db) as store, pytest.raises(NotesError) as err:
        store.import_(path)
    assert str(err.value).startswith(f"{path}:50: record 49: bad task; expected one of the tasks")
    assert records(db) == before


def test_a_csv_saved_by_excel_with_a_bom_and_crlf_is_read(db, tmp_path):
    text = f"{HEADER}\r\ndemo,1,paper,biology,q9,OCR noise,from Excel,bob,,\r\n"
    path = _written(tmp_path, "excel.csv", b"\xef\xbb\xbf" + text.encode())
    with NotesStore(db) as store:
        assert store.import_(path).added == 1
        notes = store.get(QueryKey("demo", 1, "paper", "biology", "q9"))
    assert (notes.note, notes.tags, notes.author) == ("from Excel", ("OCR noise",), "bob")


HIDDEN = ["a\x1b[2Jb", "nul\x00", "rtl \u202eevil", "iso\u2066late", "tab\there", "ls\u2028"]


@pytest.mark.parametrize("name", HIDDEN, ids=ascii)
def test_tag_names_with_control_or_bidi_characters_are_refused(name, db, tmp_path, capsys):
    before = records(db)
    document = {"tags": [{"name": name, "description": ""}], "queries": []}
    with NotesStore(db) as store:
        with pytest.raises(NotesError, match="tags entry 1: bad name"):
            store.import_(_json(tmp_path, document))
        with pytest.raises(NotesError, match="queries entry 1: bad tag name"):
            store.import_(_json(tmp_path, [{**GOOD, "tags": [name]}]))
        with pytest.raises(NotesError, match=r"invalid tag name.*bidirectional"):
            store.add_tag(name)
        with pytest.raises(NotesError, match="invalid tag name"):
            store.rename_tag("other", name)
    if "\x00" not in name:  # the command line cannot carry a NUL
        assert main(["notes", "tags", "--db", str(db), "--add", name]) == 2
        assert "invalid tag name" in one_line(capsys.readouterr().err)
    assert records(db) == before


def test_tags_listing_escapes_what_an_older_version_stored(db, capsys):
    with sqlite3.connect(db) as conn:  # as a file written before names were checked
        conn.execute(
            "INSERT INTO tags (name, description, position, created_at) VALUES (?, ?, 99, '')",
            ("red\x1b[31m\u202e", "bell\x07\ttab"),
        )
    assert main(["notes", "tags", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "red\\x1b[31m\\u202e\t0\tbell\\x07\\ttab"
    assert not any(c in out for c in "\x1b\x07\u202e")


def test_api_reads_open_files_with_the_same_guards(db, tmp_path):
    with NotesStore(db) as store, (tmp_path / "x.json").open("w+b") as handle:
        handle.write(b"\xef\xbb\xbf" + json.dumps([GOOD]).encode())
        handle.seek(0)
        assert store.import_(handle).added == 1
    with NotesStore(db) as store, pytest.raises(InputError, match="not UTF-8"):
        store.import_(_written(tmp_path, "y.json", b'[{"note": "\xff"}]'))


def _seeds() -> list[bytes]:
    entry = {**GOOD, "tags": ["OCR noise"], "note": "=1", "author": None, "updated_at": None}
    return [
        f"{HEADER}\r\ndemo,1,paper,biology,q1,OCR noise; other,'=x,ana,,\r\n".encode(),
        b"\xef\xbb\xbf" + json.dumps({"format": "mmbright-notes", "queries": [entry]}).encode(),
    ]


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory: pytest.TempPathFactory):
    with NotesStore(tmp_path_factory.mktemp("fuzz") / "notes.sqlite3") as store:
        yield store


@settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=mutations(_seeds()), fmt=st.sampled_from(["csv", "json"]))
def test_mutated_exports_import_or_fail_with_an_input_error(
    fuzz_store, tmp_path_factory, data, fmt
):
    path = tmp_path_factory.mktemp("in") / f"notes.{fmt}"
    path.write_bytes(data)
    before = fuzz_store.records()
    try:
        fuzz_store.import_(path)
    except InputError:
        assert fuzz_store.records() == before


def _stored(db: Path) -> tuple[str, tuple[str, ...]]:
    with NotesStore(db) as store:
        return store.get(K1).note, store.get(K1).tags


@pytest.mark.parametrize(
    ("header", "row", "problem"),
    [
        (HEADER + ",note", ROW + ",a second note", "column 'note' given twice"),
        (HEADER + ",notes", ROW + ",misspelt", "unknown column 'notes'"),
    ],
    ids=["repeated", "unknown"],
)
def test_a_csv_with_a_repeated_or_unknown_column_is_refused(
    db, tmp_path, capsys, header, row, problem
):
    path = tmp_path / "n.csv"
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    assert main(["notes", "import", str(path), "--db", str(db)]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"{path}:1: {problem}; expected a header with {HEADER.replace(',', ', ')}" in line
    assert _stored(db) == ("kept as it was", ())


def test_a_note_dated_in_the_future_is_refused_and_cannot_win_a_merge(db, tmp_path, capsys):
    path = tmp_path / "n.csv"
    path.write_text(f"{HEADER}\n{ROW[: ROW.rindex(',')]},2999-01-01T00:00:00Z\n")
    assert main(["notes", "import", str(path), "--db", str(db)]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"{path}:2: record 1: updated_at is in the future" in line
    assert "no later than now plus 5 minutes" in line and "'2999-01-01T00:00:00Z'" in line
    assert _stored(db) == ("kept as it was", ())


def test_replace_keeps_newer_notes_here_and_says_so_unless_forced(db, tmp_path, capsys):
    path = tmp_path / "old.csv"
    path.write_text(f"{HEADER}\n{ROW}\n")
    assert main(["notes", "import", str(path), "--db", str(db), "--mode", "replace"]) == 0
    captured = capsys.readouterr()
    assert "1 kept (newer here, not replaced)" in captured.out
    assert captured.err.startswith("mmbright notes: warning: 1 queries were changed here after")
    assert _stored(db) == ("kept as it was", ())
    assert main(["notes", "import", str(path), "--db", str(db), "--force"]) == 2
    assert "--force only goes with --mode replace" in one_line(capsys.readouterr().err)
    args = ["notes", "import", str(path), "--db", str(db), "--mode", "replace", "--force"]
    assert main(args) == 0
    assert _stored(db) == ("from the file", ("other",))


def _as_another_user() -> list[str]:
    """The prefix that runs a command as ``nobody`` when the tests run as root.

    Root reads and writes whatever the permissions say; ``nobody`` meets them.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("runs as root without setpriv to become another user")
    drop = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    probe = [*drop, sys.executable, "-c", "import mmbright_core"]
    if subprocess.run(probe, capture_output=True, timeout=120).returncode:
        pytest.skip("user nobody cannot read this checkout (it lies in a private folder)")
    return drop


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder ``nobody`` can reach (pytest's tmp_path is private to its user)."""
    folder = Path(tempfile.mkdtemp(prefix="mmbright-notes-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(folder)


def _notes(*args: str, user: list[str] | None = None, **options: object):  # type: ignore[no-untyped-def]
    """Run ``mmbright notes ARGS`` in its own process (as the user ``user`` gives)."""
    options.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(  # type: ignore[call-overload]
        [*(user or []), sys.executable, "-m", "mmbright_core", "notes", *args],
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
        cwd=tempfile.gettempdir(),
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        **options,
    )


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_export_and_tags_read_a_read_only_file_in_a_read_only_folder(shared_folder):
    folder = shared_folder / "ro"
    with NotesStore(folder / "notes.sqlite3") as store:
        store.set_note(K1, "read me", author="ana")
    (folder / "notes.sqlite3").chmod(0o444)
    folder.chmod(0o555)
    before = sorted(p.name for p in folder.iterdir())
    db = str(folder / "notes.sqlite3")
    exported = _notes("export", "--db", db, user=_as_another_user())
    assert exported.returncode == 0, exported.stderr
    assert ",read me,ana," in exported.stdout
    listed = _notes("tags", "--db", db, user=_as_another_user())
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("tag\tuses\tdescription\n")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_tags_listing_and_export_create_no_notes_file(tmp_path, capsys):
    db = tmp_path / "none" / "notes.sqlite3"
    assert main(["notes", "tags", "--db", str(db)]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("image irrelevant to the need\t0")
    assert main(["notes", "export", "--db", str(db), "--format", "json"]) == 0
    assert '"queries": []' in capsys.readouterr().out
    assert not db.parent.exists()


def test_export_to_a_terminal_shows_control_and_bidi_characters_escaped(db):
    with NotesStore(db) as store:
        store.set_note(K1, "clear\x1b[2J screen \u202eesrever\nsecond line", author="a\x07")
    leader, follower = pty.openpty()
    try:
        done = _notes("export", "--db", str(db), stdout=follower)
        os.close(follower)
        shown = b""
        while chunk := _read(leader):
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    text = shown.decode("utf-8")
    assert "clear\\x1b[2J screen \\u202eesrever" in text and ",a\\x07," in text
    assert not any(c in text for c in "\x1b\x07\u202e")
    assert "second line" in text  # a line break in a note stays one
    piped = _notes("export", "--db", str(db))  # a pipe gets the export exactly
    assert "clear\x1b[2J screen \u202eesrever\nsecond line" in piped.stdout


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal's other end closed
        return b""

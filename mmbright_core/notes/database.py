"""The notes file: where it lives, how it is opened, its schema, its transactions, its faults.

One SQLite file in WAL mode, so that readers (every dashboard session) never wait for the
one writer; ``busy_timeout`` makes a writer wait for another instead of failing at once.
Every write is one ``BEGIN IMMEDIATE`` transaction: it takes the write lock before reading,
so two writers never both read and then collide on upgrading their locks, and a failure
rolls everything back.

SQLite's faults on the file: a busy or locked file is retried (:func:`retry`) until the
store's timeout; every other SQLite error leaves this module as a
:class:`~mmbright_core.errors.NotesError` (:func:`translate`) that names the file, says
nothing was changed, and keeps the text a failed write would have stored.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mmbright_core.errors import NotesError
from mmbright_core.notes.records import utc_now

#: Environment variable naming the notes file (an explicit path wins over it).
NOTES_ENV = "MMBRIGHT_NOTES"
#: How long a write waits for another writer before giving up, in seconds.
DEFAULT_TIMEOUT = 10.0
#: The schema this code reads and writes, kept in ``PRAGMA user_version``.
SCHEMA_VERSION = 2

DEFAULT_TAGS: tuple[tuple[str, str], ...] = (
    ("image irrelevant to the need", "the query's image adds nothing to what is asked"),
    ("image essential but misread", "the answer depends on the image and the model missed it"),
    ("OCR noise", "text read from the image is wrong or garbled"),
    ("visually similar wrong document", "a retrieved item looks alike but answers otherwise"),
    ("judgment looks wrong", "the relevance labels themselves seem mistaken"),
    ("other", "none of the above; say why in the note"),
)

_KEY = "source TEXT NOT NULL, task INTEGER NOT NULL, protocol TEXT NOT NULL, "
_KEY += "domain TEXT NOT NULL, query_id TEXT NOT NULL"
_KEY_COLUMNS = "source, task, protocol, domain, query_id"

_SCHEMA_1 = f"""
CREATE TABLE tags (
    name TEXT PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    position INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE query_notes (
    {_KEY},
    note TEXT NOT NULL DEFAULT '',
    author TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY ({_KEY_COLUMNS})
);
CREATE TABLE query_tags (
    {_KEY},
    tag TEXT NOT NULL REFERENCES tags(name) ON UPDATE CASCADE ON DELETE RESTRICT,
    author TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY ({_KEY_COLUMNS}, tag),
    FOREIGN KEY ({_KEY_COLUMNS}) REFERENCES query_notes ({_KEY_COLUMNS}) ON DELETE CASCADE
);
CREATE INDEX query_tags_by_tag ON query_tags (tag);
"""

# Schema 2: every query's row carries a version that every change of its note or its
# labels raises, whichever code makes it (triggers), so that a save can be made
# conditional on the version its draft was loaded from. An older file is upgraded in
# place: its rows start at version 1.
_WHERE_NEW = " AND ".join(f"{c} = new.{c}" for c in _KEY_COLUMNS.split(", "))
_BUMP = "UPDATE query_notes SET version = version + 1 WHERE "
_SCHEMA_2 = (
    "ALTER TABLE query_notes ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
    "CREATE TRIGGER query_notes_version AFTER UPDATE ON query_notes "
    "WHEN new.version = old.version BEGIN "
    "UPDATE query_notes SET version = old.version + 1 WHERE rowid = new.rowid; END",
    f"CREATE TRIGGER query_tags_added AFTER INSERT ON query_tags BEGIN {_BUMP}{_WHERE_NEW}; END",
    f"CREATE TRIGGER query_tags_changed AFTER UPDATE ON query_tags BEGIN {_BUMP}{_WHERE_NEW}; END",
    f"CREATE TRIGGER query_tags_removed AFTER DELETE ON query_tags BEGIN "
    f"{_BUMP}{_WHERE_NEW.replace('new.', 'old.')}; END",
)

T = TypeVar("T")


def default_path(override: str | os.PathLike[str] | None = None) -> Path:
    r"""Return the notes file: ``override``, else ``$MMBRIGHT_NOTES``, else the data folder's.

    The data folder is ``$XDG_DATA_HOME/mmbright`` (else ``~/.local/share/mmbright``), on
    macOS ``~/Library/Application Support/mmbright``, on Windows ``%APPDATA%\mmbright``.
    """
    if override is not None:
        return Path(override).expanduser()
    env = os.environ.get(NOTES_ENV)
    if env:
        return Path(env).expanduser()
    return data_dir() / "notes.sqlite3"


def data_dir() -> Path:
    """Return this user's data folder for mmbright (not created)."""
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        root = Path(appdata) if appdata else Path.home() / "AppData" / "Roaming"
    elif sys.platform == "darwin":
        root = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        # The XDG spec ignores a relative value.
        root = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return root / "mmbright"


def connect(path: Path, timeout: float, *, read_only: bool = False) -> sqlite3.Connection:
    """Open (creating it and its folders if needed) the notes file at ``path``.

    The header is read before anything is written, so a file that is not a database is
    reported and left byte for byte as it was.

    Args:
        path: The notes file.
        timeout: Seconds to wait for another writer.
        read_only: Only read: a missing file is not created (an empty notes database in
            memory stands for it: the default taxonomy, no notes), and a file of this
            schema is opened read-only, so a read-only file or folder can be read. A file
            of an older schema is opened for writing all the same, to be upgraded.

    Raises:
        NotesError: The folder cannot be made, the file is not a notes database, was made
            by a newer version, is read-only, or stays locked past ``timeout``.
    """
    if read_only and not path.exists():
        return _open(":memory:", path, timeout)
    if read_only:
        conn = _open_read_only(path, timeout)
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return conn
        conn.close()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise unwritable(path, err.strerror or str(err)) from err
    return _open(str(path), path, timeout)


def _open_read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """Open an existing notes file for reading only.

    SQLite reads a WAL file through a ``-shm`` index beside it, which it cannot create in a
    read-only folder. When there is no write-ahead log to read (none, or an empty one: every
    write is in the file itself), the file is read as it is (``immutable``).
    """
    uri = path.absolute().as_uri() + "?mode=ro"
    try:
        return _open(uri, path, timeout, write=False)
    except NotesError:
        log = path.with_name(path.name + "-wal")
        if log.exists() and log.stat().st_size > 0:
            raise
    return _open(uri + "&immutable=1", path, timeout, write=False)


def _open(target: str, path: Path, timeout: float, *, write: bool = True) -> sqlite3.Connection:
    """Connect to ``target`` (a path, a ``file:`` URI or ``:memory:``) and check its schema.

    With ``write``, the file is put in WAL mode and its schema brought up to date.
    """
    try:
        conn = sqlite3.connect(
            target,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=target.startswith("file:"),
        )
    except sqlite3.Error as err:
        raise translate(err, path, timeout) from err
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        _check_foreign(conn, path)
        if write:
            retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), timeout)
            run(conn, path, timeout, _migrate)
    except BaseException as err:
        conn.close()
        if isinstance(err, sqlite3.Error):
            raise translate(err, path, timeout) from err
        raise
    return conn


def _check_foreign(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a database of another program or of a newer schema, before writing to it.

    The version and the tables are read in one statement, so from one snapshot: read apart,
    another process creating the schema between the two reads makes a new notes file look
    like another program's (no version yet, then tables).
    """
    rows = conn.execute(
        "SELECT (SELECT user_version FROM pragma_user_version), name FROM "
        "(SELECT NULL AS name UNION ALL SELECT name FROM sqlite_master)"
    ).fetchall()
    version = rows[0][0]
    if version > SCHEMA_VERSION:
        raise NotesError(
            "the notes file was made by a newer version of mmbright",
            source=str(path),
            expected=f"schema version {SCHEMA_VERSION} or older",
            found=f"version {version}",
            hint="Upgrade mmbright, or choose another file with --db or MMBRIGHT_NOTES",
        )
    tables = {name for _, name in rows if name is not None}
    if version == 0 and tables:
        raise NotesError(
            "the file is an SQLite database, but not a notes file",
            source=str(path),
            expected="an empty file or a notes database",
            found=f"tables {', '.join(sorted(tables)[:5])}",
            hint="Choose another file with --db or MMBRIGHT_NOTES; this one was left as it is",
        )


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`, one step at a time, in one transaction."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    steps: dict[int, Callable[[sqlite3.Connection], None]] = {0: _create_1, 1: _add_versions}
    while version < SCHEMA_VERSION:
        steps[version](conn)
        version += 1
        conn.execute(f"PRAGMA user_version = {version}")


def _create_1(conn: sqlite3.Connection) -> None:
    # executescript would commit the open transaction; run the statements one by one.
    for statement in _SCHEMA_1.split(";"):
        if statement.strip():
            conn.execute(statement)
    now = utc_now()
    conn.executemany(
        "INSERT INTO tags (name, description, position, created_at) VALUES (?, ?, ?, ?)",
        [(name, text, i, now) for i, (name, text) in enumerate(DEFAULT_TAGS)],
    )


def _add_versions(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_2:
        conn.execute(statement)


def run(
    conn: sqlite3.Connection,
    path: Path,
    timeout: float,
    body: Callable[[sqlite3.Connection], T],
    *,
    write: bool = True,
    unsaved: str | None = None,
) -> T:
    """Run ``body`` in one transaction, retried while the file is busy, up to ``timeout``.

    Args:
        conn: The connection (autocommit mode: transactions are opened here).
        path: The file, for messages.
        timeout: Seconds to keep retrying a busy file.
        body: The work; it may be run again from scratch after a rollback.
        write: Take the write lock at once (``BEGIN IMMEDIATE``) rather than a read snapshot.
        unsaved: The text a failed write would have stored, carried by the error.

    Raises:
        NotesError: The file stayed locked, is corrupt or read-only; nothing was changed.
    """

    def attempt() -> T:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = body(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    try:
        return retry(attempt, timeout)
    except sqlite3.Error as err:
        raise translate(err, path, timeout, unsaved) from err
    except NotesError as err:
        if unsaved is not None and err.unsaved is None:
            err.unsaved = unsaved
        raise


# SQLite's primary result codes (the low byte of an extended code).
_BUSY, _LOCKED, _READONLY, _CANTOPEN = 5, 6, 8, 14
_PERM, _IOERR, _CORRUPT, _FULL, _NOTADB = 3, 10, 11, 13, 26


def retry(action: Callable[[], T], timeout: float) -> T:
    """Call ``action`` again while SQLite answers busy or locked, until ``timeout`` passes.

    SQLite's own busy handler already waits on most lock conflicts; this loop covers the
    cases that answer busy at once (a WAL file being recovered, a schema lock).
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as err:
            if _code(err) not in (_BUSY, _LOCKED) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _code(err: sqlite3.Error) -> int | None:
    code = getattr(err, "sqlite_errorcode", None)  # Python 3.11 and later
    if code is not None:
        return int(code) & 0xFF
    text = str(err).lower()
    for words, value in (
        (("locked", "busy"), _BUSY),
        (("not a database", "malformed", "corrupt"), _CORRUPT),
        (("readonly", "read-only"), _READONLY),
        (("unable to open",), _CANTOPEN),
    ):
        if any(word in text for word in words):
            return value
    return None


def translate(
    err: sqlite3.Error, path: Path, timeout: float, unsaved: str | None = None
) -> NotesError:
    """Turn an SQLite error into a :class:`NotesError` that says what to do about it."""
    code = _code(err)
    kept = _kept(unsaved)
    if code in (_BUSY, _LOCKED):
        return NotesError(
            "the notes file is locked by another writer",
            source=str(path),
            expected=f"the write lock within {timeout:g} s",
            found=f"still locked ({err})",
            hint="Close the other program writing it (an import, another dashboard "
            f"tab saving) and try again; nothing was changed.{kept}",
            unsaved=unsaved,
        )
    if code in (_CORRUPT, _NOTADB):
        return NotesError(
            "the notes file is not a readable SQLite database",
            source=str(path),
            expected="a notes database made by mmbright",
            found=str(err),
            hint="The file was left as it is: move it aside or restore a backup, or choose "
            f"another file with --db or MMBRIGHT_NOTES.{kept}",
            unsaved=unsaved,
        )
    if code in (_READONLY, _CANTOPEN, _PERM, _IOERR, _FULL):
        return unwritable(path, str(err), unsaved)
    return NotesError(
        "the notes database failed",
        source=str(path),
        found=str(err),
        hint=f"Nothing was changed.{kept}" if kept else None,
        unsaved=unsaved,
    )


def unwritable(path: Path, found: str, unsaved: str | None = None) -> NotesError:
    """The error for a notes file this user cannot create or write."""
    kept = _kept(unsaved)
    return NotesError(
        "cannot write the notes file",
        source=str(path),
        expected="a file in a folder this user can create and write",
        found=found,
        hint="Make the folder writable, or choose another file with --db or "
        f"MMBRIGHT_NOTES (SQLite also writes -wal and -shm files beside it).{kept}",
        unsaved=unsaved,
    )


def _kept(unsaved: str | None) -> str:
    """The sentence that tells a user their text survived the failed write, if there was one."""
    return " Your unsaved text is kept in the error." if unsaved is not None else ""

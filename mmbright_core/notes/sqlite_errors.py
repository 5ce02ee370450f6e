"""SQLite's faults on the notes file: which to wait out, and what each means to a user.

A busy or locked file is retried (:func:`retry`) until the store's timeout; every other
SQLite error becomes a :class:`~mmbright_core.errors.NotesError` (:func:`translate`) that
names the file, says nothing was changed, and keeps the text a failed write would have
stored.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mmbright_core.errors import NotesError

T = TypeVar("T")

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

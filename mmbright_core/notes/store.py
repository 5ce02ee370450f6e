"""``NotesStore``: failure tags and free notes on queries, kept in one SQLite file.

Several dashboard sessions and command lines may hold stores on the same file at once:
every read sees every committed write, and writes queue behind one another (see
:mod:`mmbright_core.notes.database`). A write that fails changes nothing and raises a
:class:`~mmbright_core.errors.NotesError` carrying the text it would have stored.

Each method opens one transaction; what it does to the tables is written in
:mod:`~mmbright_core.notes.tables` (the tags, a query's note and labels, an import).

:func:`scope_tags` reads the failure tags of one task view without ever creating the notes
file: the comparison, its slices and the report take tags as data
(``(domain, query_id) -> tags``); this is where the command line and the dashboard read
them from the notes store. A reader without notes gets none, and no empty database is left
behind.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Literal, TypeVar

from mmbright_core.errors import NotesError, show
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.notes import records, tables
from mmbright_core.notes.database import DEFAULT_TIMEOUT, connect, default_path, run
from mmbright_core.notes.records import (
    TAG_SEPARATOR,
    Conflict,
    ImportReport,
    Parsed,
    QueryNotes,
    Tag,
)
from mmbright_core.notes.tables import KeyLike, Mode

T = TypeVar("T")
Format = Literal["csv", "json"]

_FILTERS = ("source", "task", "protocol", "domain")


class NotesStore:
    """Failure tags (from an editable taxonomy) and notes per query, in one SQLite file.

    Args:
        path: The file; default ``$MMBRIGHT_NOTES``, else ``notes.sqlite3`` in the user's
            data folder (see :func:`~mmbright_core.notes.database.default_path`). It and its
            folders are created on first use.
        timeout: Seconds a write waits for another writer before raising.
        read_only: Only read (an export, a listing): a missing file is not created (the
            store holds the default taxonomy and no notes), and a read-only file or folder
            can be read. Writes raise.

    Raises:
        NotesError: The file cannot be created, is not a notes database, or stays locked.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        read_only: bool = False,
    ) -> None:
        self.path: Path = default_path(path)
        self.timeout = timeout
        self.read_only = read_only
        self._lock = threading.RLock()  # one connection, shared by a dashboard's threads
        self._conn: sqlite3.Connection | None = connect(self.path, timeout, read_only=read_only)

    def close(self) -> None:
        """Close the file; the store cannot be used afterwards."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> NotesStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(
        self, body: Callable[[sqlite3.Connection], T], *, write: bool, unsaved: str | None = None
    ) -> T:
        with self._lock:
            if self._conn is None or (write and self.read_only):
                closed = "closed" if self._conn is None else "opened for reading only"
                raise NotesError(
                    f"the notes store is {closed}", source=str(self.path), unsaved=unsaved
                )
            return run(self._conn, self.path, self.timeout, body, write=write, unsaved=unsaved)

    # The taxonomy.

    def tags(self) -> list[Tag]:
        """Return the taxonomy in its order, each tag with the number of queries using it."""
        return self._run(tables.tags, write=False)

    def add_tag(self, name: str, description: str = "") -> Tag:
        """Append a tag to the taxonomy.

        Raises:
            NotesError: The name is empty, holds ``;`` or a line break, or is taken.
        """
        name = tables.checked_name(name)
        return self._run(lambda conn: tables.add(conn, name, description), write=True)

    def rename_tag(self, old: str, new: str) -> Tag:
        """Rename a tag; every query labelled ``old`` is labelled ``new`` afterwards.

        Raises:
            NotesError: ``old`` is unknown, or ``new`` is invalid or already taken.
        """
        new = tables.checked_name(new)
        return self._run(lambda conn: tables.rename(conn, old, new), write=True)

    def remove_tag(self, name: str, force: bool = False) -> int:
        """Remove a tag from the taxonomy and return how many labels went with it.

        Raises:
            NotesError: The tag is unknown, or still labels queries and ``force`` is false.
        """
        return self._run(lambda conn: tables.remove(conn, name, force), write=True)

    # Notes and labels of queries.

    def get(self, key: KeyLike) -> QueryNotes:
        """Return a query's tags and note (empty ones if it has none)."""
        qkey = tables.query_key(key)
        return self._run(lambda conn: tables.get(conn, qkey), write=False)

    def set_note(self, key: KeyLike, text: str, author: str | None = None) -> QueryNotes:
        """Store ``text`` as the query's note (an empty text clears it) and return the notes.

        Raises:
            NotesError: The write failed; ``error.unsaved`` holds ``text``.
        """
        qkey = tables.query_key(key, unsaved=text)
        return self._run(
            lambda conn: tables.set_note(conn, qkey, text, author), write=True, unsaved=text
        )

    def save(
        self,
        key: KeyLike,
        note: str,
        tags: Iterable[str],
        author: str | None = None,
        *,
        based_on: int,
    ) -> QueryNotes | Conflict:
        """Store a query's note and whole set of tags, unless someone saved it meanwhile.

        The write is conditional, in one transaction: it happens only if the query's row
        is still at version ``based_on`` (``QueryNotes.version`` of the notes the draft was
        loaded from; 0 for a query that had none). Otherwise nothing is written and a
        :class:`Conflict` carries the stored notes; saving again based on their version
        overwrites them.

        Raises:
            NotesError: A tag is not in the taxonomy or the write failed; nothing changed,
                and ``error.unsaved`` holds ``note``.
        """
        wanted = list(dict.fromkeys(tags))
        qkey = tables.query_key(key, unsaved=note)
        return self._run(
            lambda conn: tables.save(conn, qkey, note, wanted, author, based_on),
            write=True,
            unsaved=note,
        )

    def set_tags(self, key: KeyLike, tags: Iterable[str], author: str | None = None) -> QueryNotes:
        """Make ``tags`` the query's whole set of tags, in one transaction.

        Raises:
            NotesError: A tag is not in the taxonomy or the write failed; nothing changed.
        """
        wanted = list(dict.fromkeys(tags))
        unsaved = TAG_SEPARATOR.join(wanted)
        qkey = tables.query_key(key, unsaved=unsaved)
        return self._run(
            lambda conn: tables.set_tags(conn, qkey, wanted, author), write=True, unsaved=unsaved
        )

    def add_tag_to(self, key: KeyLike, tag: str, author: str | None = None) -> QueryNotes:
        """Add one tag to a query's set (nothing happens if it is there already).

        Raises:
            NotesError: The tag is not in the taxonomy or the write failed.
        """
        qkey = tables.query_key(key, unsaved=tag)
        return self._run(
            lambda conn: tables.add_tag_to(conn, qkey, tag, author), write=True, unsaved=tag
        )

    def for_scope(
        self, source: str, task: int, protocol: str, domain: str | None = None
    ) -> dict[tuple[str, str], QueryNotes]:
        """Return the annotated queries of one task view, keyed by ``(domain, query_id)``."""
        found = self.records(source=source, task=task, protocol=protocol, domain=domain)
        return {(n.key.domain, n.key.query_id): n for n in found}

    def records(
        self,
        *,
        source: str | None = None,
        task: int | None = None,
        protocol: str | None = None,
        domain: str | Sequence[str] | None = None,
    ) -> list[QueryNotes]:
        """Return every annotated query matching the filters given, in key order.

        ``domain`` may name several domains.
        """
        values = {"source": source, "task": task, "protocol": protocol, "domain": domain}
        where = {name: value for name, value in values.items() if value is not None}
        return self._run(lambda conn: tables.select(conn, where), write=False)

    # Exchange with files.

    def export(
        self,
        format: Format = "csv",
        file: str | os.PathLike[str] | IO[str] | None = None,
        **filters: str | int | Sequence[str] | None,
    ) -> str:
        """Write the taxonomy and annotated queries as CSV or JSON, and return the text.

        Args:
            format: ``"csv"`` (a row per query, tags joined by ``"; "``) or ``"json"`` (the
                taxonomy with descriptions, then the queries).
            file: A path or an open text file to write to; ``None`` only returns the text.
            **filters: ``source``, ``task``, ``protocol``, ``domain`` (one or several) to
                export a part.

        Raises:
            NotesError: A filter is not one of the above.
            WriteError: ``file`` is a path that cannot be written (naming it).
        """
        unknown = sorted(set(filters) - set(_FILTERS))
        if unknown:
            raise NotesError(
                "unknown export filter",
                expected=f"filters among {', '.join(_FILTERS)}",
                found=", ".join(map(show, unknown)),
            )
        selected = self.records(**filters)  # type: ignore[arg-type]
        text = records.render(format, self.tags(), selected)
        if isinstance(file, (str, os.PathLike)):
            # Atomic: an export that fails midway leaves the previous file as it was.
            atomic_write_text(file, text)
        elif file is not None:
            file.write(text)
        return text

    def import_(
        self,
        file: str | os.PathLike[str] | IO[str] | IO[bytes],
        format: Format | None = None,
        mode: Mode = "merge",
        *,
        force: bool = False,
    ) -> ImportReport:
        """Read an export back, in one transaction, and say what it did.

        ``merge`` keeps whichever note was updated last and unions the tags; ``replace``
        sets each query in the file to exactly the file's note and tags (queries absent
        from the file stay as they are), except those changed here after the file's
        version of them: they are kept and counted as conflicts, unless ``force``
        overwrites them too (counted as overwritten newer notes).
        Tags the taxonomy lacks are added to it. The file is read and checked whole first
        (:func:`~mmbright_core.notes.records.read`): a fault anywhere stores nothing.

        Raises:
            InputError: The file cannot be read or is malformed (naming the file and the
                record); nothing changed.
        """
        tables.check_mode(mode)
        return self.import_parsed(records.read(file, format), mode, force=force)

    def import_parsed(
        self, parsed: Parsed, mode: Mode = "merge", *, force: bool = False
    ) -> ImportReport:
        """Store what :func:`~mmbright_core.notes.records.read` read, as :meth:`import_` does."""
        tables.check_mode(mode)
        return self._run(lambda conn: tables.apply(conn, parsed, mode, force), write=True)


def scope_tags(
    source: str, task: int, protocol: str
) -> tuple[Path | None, dict[tuple[str, str], list[str]]]:
    """The failure tags of a task's queries, read from the notes file when it exists.

    The file is the notes store's (``MMBRIGHT_NOTES``, else the data folder's); it is never
    created here, so a reader without notes gets ``(None, {})``.

    Args:
        source: The data source as the notes key it (``"demo"``, ``"hf@<revision>"``...).
        task: The task number.
        protocol: The judgment protocol.

    Returns:
        The file read (None when there is none) and (domain, query_id) -> tags.
    """
    path = default_path()
    if not path.is_file():
        return None, {}
    with NotesStore(path) as store:
        found = store.for_scope(source, task, protocol)
    return path, {key: list(notes.tags) for key, notes in found.items()}

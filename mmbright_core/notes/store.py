"""``NotesStore``: failure tags and free notes on queries, kept in one SQLite file.

Several dashboard sessions and command lines may hold stores on the same file at once:
every read sees every committed write, and writes queue behind one another (see
:mod:`mmbright_core.notes.database`). A write that fails changes nothing and raises a
:class:`~mmbright_core.errors.NotesError` carrying the text it would have stored.
"""

from __future__ import annotations

import difflib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Literal, TypeVar

from mmbright_core.errors import NotesError, show
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.notes import exchange
from mmbright_core.notes.database import DEFAULT_TIMEOUT, connect, default_path, run
from mmbright_core.notes.records import (
    TAG_SEPARATOR,
    ImportReport,
    QueryKey,
    QueryNotes,
    Tag,
    tag_name_problem,
    utc_now,
)

T = TypeVar("T")
Format = Literal["csv", "json"]
Mode = Literal["merge", "replace"]

_WHERE_KEY = "source = ? AND task = ? AND protocol = ? AND domain = ? AND query_id = ?"
_FILTERS = ("source", "task", "protocol", "domain")
_UPSERT = (
    "INSERT INTO query_notes (source, task, protocol, domain, query_id, note, author, "
    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (source, task, protocol, domain, query_id) DO UPDATE SET "
)


class NotesStore:
    """Failure tags (from an editable taxonomy) and notes per query, in one SQLite file.

    Args:
        path: The file; default ``$MMBRIGHT_NOTES``, else ``notes.sqlite3`` in the user's
            data folder (see :func:`~mmbright_core.notes.database.default_path`). It and its
            folders are created on first use.
        timeout: Seconds a write waits for another writer before raising.

    Raises:
        NotesError: The file cannot be created, is not a notes database, or stays locked.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.path: Path = default_path(path)
        self.timeout = timeout
        self._lock = threading.RLock()  # one connection, shared by a dashboard's threads
        self._conn: sqlite3.Connection | None = connect(self.path, timeout)

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
            if self._conn is None:
                raise NotesError(
                    "the notes store is closed", source=str(self.path), unsaved=unsaved
                )
            return run(self._conn, self.path, self.timeout, body, write=write, unsaved=unsaved)

    # The taxonomy.

    def tags(self) -> list[Tag]:
        """Return the taxonomy in its order, each tag with the number of queries using it."""
        return self._run(_tags, write=False)

    def add_tag(self, name: str, description: str = "") -> Tag:
        """Append a tag to the taxonomy.

        Raises:
            NotesError: The name is empty, holds ``;`` or a line break, or is taken.
        """
        name = _tag_name(name)

        def body(conn: sqlite3.Connection) -> Tag:
            if _tag_exists(conn, name):
                raise NotesError(
                    f"tag {name!r} is already in the taxonomy",
                    expected="a new name",
                    hint="Rename the existing tag instead",
                )
            _insert_tag(conn, name, description)
            return _tag(conn, name)

        return self._run(body, write=True)

    def rename_tag(self, old: str, new: str) -> Tag:
        """Rename a tag; every query labelled ``old`` is labelled ``new`` afterwards.

        Raises:
            NotesError: ``old`` is unknown, or ``new`` is invalid or already taken.
        """
        new = _tag_name(new)

        def body(conn: sqlite3.Connection) -> Tag:
            _require_tags(conn, [old])
            if new != old and _tag_exists(conn, new):
                raise NotesError(
                    f"cannot rename {old!r} to {new!r}: that tag exists",
                    expected="a name not in the taxonomy",
                    hint="Remove one of the two first (with force to drop its labels)",
                )
            conn.execute("UPDATE tags SET name = ? WHERE name = ?", (new, old))  # cascades
            return _tag(conn, new)

        return self._run(body, write=True)

    def remove_tag(self, name: str, force: bool = False) -> int:
        """Remove a tag from the taxonomy and return how many labels went with it.

        Raises:
            NotesError: The tag is unknown, or still labels queries and ``force`` is false.
        """

        def body(conn: sqlite3.Connection) -> int:
            _require_tags(conn, [name])
            uses = _count(conn, "SELECT count(*) FROM query_tags WHERE tag = ?", (name,))
            if uses and not force:
                raise NotesError(
                    f"tag {name!r} is still in use",
                    expected="a tag no query carries",
                    found=f"{uses} labelled quer{'y' if uses == 1 else 'ies'}",
                    hint="Rename it instead, or remove it with force (--force) to drop "
                    "its labels too",
                )
            conn.execute("DELETE FROM query_tags WHERE tag = ?", (name,))
            conn.execute("DELETE FROM tags WHERE name = ?", (name,))
            return uses

        return self._run(body, write=True)

    # Notes and labels of queries.

    def get(self, key: QueryKey | tuple[str, int, str, str, str]) -> QueryNotes:
        """Return a query's tags and note (empty ones if it has none)."""
        qkey = _key(key)
        return self._run(lambda conn: _get(conn, qkey), write=False)

    def set_note(
        self, key: QueryKey | tuple[str, int, str, str, str], text: str, author: str | None = None
    ) -> QueryNotes:
        """Store ``text`` as the query's note (an empty text clears it) and return the notes.

        Raises:
            NotesError: The write failed; ``error.unsaved`` holds ``text``.
        """
        qkey = _key(key, unsaved=text)

        def body(conn: sqlite3.Connection) -> QueryNotes:
            now = utc_now()
            conn.execute(
                _UPSERT + "note = excluded.note, updated_at = excluded.updated_at, "
                "author = coalesce(excluded.author, author)",
                (*qkey, text, author, now, now),
            )
            return _get(conn, qkey)

        return self._run(body, write=True, unsaved=text)

    def set_tags(
        self,
        key: QueryKey | tuple[str, int, str, str, str],
        tags: Iterable[str],
        author: str | None = None,
    ) -> QueryNotes:
        """Make ``tags`` the query's whole set of tags, in one transaction.

        Raises:
            NotesError: A tag is not in the taxonomy or the write failed; nothing changed.
        """
        wanted = list(dict.fromkeys(tags))
        unsaved = TAG_SEPARATOR.join(wanted)
        qkey = _key(key, unsaved=unsaved)

        def body(conn: sqlite3.Connection) -> QueryNotes:
            _require_tags(conn, wanted)
            have = set(_get(conn, qkey).tags)
            if have != set(wanted):
                now = _touch(conn, qkey, author)
                gone = [(*qkey, tag) for tag in have - set(wanted)]
                conn.executemany(f"DELETE FROM query_tags WHERE {_WHERE_KEY} AND tag = ?", gone)
                _label(conn, qkey, [t for t in wanted if t not in have], author, now)
            return _get(conn, qkey)

        return self._run(body, write=True, unsaved=unsaved)

    def add_tag_to(
        self, key: QueryKey | tuple[str, int, str, str, str], tag: str, author: str | None = None
    ) -> QueryNotes:
        """Add one tag to a query's set (nothing happens if it is there already).

        Raises:
            NotesError: The tag is not in the taxonomy or the write failed.
        """
        qkey = _key(key, unsaved=tag)

        def body(conn: sqlite3.Connection) -> QueryNotes:
            _require_tags(conn, [tag])
            if tag not in _get(conn, qkey).tags:
                _label(conn, qkey, [tag], author, _touch(conn, qkey, author))
            return _get(conn, qkey)

        return self._run(body, write=True, unsaved=tag)

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
        return self._run(lambda conn: _select(conn, where), write=False)

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
        text = exchange.render(format, self.tags(), selected)
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
    ) -> ImportReport:
        """Read an export back, in one transaction, and say what it did.

        ``merge`` keeps whichever note was updated last and unions the tags; ``replace``
        sets each query in the file to exactly the file's note and tags (queries absent
        from the file stay as they are) and counts those whose note here was newer.
        Tags the taxonomy lacks are added to it. The file is read and checked whole first
        (:func:`~mmbright_core.notes.exchange.read`): a fault anywhere stores nothing.

        Raises:
            InputError: The file cannot be read or is malformed (naming the file and the
                record); nothing changed.
        """
        _check_mode(mode)
        return self.import_parsed(exchange.read(file, format), mode)

    def import_parsed(self, parsed: exchange.Parsed, mode: Mode = "merge") -> ImportReport:
        """Store what :func:`~mmbright_core.notes.exchange.read` read, as :meth:`import_` does."""
        _check_mode(mode)
        return self._run(lambda conn: _apply(conn, parsed, mode), write=True)


def _check_mode(mode: str) -> None:
    if mode not in ("merge", "replace"):
        raise NotesError("unknown import mode", expected="merge or replace", found=show(mode))


def _key(key: QueryKey | tuple[str, int, str, str, str], unsaved: str | None = None) -> QueryKey:
    try:
        source, task, protocol, domain, query_id = key
        qkey = QueryKey(str(source), int(task), str(protocol), str(domain), str(query_id))
    except (TypeError, ValueError) as err:
        raise NotesError(
            "malformed query key",
            expected="(source, task number, protocol, domain, query_id)",
            found=show(repr(key)),
            unsaved=unsaved,
        ) from err
    if not all((qkey.source, qkey.protocol, qkey.domain, qkey.query_id)):
        raise NotesError(
            "incomplete query key",
            expected="a non-empty source, protocol, domain and query_id",
            found=show(repr(tuple(qkey))),
            unsaved=unsaved,
        )
    return qkey


def _tag_name(name: str) -> str:
    problem = tag_name_problem(name)
    if problem:
        raise NotesError("invalid tag name", expected=problem, found=show(str(name)))
    return name


def _count(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def _tags(conn: sqlite3.Connection) -> list[Tag]:
    rows = conn.execute(
        "SELECT t.name, t.description, t.position, count(q.tag) FROM tags t "
        "LEFT JOIN query_tags q ON q.tag = t.name GROUP BY t.name ORDER BY t.position, t.name"
    )
    return [Tag(*row) for row in rows]


def _tag(conn: sqlite3.Connection, name: str) -> Tag:
    return next(tag for tag in _tags(conn) if tag.name == name)


def _tag_exists(conn: sqlite3.Connection, name: str) -> bool:
    return _count(conn, "SELECT count(*) FROM tags WHERE name = ?", (name,)) > 0


def _insert_tag(conn: sqlite3.Connection, name: str, description: str) -> None:
    position = _count(conn, "SELECT coalesce(max(position) + 1, 0) FROM tags", ())
    conn.execute(
        "INSERT INTO tags (name, description, position, created_at) VALUES (?, ?, ?, ?)",
        (name, description, position, utc_now()),
    )


def _require_tags(conn: sqlite3.Connection, names: Iterable[str]) -> None:
    known = [row[0] for row in conn.execute("SELECT name FROM tags ORDER BY position")]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=2, cutoff=0.5)
            raise NotesError(
                f"unknown tag {name!r}",
                expected=f"one of the {len(known)} tags of the taxonomy",
                found=show(name),
                hint=(f"Did you mean {' or '.join(map(repr, close))}? " if close else "")
                + "Add it first (mmbright notes tags --add NAME)",
            )


def _touch(conn: sqlite3.Connection, key: QueryKey, author: str | None) -> str:
    """Mark the query as changed now (creating its row) and return the time."""
    now = utc_now()
    conn.execute(
        _UPSERT + "updated_at = excluded.updated_at, author = coalesce(excluded.author, author)",
        (*key, "", author, now, now),
    )
    return now


def _label(
    conn: sqlite3.Connection, key: QueryKey, tags: Iterable[str], author: str | None, now: str
) -> int:
    before = conn.total_changes
    conn.executemany(
        "INSERT OR IGNORE INTO query_tags (source, task, protocol, domain, query_id, tag, "
        "author, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(*key, tag, author, now) for tag in tags],
    )
    return conn.total_changes - before


def _get(conn: sqlite3.Connection, key: QueryKey) -> QueryNotes:
    found = _select(conn, dict(zip(QueryKey._fields, key, strict=True)))
    return found[0] if found else QueryNotes(key)


def _select(conn: sqlite3.Connection, where: Mapping[str, object]) -> list[QueryNotes]:
    tests, params = [], []
    for name, value in where.items():
        several = list(value) if isinstance(value, (list, tuple)) else [value]
        tests.append(f"q.{name} IN ({', '.join('?' * len(several))})")
        params.extend(several)
    clause = " AND ".join(tests) or "1"
    labels: dict[tuple[object, ...], list[str]] = {}
    for *key, tag in conn.execute(
        "SELECT q.source, q.task, q.protocol, q.domain, q.query_id, q.tag FROM query_tags q "
        f"JOIN tags t ON t.name = q.tag WHERE {clause} ORDER BY t.position, t.name",
        params,
    ):
        labels.setdefault(tuple(key), []).append(tag)
    rows = conn.execute(
        "SELECT q.source, q.task, q.protocol, q.domain, q.query_id, q.note, q.author, "
        f"q.created_at, q.updated_at FROM query_notes q WHERE {clause} "
        "ORDER BY q.source, q.task, q.protocol, q.domain, q.query_id",
        params,
    )
    return [
        QueryNotes(QueryKey(*row[:5]), tuple(labels.get(tuple(row[:5]), ())), *row[5:])
        for row in rows
    ]


def _apply(conn: sqlite3.Connection, parsed: exchange.Parsed, mode: Mode) -> ImportReport:
    counts = dict.fromkeys(ImportReport.__dataclass_fields__, 0)
    now = utc_now()
    for name, description in parsed.tags:
        if not _tag_exists(conn, name):
            _insert_tag(conn, name, description)
            counts["tags_created"] += 1
    for incoming in parsed.records:
        for name in incoming.tags:
            if not _tag_exists(conn, name):
                _insert_tag(conn, name, "")
                counts["tags_created"] += 1
        here = _get(conn, incoming.key)
        outcome = _outcome(here, incoming, mode)
        counts[outcome] += 1
        counts["replaced"] += outcome == "overwrote_newer"
        stamp = incoming.updated_at or now
        if outcome in ("added", "updated", "replaced", "overwrote_newer"):
            created = min(filter(None, (here.created_at, incoming.created_at, stamp)))
            conn.execute(
                _UPSERT + "note = excluded.note, author = excluded.author, "
                "created_at = excluded.created_at, updated_at = excluded.updated_at",
                (*incoming.key, incoming.note, incoming.author, created, stamp),
            )
        if mode == "replace":
            gone = [(*incoming.key, tag) for tag in set(here.tags) - set(incoming.tags)]
            conn.executemany(f"DELETE FROM query_tags WHERE {_WHERE_KEY} AND tag = ?", gone)
        counts["labels_added"] += _label(conn, incoming.key, incoming.tags, incoming.author, stamp)
    return ImportReport(**counts)


def _outcome(here: QueryNotes, incoming: QueryNotes, mode: Mode) -> str:
    """Name what importing ``incoming`` does to ``here`` (an ImportReport field)."""
    if here.updated_at is None:
        return "added"
    newer_here = here.updated_at > (incoming.updated_at or "")
    same = (here.note, set(here.tags)) == (incoming.note, set(incoming.tags))
    if mode == "replace":
        return "unchanged" if same else "overwrote_newer" if newer_here else "replaced"
    if here.updated_at < (incoming.updated_at or ""):
        return "updated"
    return "kept_newer" if here.note != incoming.note else "unchanged"

"""A query's notes and labels: its key, its row, its tags, read and changed in a transaction.

Each function takes the connection of a transaction opened by
:func:`~mmbright_core.notes.database.run`; :class:`~mmbright_core.notes.store.NotesStore`
names the transaction and these say what it does to the ``query_notes`` and
``query_tags`` tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

from mmbright_core.errors import NotesError, show
from mmbright_core.notes import taxonomy
from mmbright_core.notes.records import Conflict, QueryKey, QueryNotes, utc_now

#: A query's key as a caller may give it: the record or a plain tuple of its fields.
KeyLike = QueryKey | tuple[str, int, str, str, str]

WHERE_KEY = "source = ? AND task = ? AND protocol = ? AND domain = ? AND query_id = ?"
UPSERT = (
    "INSERT INTO query_notes (source, task, protocol, domain, query_id, note, author, "
    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (source, task, protocol, domain, query_id) DO UPDATE SET "
)


def query_key(key: KeyLike, unsaved: str | None = None) -> QueryKey:
    """Return ``key`` as a :class:`QueryKey` with every text field filled.

    Raises:
        NotesError: The key is malformed or has an empty field; it carries ``unsaved``.
    """
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


def touch(conn: sqlite3.Connection, key: QueryKey, author: str | None) -> str:
    """Mark the query as changed now (creating its row) and return the time."""
    now = utc_now()
    conn.execute(
        UPSERT + "updated_at = excluded.updated_at, author = coalesce(excluded.author, author)",
        (*key, "", author, now, now),
    )
    return now


def label(
    conn: sqlite3.Connection, key: QueryKey, tags: Iterable[str], author: str | None, now: str
) -> int:
    """Give the query ``tags`` (those it has already stay as they are); return how many new."""
    # The cursor counts the rows inserted; total_changes would add the triggers' updates.
    return conn.executemany(
        "INSERT OR IGNORE INTO query_tags (source, task, protocol, domain, query_id, tag, "
        "author, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(*key, tag, author, now) for tag in tags],
    ).rowcount


def unlabel(conn: sqlite3.Connection, key: QueryKey, tags: Iterable[str]) -> None:
    """Take ``tags`` off the query."""
    gone = [(*key, tag) for tag in tags]
    conn.executemany(f"DELETE FROM query_tags WHERE {WHERE_KEY} AND tag = ?", gone)


def get(conn: sqlite3.Connection, key: QueryKey) -> QueryNotes:
    """Return the query's tags and note (empty ones if it has none)."""
    found = select(conn, dict(zip(QueryKey._fields, key, strict=True)))
    return found[0] if found else QueryNotes(key)


def select(conn: sqlite3.Connection, where: Mapping[str, object]) -> list[QueryNotes]:
    """Return the annotated queries whose key fields hold the values (or one of the lists)."""
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
        f"q.created_at, q.updated_at, q.version FROM query_notes q WHERE {clause} "
        "ORDER BY q.source, q.task, q.protocol, q.domain, q.query_id",
        params,
    )
    return [
        QueryNotes(QueryKey(*row[:5]), tuple(labels.get(tuple(row[:5]), ())), *row[5:])
        for row in rows
    ]


def set_note(conn: sqlite3.Connection, key: QueryKey, text: str, author: str | None) -> QueryNotes:
    """Store ``text`` as the query's note and return its notes."""
    now = utc_now()
    conn.execute(
        UPSERT + "note = excluded.note, updated_at = excluded.updated_at, "
        "author = coalesce(excluded.author, author)",
        (*key, text, author, now, now),
    )
    return get(conn, key)


def set_tags(
    conn: sqlite3.Connection, key: QueryKey, wanted: list[str], author: str | None
) -> QueryNotes:
    """Make ``wanted`` the query's whole set of tags and return its notes."""
    taxonomy.require(conn, wanted)
    have = set(get(conn, key).tags)
    if have != set(wanted):
        now = touch(conn, key, author)
        unlabel(conn, key, have - set(wanted))
        label(conn, key, [t for t in wanted if t not in have], author, now)
    return get(conn, key)


def save(
    conn: sqlite3.Connection,
    key: QueryKey,
    note: str,
    tags: list[str],
    author: str | None,
    based_on: int,
) -> QueryNotes | Conflict:
    """Store the note and the whole set of tags if the row is still at version ``based_on``.

    A row changed since (another session saved, an import) is left as it is and returned
    in a :class:`Conflict`, unless it already holds exactly this note and these tags.
    """
    here = get(conn, key)
    if here.version != based_on:
        return here if here.same_content(note, tags) else Conflict(here)
    set_tags(conn, key, tags, author)
    return set_note(conn, key, note, author)


def add_tag_to(conn: sqlite3.Connection, key: QueryKey, tag: str, author: str | None) -> QueryNotes:
    """Add one tag to the query's set (if it lacks it) and return its notes."""
    taxonomy.require(conn, [tag])
    if tag not in get(conn, key).tags:
        label(conn, key, [tag], author, touch(conn, key, author))
    return get(conn, key)

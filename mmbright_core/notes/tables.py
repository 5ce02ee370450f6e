"""What each transaction does to the tables: the taxonomy, a query's labels, an import.

Each function takes the connection of a transaction opened by
:func:`~mmbright_core.notes.database.run`; :class:`~mmbright_core.notes.store.NotesStore`
names the transaction and these say what it does to the tables.

- The taxonomy: the failure tags, in their order, in the ``tags`` table.
- A query's notes and labels: its key, its row, its tags, in the ``query_notes`` and
  ``query_tags`` tables.
- Importing an export: what ``merge`` and ``replace`` do to each query. ``merge`` keeps
  whichever note was updated last and unions the tags; ``replace`` sets each query in the
  file to exactly the file's note and tags, except a query changed here after the file's
  version of it (its ``updated_at`` here is later): that one is kept and counted as a
  conflict, unless ``force`` overwrites it. :func:`apply` runs inside the one transaction
  of :meth:`~mmbright_core.notes.store.NotesStore.import_parsed` and counts what it did in
  an :class:`~mmbright_core.notes.records.ImportReport`.
"""

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Literal

from mmbright_core.errors import NotesError, show
from mmbright_core.notes.records import (
    Conflict,
    ImportReport,
    Parsed,
    QueryKey,
    QueryNotes,
    Tag,
    tag_name_problem,
    utc_now,
)


def checked_name(name: str) -> str:
    """Return ``name`` if it can name a tag.

    Raises:
        NotesError: The name is empty or holds ``;`` or a line break.
    """
    problem = tag_name_problem(name)
    if problem:
        raise NotesError("invalid tag name", expected=problem, found=show(str(name)))
    return name


def count(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> int:
    """Return the single number the statement answers (a count, a position)."""
    return int(conn.execute(sql, params).fetchone()[0])


def tags(conn: sqlite3.Connection) -> list[Tag]:
    """Return the taxonomy in its order, each tag with the number of queries using it."""
    rows = conn.execute(
        "SELECT t.name, t.description, t.position, count(q.tag) FROM tags t "
        "LEFT JOIN query_tags q ON q.tag = t.name GROUP BY t.name ORDER BY t.position, t.name"
    )
    return [Tag(*row) for row in rows]


def tag(conn: sqlite3.Connection, name: str) -> Tag:
    """Return the tag called ``name`` (which exists)."""
    return next(found for found in tags(conn) if found.name == name)


def exists(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the taxonomy holds a tag called ``name``."""
    return count(conn, "SELECT count(*) FROM tags WHERE name = ?", (name,)) > 0


def insert(conn: sqlite3.Connection, name: str, description: str) -> None:
    """Append a tag at the end of the taxonomy."""
    position = count(conn, "SELECT coalesce(max(position) + 1, 0) FROM tags", ())
    conn.execute(
        "INSERT INTO tags (name, description, position, created_at) VALUES (?, ?, ?, ?)",
        (name, description, position, utc_now()),
    )


def require(conn: sqlite3.Connection, names: Iterable[str]) -> None:
    """Refuse, with the closest names, the first of ``names`` the taxonomy lacks."""
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


def add(conn: sqlite3.Connection, name: str, description: str) -> Tag:
    """Append a new tag and return it; a name already taken is refused."""
    if exists(conn, name):
        raise NotesError(
            f"tag {name!r} is already in the taxonomy",
            expected="a new name",
            hint="Rename the existing tag instead",
        )
    insert(conn, name, description)
    return tag(conn, name)


def rename(conn: sqlite3.Connection, old: str, new: str) -> Tag:
    """Rename a tag (its labels follow) and return it; an unknown or taken name is refused."""
    require(conn, [old])
    if new != old and exists(conn, new):
        raise NotesError(
            f"cannot rename {old!r} to {new!r}: that tag exists",
            expected="a name not in the taxonomy",
            hint="Remove one of the two first (with force to drop its labels)",
        )
    conn.execute("UPDATE tags SET name = ? WHERE name = ?", (new, old))  # cascades
    return tag(conn, new)


def remove(conn: sqlite3.Connection, name: str, force: bool) -> int:
    """Remove a tag and return how many labels went with it; one in use needs ``force``."""
    require(conn, [name])
    uses = count(conn, "SELECT count(*) FROM query_tags WHERE tag = ?", (name,))
    if uses and not force:
        raise NotesError(
            f"tag {name!r} is still in use",
            expected="a tag no query carries",
            found=f"{uses} labelled quer{'y' if uses == 1 else 'ies'}",
            hint="Rename it instead, or remove it with force (--force) to drop its labels too",
        )
    conn.execute("DELETE FROM query_tags WHERE tag = ?", (name,))
    conn.execute("DELETE FROM tags WHERE name = ?", (name,))
    return uses


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
    require(conn, wanted)
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
    require(conn, [tag])
    if tag not in get(conn, key).tags:
        label(conn, key, [tag], author, touch(conn, key, author))
    return get(conn, key)


Mode = Literal["merge", "replace"]
BOTH_KEPT = "\n\n--- both kept: the note saved meanwhile above, this one below ---\n\n"
"""Between two notes kept together after a conflicting save (:func:`keep_both`)."""


def keep_both(stored: QueryNotes, note: str, tags: list[str]) -> tuple[str, list[str]]:
    """The notes that keep a stored note and a draft saved against it: nothing of either lost.

    The texts are joined by :data:`BOTH_KEPT` (one alone when they are equal or one is
    empty), the tags are united (the stored ones first).
    """
    texts = [text for text in dict.fromkeys((stored.note, note)) if text]
    return BOTH_KEPT.join(texts), list(dict.fromkeys((*stored.tags, *tags)))


def check_mode(mode: str) -> None:
    """Refuse an import mode other than ``merge`` or ``replace``."""
    if mode not in ("merge", "replace"):
        raise NotesError("unknown import mode", expected="merge or replace", found=show(mode))


def apply(conn: sqlite3.Connection, parsed: Parsed, mode: Mode, force: bool) -> ImportReport:
    """Store what was read, adding the tags the taxonomy lacks, and count what changed."""
    counts = dict.fromkeys(ImportReport.__dataclass_fields__, 0)
    now = utc_now()
    for name, description in parsed.tags:
        counts["tags_created"] += _create_tag(conn, name, description)
    for incoming in parsed.records:
        for name in incoming.tags:
            counts["tags_created"] += _create_tag(conn, name, "")
        here = get(conn, incoming.key)
        outcome = _outcome(here, incoming, mode, force)
        counts[outcome] += 1
        if outcome == "conflicts":
            continue
        counts["replaced"] += outcome == "overwrote_newer"
        stamp = incoming.updated_at or now
        if outcome in ("added", "updated", "replaced", "overwrote_newer"):
            _store_note(conn, here, incoming, stamp)
        if mode == "replace":
            unlabel(conn, incoming.key, set(here.tags) - set(incoming.tags))
        counts["labels_added"] += label(conn, incoming.key, incoming.tags, incoming.author, stamp)
    return ImportReport(**counts)


def _create_tag(conn: sqlite3.Connection, name: str, description: str) -> int:
    """Append ``name`` to the taxonomy if it lacks it; return 1 if it did."""
    if exists(conn, name):
        return 0
    insert(conn, name, description)
    return 1


def _store_note(
    conn: sqlite3.Connection, here: QueryNotes, incoming: QueryNotes, stamp: str
) -> None:
    """Write the file's note, keeping the earliest creation time either side knew."""
    created = min(filter(None, (here.created_at, incoming.created_at, stamp)))
    conn.execute(
        UPSERT + "note = excluded.note, author = excluded.author, "
        "created_at = excluded.created_at, updated_at = excluded.updated_at",
        (*incoming.key, incoming.note, incoming.author, created, stamp),
    )


def _outcome(here: QueryNotes, incoming: QueryNotes, mode: Mode, force: bool) -> str:
    """Name what importing ``incoming`` does to ``here`` (an ImportReport field)."""
    if here.updated_at is None:
        return "added"
    newer_here = here.updated_at > (incoming.updated_at or "")
    if mode == "replace":
        if here.same_content(incoming.note, incoming.tags):
            return "unchanged"
        if newer_here:
            return "overwrote_newer" if force else "conflicts"
        return "replaced"
    if here.updated_at < (incoming.updated_at or ""):
        return "updated"
    return "kept_newer" if here.note != incoming.note else "unchanged"

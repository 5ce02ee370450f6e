"""Importing an export into the notes tables: what ``merge`` and ``replace`` do to each query.

``merge`` keeps whichever note was updated last and unions the tags; ``replace`` sets each
query in the file to exactly the file's note and tags, except a query changed here after the
file's version of it (its ``updated_at`` here is later): that one is kept and counted as a
conflict, unless ``force`` overwrites it. :func:`apply` runs inside the one
transaction of :meth:`~mmbright_core.notes.store.NotesStore.import_parsed` and counts what
it did in an :class:`~mmbright_core.notes.records.ImportReport`.
"""

from __future__ import annotations

import sqlite3
from typing import Literal

from mmbright_core.errors import NotesError, show
from mmbright_core.notes import labels, taxonomy
from mmbright_core.notes.exchange import Parsed
from mmbright_core.notes.records import ImportReport, QueryNotes, utc_now

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
        here = labels.get(conn, incoming.key)
        outcome = _outcome(here, incoming, mode, force)
        counts[outcome] += 1
        if outcome == "conflicts":
            continue
        counts["replaced"] += outcome == "overwrote_newer"
        stamp = incoming.updated_at or now
        if outcome in ("added", "updated", "replaced", "overwrote_newer"):
            _store_note(conn, here, incoming, stamp)
        if mode == "replace":
            labels.unlabel(conn, incoming.key, set(here.tags) - set(incoming.tags))
        counts["labels_added"] += labels.label(
            conn, incoming.key, incoming.tags, incoming.author, stamp
        )
    return ImportReport(**counts)


def _create_tag(conn: sqlite3.Connection, name: str, description: str) -> int:
    """Append ``name`` to the taxonomy if it lacks it; return 1 if it did."""
    if taxonomy.exists(conn, name):
        return 0
    taxonomy.insert(conn, name, description)
    return 1


def _store_note(
    conn: sqlite3.Connection, here: QueryNotes, incoming: QueryNotes, stamp: str
) -> None:
    """Write the file's note, keeping the earliest creation time either side knew."""
    created = min(filter(None, (here.created_at, incoming.created_at, stamp)))
    conn.execute(
        labels.UPSERT + "note = excluded.note, author = excluded.author, "
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

"""Importing an export into the notes tables: what ``merge`` and ``replace`` do to each query.

``merge`` keeps whichever note was updated last and unions the tags; ``replace`` sets each
query in the file to exactly the file's note and tags. :func:`apply` runs inside the one
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


def check_mode(mode: str) -> None:
    """Refuse an import mode other than ``merge`` or ``replace``."""
    if mode not in ("merge", "replace"):
        raise NotesError("unknown import mode", expected="merge or replace", found=show(mode))


def apply(conn: sqlite3.Connection, parsed: Parsed, mode: Mode) -> ImportReport:
    """Store what was read, adding the tags the taxonomy lacks, and count what changed."""
    counts = dict.fromkeys(ImportReport.__dataclass_fields__, 0)
    now = utc_now()
    for name, description in parsed.tags:
        counts["tags_created"] += _create_tag(conn, name, description)
    for incoming in parsed.records:
        for name in incoming.tags:
            counts["tags_created"] += _create_tag(conn, name, "")
        here = labels.get(conn, incoming.key)
        outcome = _outcome(here, incoming, mode)
        counts[outcome] += 1
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

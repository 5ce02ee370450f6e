"""The records of the notes database: a query's key, its notes, a tag, an import's counts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import NamedTuple

from mmbright_core.errors import is_hidden

#: Separates tag names in one CSV cell; tag names may therefore not contain it.
TAG_SEPARATOR = "; "


class QueryKey(NamedTuple):
    """Which query a note is about.

    Attributes:
        source: The data source as the dashboard and CLI name it (``"demo"``,
            ``"hf@<revision>"``, a folder).
        task: The task number (1-4).
        protocol: The protocol the query was judged under (``"paper"``, ``"legacy"``,
            ``"release"``).
        domain: The StackExchange domain.
        query_id: The query's id.
    """

    source: str
    task: int
    protocol: str
    domain: str
    query_id: str


@dataclass(frozen=True)
class QueryNotes:
    """What researchers wrote about one query.

    Attributes:
        key: The query.
        tags: Its failure tags, in taxonomy order.
        note: The free note (empty when there is none).
        author: Who last wrote the note or changed the tags, when given.
        created_at: When the query was first annotated (UTC, ISO 8601), ``None`` if never.
        updated_at: When its note or tags last changed (UTC, ISO 8601), ``None`` if never.
        version: The row's version, raised by every write to its note or tags; 0 while the
            query has no row. A save names the version it was loaded from
            (:meth:`~mmbright_core.notes.store.NotesStore.save`). It is the row's, not
            the notes': two records of the same notes are equal whatever their versions.
    """

    key: QueryKey
    tags: tuple[str, ...] = ()
    note: str = ""
    author: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    version: int = field(default=0, compare=False)

    def same_content(self, note: str, tags: Iterable[str]) -> bool:
        """Whether ``note`` and ``tags`` (in any order) are what these notes hold."""
        return self.note == note and set(self.tags) == set(tags)


@dataclass(frozen=True)
class Conflict:
    """A save refused because someone else saved the query since the draft was loaded.

    Attributes:
        stored: The notes stored now: their note, tags and version. A save based on
            ``stored.version`` may overwrite them.
    """

    stored: QueryNotes


@dataclass(frozen=True)
class Tag:
    """One label of the failure taxonomy.

    Attributes:
        name: The label, unique.
        description: What the label means.
        position: Its place in the taxonomy (labels are listed in this order).
        uses: How many queries carry it.
    """

    name: str
    description: str = ""
    position: int = 0
    uses: int = 0


@dataclass(frozen=True)
class ImportReport:
    """What an import did, query by query.

    Attributes:
        added: Queries that had no notes here and now do.
        updated: Queries whose note the file's newer one replaced (merge).
        kept_newer: Queries whose note here is newer than the file's and was kept (merge).
        replaced: Queries set to exactly the file's note and tags (replace).
        overwrote_newer: Of the replaced, those whose note here was newer than the file's
            (replace with ``force``).
        conflicts: Queries whose note here is newer than the file's and that replace kept
            as they are (without ``force``): changed here after the file was exported.
        unchanged: Queries the file held as they already were.
        labels_added: Tags put on queries.
        tags_created: Taxonomy labels the file named and the database lacked.
    """

    added: int = 0
    updated: int = 0
    kept_newer: int = 0
    replaced: int = 0
    overwrote_newer: int = 0
    conflicts: int = 0
    unchanged: int = 0
    labels_added: int = 0
    tags_created: int = 0

    def summary(self) -> str:
        """Return the counts as one line, e.g. ``"2 added, 1 updated, ..."``."""
        counts = {
            "added": self.added,
            "updated": self.updated,
            "kept (newer here)": self.kept_newer,
            "replaced": self.replaced,
            "of which newer here": self.overwrote_newer,
            "kept (newer here, not replaced)": self.conflicts,
            "unchanged": self.unchanged,
            "labels added": self.labels_added,
            "tags created": self.tags_created,
        }
        return ", ".join(f"{value} {label}" for label, value in counts.items())


def tag_name_problem(name: str) -> str | None:
    """Say what a valid tag name would be if ``name`` is not one, else return ``None``.

    Control and bidirectional-formatting characters are refused: a terminal would run an
    ESC sequence, and a page would show the name reordered.
    """
    if (
        not name
        or name != name.strip()
        or len(name) > 100
        or ";" in name
        or any(map(is_hidden, name))
    ):
        return (
            "1-100 characters on one line, without ';' (it separates tags in CSV), "
            "control or bidirectional-formatting characters, or spaces at either end"
        )
    return None


def utc_now() -> str:
    """Return the current time as UTC ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def normalise_time(text: str) -> str | None:
    """Return an ISO 8601 time as UTC in :func:`utc_now`'s form, ``None`` if it is not one.

    One form makes the text order the time order, which merging relies on. A time without
    a zone is read as UTC, the zone every exported time carries.
    """
    value = text.strip()
    if value.endswith(("Z", "z")):  # Python 3.10's fromisoformat does not read "Z"
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")

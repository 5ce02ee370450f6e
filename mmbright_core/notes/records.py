"""The records of the notes: in memory, checked on import, and as CSV or JSON text.

- The records: a query's key, its notes, a tag, an import's counts.
- The checks every imported record passes: each field's type and value, named on failure.
  An import is checked whole before anything is written, and a fault is reported with the
  file, the line (CSV) or entry (JSON), the field and what it should hold. Nothing is
  coerced: a query id that is a list, a note that is an object or task 9999 is an error,
  not text stored in its place.
- Notes as CSV or JSON text: rendering an export and reading one back, checked record by
  record. CSV holds a row per annotated query, its tags joined by ``"; "`` in one cell, so
  that it opens in a spreadsheet (cells a spreadsheet would run as formulas are written
  with a ``'`` before them, and read back without it: :mod:`mmbright_core.io.csv_safe`);
  JSON also carries the taxonomy with its descriptions. A file is read with the guards of
  the run readers (regular files only, the input size limit, UTF-8 with or without a BOM)
  and checked whole before anything is written; the first fault is named with the file,
  the line (CSV) or entry (JSON), the field and what was expected.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any, NamedTuple

from mmbright_core.data.choices import PROTOCOLS, TASKS
from mmbright_core.errors import NotesError, is_hidden, show
from mmbright_core.io.csv_safe import csv_text, unprotect
from mmbright_core.io.json_shapes import JsonObject, json_kind, parse_json
from mmbright_core.io.reading import MAX_ID_CHARS, decode, load

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


TEXT_KEYS = ("source", "protocol", "domain", "query_id")
OPTIONAL = ("note", "author", "created_at", "updated_at")
FIELDS = (*QueryKey._fields, "tags", *OPTIONAL)
"""The fields of one record, in export order."""

_TASKS = ", ".join(map(str, TASKS))
CLOCK_TOLERANCE = timedelta(minutes=5)
"""How far past this machine's clock an imported time may be (two machines' clocks differ)."""


@dataclass(frozen=True)
class Place:
    """Where a record is, for messages.

    Attributes:
        name: The file's name.
        line: The CSV line the record starts on (``None`` in JSON).
        record: What the record is called: ``"record 2"``, ``"queries entry 2"``, or
            ``""`` for the file as a whole.
    """

    name: str
    line: int | None
    record: str

    def error(self, problem: str, expected: str, found: str | None = None) -> NotesError:
        """An error about this record: ``<file>[:<line>]: <record>: <problem>; …``."""
        return NotesError(
            f"{self.record}: {problem}" if self.record else problem,
            source=self.name,
            line=self.line,
            expected=expected,
            found=found,
            hint=("Fix the record, or export" if self.record else "Export")
            + " again with: mmbright notes export",
        )


def record(fields: Mapping[str, Any], tags: list[Any], place: Place, *, typed: bool) -> QueryNotes:
    """Check one record's fields and build its notes.

    Args:
        fields: The record's values by field name (CSV cells, or a JSON entry's values).
        tags: Its tag names (split from the CSV cell, or the JSON list).
        place: Where it is, for messages.
        typed: True for JSON, where ``task`` must be a number and optional fields may
            be ``null``; CSV cells are all text.

    Raises:
        NotesError: A field is missing, of the wrong type or out of range.
    """
    texts = {field: _key_text(fields.get(field), field, place) for field in TEXT_KEYS}
    if texts["protocol"] not in PROTOCOLS:
        raise place.error("bad protocol", " or ".join(PROTOCOLS), show(texts["protocol"]))
    task = _task(fields.get("task"), place, typed)
    optional = {field: _optional_text(fields.get(field), field, place) for field in OPTIONAL}
    stamps = {field: _time(optional[field], field, place) for field in OPTIONAL[2:]}
    key = QueryKey(texts["source"], task, *(texts[f] for f in TEXT_KEYS[1:]))
    return QueryNotes(
        key,
        tuple(dict.fromkeys(_tag(tag, place) for tag in tags)),
        optional["note"] or "",
        optional["author"] or None,
        stamps["created_at"],
        stamps["updated_at"],
    )


def _key_text(value: Any, field: str, place: Place) -> str:
    expected = f"a non-empty string of at most {MAX_ID_CHARS:,} characters"
    if value is None:
        raise place.error(f"missing {field}", expected)
    if not isinstance(value, str):
        raise place.error(f"bad {field}", expected, json_kind(value))
    text = value.strip()
    if not text:
        raise place.error(f"empty {field}", expected)
    if len(text) > MAX_ID_CHARS:
        raise place.error(f"{field} too long", expected, show(text))
    return text


def _task(value: Any, place: Place, typed: bool) -> int:
    expected = f"one of the tasks {_TASKS}" + (" (a number)" if typed else "")
    if value is None or value == "":
        raise place.error("missing task", expected)
    if typed:
        task = value if isinstance(value, int) and not isinstance(value, bool) else None
    else:
        task = int(value) if isinstance(value, str) and value.strip().isdecimal() else None
    if task not in TASKS:
        raise place.error("bad task", expected, json_kind(value) if typed else show(str(value)))
    return task


def _optional_text(value: Any, field: str, place: Place) -> str | None:
    if value is None or isinstance(value, str):
        return value
    expected = "a string" if field == "note" else "a string or null"
    raise place.error(f"bad {field}", expected, json_kind(value))


def _time(value: str | None, field: str, place: Place) -> str | None:
    """Read a time; one later than now (past the tolerance for clocks) is refused.

    Merging trusts the later note, so a future time would win every merge to come.
    """
    raw = (value or "").strip()
    stamp = normalise_time(raw) if raw else None
    if raw and stamp is None:
        raise place.error(f"bad {field}", "an ISO 8601 time", show(raw))
    latest = datetime.now(timezone.utc) + CLOCK_TOLERANCE
    if stamp is not None and stamp > latest.isoformat(timespec="microseconds"):
        raise place.error(
            f"{field} is in the future",
            f"a time no later than now plus {CLOCK_TOLERANCE.seconds // 60} minutes "
            f"({latest.isoformat(timespec='seconds')}); the newer note wins a merge, so a "
            "future time would win every one (was the clock or the time zone wrong?)",
            show(raw),
        )
    return stamp


def _tag(tag: Any, place: Place) -> str:
    if not isinstance(tag, str):
        raise place.error("bad tag in tags", "a list of tag names (strings)", json_kind(tag))
    problem = tag_name_problem(tag)
    if problem:
        raise place.error("bad tag name", problem, show(tag))
    return tag


def json_list(value: Any, field: str, place: Place) -> list[Any]:
    """Return a JSON list (``tags``, ``queries``); its items are checked by the caller."""
    if not isinstance(value, list) or isinstance(value, JsonObject):
        raise place.error(f"bad {field}", f'a "{field}" list', json_kind(value))
    return value


def known_fields(entry: Mapping[str, Any], known: tuple[str, ...], place: Place) -> None:
    """Refuse a JSON entry holding a field the format does not have (a misspelt one)."""
    unknown = [field for field in entry if field not in known]
    if unknown:
        raise place.error(
            f"unknown field {show(unknown[0])}", f"only the fields {', '.join(known)}"
        )


FORMATS = ("csv", "json")
COLUMNS = FIELDS
_JSON_KIND = "mmbright-notes"


@dataclass(frozen=True)
class Parsed:
    """The content of an import file.

    Attributes:
        tags: Taxonomy entries ``(name, description)`` the file declares (JSON only).
        records: The queries' notes, one per query.
    """

    tags: tuple[tuple[str, str], ...]
    records: tuple[QueryNotes, ...]


def render(format: str, tags: Sequence[Tag], records: Sequence[QueryNotes]) -> str:
    """Return the taxonomy and ``records`` as CSV or JSON text."""
    if format == "csv":
        return csv_text([COLUMNS, *(_flat(notes).values() for notes in records)])
    if format == "json":
        document = {
            "format": _JSON_KIND,
            "version": 1,
            "exported_at": utc_now(),
            "tags": [{"name": t.name, "description": t.description} for t in tags],
            "queries": [{**_flat(n), "tags": list(n.tags)} for n in records],
        }
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    raise NotesError("unknown export format", expected=" or ".join(FORMATS), found=show(format))


def _flat(notes: QueryNotes) -> dict[str, Any]:
    return {
        **notes.key._asdict(),
        "tags": TAG_SEPARATOR.join(notes.tags),
        "note": notes.note,
        "author": notes.author or "",
        "created_at": notes.created_at or "",
        "updated_at": notes.updated_at or "",
    }


def read(file: str | os.PathLike[str] | IO[str] | IO[bytes], format: str | None = None) -> Parsed:
    """Read an import file and check it whole, as the run readers read theirs.

    A path must name a regular file (a FIFO or a device is refused before it is opened),
    the content may not pass ``MMBRIGHT_MAX_INPUT_BYTES`` and must be UTF-8 (a byte-order
    mark, as Excel writes, is skipped).

    Args:
        file: A path or an open file.
        format: ``"csv"`` or ``"json"``; by default the file's suffix, then its first byte.

    Raises:
        InputError: The file cannot be read, or is malformed (a :class:`NotesError`).
    """
    loaded = load(Path(file) if isinstance(file, (str, os.PathLike)) else file)
    suffix = loaded.suffix.lstrip(".")
    return parse(decode(loaded), format or (suffix if suffix in FORMATS else None), loaded.name)


def parse(text: str, format: str | None, name: str) -> Parsed:
    """Parse an export's text; ``format`` ``None`` goes by its first character.

    Raises:
        InputError: The text is malformed; the message names ``name`` and the record.
    """
    if format is None:
        format = "json" if text.lstrip()[:1] in ("{", "[") else "csv"
    if format == "csv":
        return _parse_csv(text, name)
    if format == "json":
        return _parse_json(text, name)
    raise NotesError("unknown import format", expected=" or ".join(FORMATS), found=show(format))


def _parse_csv(text: str, name: str) -> Parsed:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        _check_header(reader.fieldnames or [], name)
        rows: list[tuple[int, dict[str | None, Any]]] = []
        start = reader.line_num + 1
        for row in reader:
            rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as err:
        raise NotesError(
            "malformed CSV", source=name, line=reader.line_num, found=str(err)
        ) from err
    records = []
    for number, (line, row) in enumerate(rows, start=1):
        place = Place(name, line, f"record {number}")
        if None in row:
            raise place.error("more cells than columns", f"{len(COLUMNS)} cells")
        cells = {
            str(column): None if cell is None else unprotect(cell) for column, cell in row.items()
        }
        tags = [t.strip() for t in (cells["tags"] or "").split(";") if t.strip()]
        records.append(record(cells, tags, place, typed=False))
    return Parsed((), _unique(records, [line for line, _ in rows], name))


def _check_header(header: Sequence[str], name: str) -> None:
    """Refuse a header missing a column, naming one twice or naming one the export lacks.

    A repeated column would let its last cell win unseen, an unknown one (a misspelt
    ``notes``) would be dropped unseen.
    """
    missing = [column for column in COLUMNS if column not in header]
    repeated = [column for i, column in enumerate(header) if column in header[:i]]
    unknown = [column for column in header if column not in COLUMNS]
    found = ", ".join(map(show, header)) or "no header"
    if missing:
        problem, found = "not a notes export", f"{found} (missing {', '.join(missing)})"
    elif repeated:
        problem = f"column {show(repeated[0])} given twice"
    elif unknown:
        problem = f"unknown column {show(unknown[0])}"
    else:
        return
    raise NotesError(
        problem,
        source=name,
        line=1,
        expected=f"a header with {', '.join(COLUMNS)}, each once",
        found=found,
        hint="Export with: mmbright notes export --format csv",
    )


_TOP = ("format", "version", "exported_at", "tags", "queries")
_TAG_FIELDS = ("name", "description")


def _parse_json(text: str, name: str) -> Parsed:
    document = parse_json(text, name)  # deep nesting is refused there, as invalid JSON is
    if isinstance(document, list) and not isinstance(document, JsonObject):
        document = JsonObject([("queries", document)])  # a bare list of queries
    whole = Place(name, None, "")
    top = _entry(document, whole, 'an object with a "queries" list')
    known_fields(top, _TOP, whole)
    kind, version = top.get("format", _JSON_KIND), top.get("version", 1)
    if kind != _JSON_KIND or type(version) is not int or version != 1:
        raise whole.error(
            "not a notes export of this version",
            f'"format": "{_JSON_KIND}", "version": 1',
            f"format {json_kind(kind)}, version {json_kind(version)}",
        )
    tags = [
        _tag_entry(entry, Place(name, None, f"tags entry {i}"))
        for i, entry in enumerate(json_list(top.get("tags", []), "tags", whole), start=1)
    ]
    records = []
    for i, entry in enumerate(json_list(top.get("queries"), "queries", whole), start=1):
        place = Place(name, None, f"queries entry {i}")
        fields = _entry(entry, place, "an object with the fields " + ", ".join(FIELDS))
        known_fields(fields, FIELDS, place)
        labels = json_list(fields.get("tags", []), "tags", place)
        records.append(record(fields, labels, place, typed=True))
    positions = list(range(1, len(records) + 1))
    return Parsed(tuple(tags), _unique(records, positions, name, "queries entry"))


def _entry(value: Any, place: Place, expected: str) -> dict[str, Any]:
    """Return a JSON object's fields, refusing another value or a field given twice."""
    if not isinstance(value, JsonObject):
        raise place.error("not an object", expected, json_kind(value))
    fields: dict[str, Any] = {}
    for key, item in value:
        if key in fields:
            raise place.error(f"field {show(key)} given twice", "each field once")
        fields[key] = item
    return fields


def _tag_entry(value: Any, place: Place) -> tuple[str, str]:
    entry = _entry(value, place, 'an object with a "name" and a "description"')
    known_fields(entry, _TAG_FIELDS, place)
    tag, description = entry.get("name"), entry.get("description", "")
    if not isinstance(tag, str) or tag_name_problem(tag):
        raise place.error("bad name", tag_name_problem("") or "", json_kind(tag))
    if not isinstance(description, str):
        raise place.error("bad description", "a string", json_kind(description))
    return tag, description


def _unique(
    records: list[QueryNotes], places: list[int], name: str, unit: str = "line"
) -> tuple[QueryNotes, ...]:
    seen: dict[tuple[Any, ...], int] = {}
    for notes, place in zip(records, places, strict=True):
        if notes.key in seen:
            raise NotesError(
                f"the same query twice ({unit} {seen[notes.key]} and {place})",
                source=name,
                line=place if unit == "line" else None,
                expected="one row per query",
                found=show(repr(tuple(notes.key))),
                hint="Keep one of the two rows",
            )
        seen[notes.key] = place
    return tuple(records)

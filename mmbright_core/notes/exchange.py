"""Notes as CSV or JSON text: rendering an export and reading one back, checked record by record.

CSV holds a row per annotated query, its tags joined by ``"; "`` in one cell, so that it
opens in a spreadsheet (cells a spreadsheet would run as formulas are written with a
``'`` before them, and read back without it: :mod:`mmbright_core.io.csv_safe`); JSON also
carries the taxonomy with its descriptions. A file is read with the guards of the run
readers (regular files only, the input size limit, UTF-8 with or without a BOM) and
checked whole before anything is written; the first fault is named with the file, the
line (CSV) or entry (JSON), the field and what was expected (:mod:`.schema`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mmbright_core.errors import NotesError, show
from mmbright_core.io.csv_safe import csv_text, unprotect
from mmbright_core.io.json_shapes import JsonObject, json_kind, parse_json
from mmbright_core.io.reading import decode, load
from mmbright_core.notes.records import (
    TAG_SEPARATOR,
    QueryNotes,
    Tag,
    tag_name_problem,
    utc_now,
)
from mmbright_core.notes.schema import FIELDS, Place, json_list, known_fields, record

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

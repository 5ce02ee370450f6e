"""Notes as CSV or JSON text: rendering an export and parsing one back, checked line by line.

CSV holds a row per annotated query, its tags joined by ``"; "`` in one cell, so that it
opens in a spreadsheet; JSON also carries the taxonomy with its descriptions. Parsing
checks the whole file before anything is written, and names the file and line (CSV) or
entry (JSON) of the first fault.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmbright_core.errors import NotesError, show
from mmbright_core.notes.records import (
    TAG_SEPARATOR,
    QueryKey,
    QueryNotes,
    Tag,
    normalise_time,
    tag_name_problem,
    utc_now,
)

FORMATS = ("csv", "json")
COLUMNS = (*QueryKey._fields, "tags", "note", "author", "created_at", "updated_at")
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
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for notes in records:
            writer.writerow([*_flat(notes).values()])
        return out.getvalue()
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


def parse(text: str, format: str | None, name: str) -> Parsed:
    """Parse an export; ``format`` ``None`` goes by the file's suffix, then its first byte.

    Raises:
        NotesError: The text is malformed; the message names ``name`` and the line or entry.
    """
    if format is None:
        lowered = name.lower()
        if lowered.endswith((".csv", ".json")):
            format = lowered.rsplit(".", 1)[1]
        else:
            format = "json" if text.lstrip()[:1] in ("{", "[") else "csv"
    if format == "csv":
        return _parse_csv(text, name)
    if format == "json":
        return _parse_json(text, name)
    raise NotesError("unknown import format", expected=" or ".join(FORMATS), found=show(format))


def _parse_csv(text: str, name: str) -> Parsed:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = reader.fieldnames or []
        missing = [column for column in COLUMNS if column not in header]
        if missing:
            raise NotesError(
                "not a notes export",
                source=name,
                line=1,
                expected=f"a header with {', '.join(COLUMNS)}",
                found=f"{', '.join(header) or 'no header'} (missing {', '.join(missing)})",
                hint="Export with: mmbright notes export --format csv",
            )
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
    for line, row in rows:
        if None in row:
            raise _row_error(name, line, "more cells than columns", f"{len(COLUMNS)} cells")
        tags = [t.strip() for t in str(row["tags"] or "").split(";") if t.strip()]
        cells = {str(column): value for column, value in row.items()}
        records.append(_record({**cells, "tags": tags}, name, line))
    return Parsed((), _unique(records, [line for line, _ in rows], name))


def _parse_json(text: str, name: str) -> Parsed:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise NotesError("malformed JSON", source=name, line=err.lineno, found=err.msg) from err
    if isinstance(document, list):
        document = {"queries": document}
    if not isinstance(document, dict) or not isinstance(document.get("queries"), list):
        raise NotesError(
            "not a notes export",
            source=name,
            expected='an object with a "queries" list (as mmbright notes export writes)',
            found=f"a JSON {type(document).__name__}",
        )
    tags = []
    for i, entry in enumerate(document.get("tags") or [], start=1):
        tag = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(tag, str) or tag_name_problem(tag):
            raise _entry_error(name, "tags", i, "a tag name", show(repr(entry)))
        tags.append((tag, str(entry.get("description") or "")))
    records = []
    for i, entry in enumerate(document["queries"], start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("tags", []), list):
            raise _entry_error(
                name, "queries", i, 'an object with a "tags" list', show(repr(entry))
            )
        records.append(_record(entry, name, None, f"queries entry {i}: "))
    positions = list(range(1, len(records) + 1))
    return Parsed(tuple(tags), _unique(records, positions, name, "queries entry"))


def _record(row: Mapping[str, Any], name: str, line: int | None, where: str = "") -> QueryNotes:
    """Build one query's notes from a row of cells, checking each."""
    values = {}
    for field in QueryKey._fields:
        value = row.get(field)
        if value is None or str(value).strip() == "":
            raise _row_error(name, line, f"{where}empty {field}", f"a {field}")
        values[field] = str(value).strip()
    try:
        task = int(values["task"])
    except ValueError:
        raise _row_error(name, line, f"{where}bad task", "a task number", values["task"]) from None
    stamps = {}
    for field in ("created_at", "updated_at"):
        raw = str(row.get(field) or "").strip()
        stamps[field] = normalise_time(raw) if raw else None
        if raw and stamps[field] is None:
            raise _row_error(name, line, f"{where}bad {field}", "an ISO 8601 time", raw)
    tags = [str(tag) for tag in row.get("tags") or []]
    for tag in tags:
        if tag_name_problem(tag):
            raise _row_error(name, line, f"{where}bad tag name", "a tag name", tag)
    key = QueryKey(values["source"], task, *(values[f] for f in ("protocol", "domain", "query_id")))
    return QueryNotes(
        key,
        tuple(dict.fromkeys(tags)),
        str(row.get("note") or ""),
        str(row.get("author") or "") or None,
        stamps["created_at"],
        stamps["updated_at"],
    )


def _unique(
    records: list[QueryNotes], places: list[int], name: str, unit: str = "line"
) -> tuple[QueryNotes, ...]:
    seen: dict[QueryKey, int] = {}
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


def _row_error(
    name: str, line: int | None, problem: str, expected: str, found: str | None = None
) -> NotesError:
    return NotesError(
        problem,
        source=name,
        line=line,
        expected=expected,
        found=show(found) if found is not None else None,
    )


def _entry_error(name: str, part: str, index: int, expected: str, found: str) -> NotesError:
    return NotesError(
        f"{part} entry {index} is malformed", source=name, expected=expected, found=found
    )

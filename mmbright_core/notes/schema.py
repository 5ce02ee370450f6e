"""The checks every imported record passes: each field's type and value, named on failure.

An import is checked whole before anything is written (:mod:`.exchange`), and a fault is
reported with the file, the line (CSV) or entry (JSON), the field and what it should hold.
Nothing is coerced: a query id that is a list, a note that is an object or task 9999 is
an error, not text stored in its place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from mmbright_core.data.choices import PROTOCOLS, TASKS
from mmbright_core.errors import NotesError, show
from mmbright_core.io.json_shapes import JsonObject, json_kind
from mmbright_core.io.reading import MAX_ID_CHARS
from mmbright_core.notes.records import QueryKey, QueryNotes, normalise_time, tag_name_problem

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

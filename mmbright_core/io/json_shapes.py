"""JSON plumbing of the readers: duplicate keys kept visible, shapes checked by path.

``json.loads`` keeps the last of two equal keys; the official harness's files are read
with an ``object_pairs_hook`` instead, so a repeated query or doc id is an error naming
its JSON path (docs/protocol.md, Scoring: never keep the last one).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from mmbright_core.errors import InputError, show

V = TypeVar("V")


def finite_number(value: Any) -> float | None:
    """Return a JSON number as a finite float, or ``None`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        return None
    return number if math.isfinite(number) else None


def json_score(value: Any, name: str, keys: tuple[str, ...]) -> float:
    """Return a run's score at JSON path ``keys``, or raise naming the path."""
    score = finite_number(value)
    if score is not None:
        return score
    hint = "Scores must be JSON numbers (not strings, NaN or Infinity)"
    raise bad_leaf("bad score", value, name, keys, expected="a finite number", hint=hint)


def bad_leaf(
    problem: str, value: Any, name: str, keys: tuple[str, ...], *, expected: str, hint: str
) -> InputError:
    """Build the error for a value of a JSON table that cannot be read, naming its path.

    Args:
        problem: What is wrong, e.g. "bad score"; the JSON path is appended.
        value: The value found (its JSON kind is shown).
        name: The source's name.
        keys: The value's path, e.g. ``(query_id, doc_id)``.
        expected: What a value must be.
        hint: How to write one.
    """
    return InputError(
        f"{problem} at {json_path(*keys)}",
        source=name,
        expected=expected,
        found=json_kind(value),
        hint=hint,
    )


class JsonObject(list[tuple[str, Any]]):
    """A JSON object kept as its ordered ``(key, value)`` pairs, duplicates included."""


def parse_json(text: str, name: str) -> Any:
    """Parse JSON keeping every object as a ``JsonObject`` so duplicate keys stay visible.

    Raises:
        InputError: The text is not valid JSON (with its line and column).
    """
    try:
        return json.loads(text, object_pairs_hook=JsonObject)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON at column {err.colno}",
            source=name,
            line=err.lineno,
            expected="valid JSON",
            found=err.msg,
            hint="Check the file with `python -m json.tool`",
        ) from None
    except RecursionError:  # "[" * 100000: the decoder stops at the recursion limit
        raise InputError(
            "JSON nested too deeply",
            source=name,
            expected=f"arrays and objects nested less than {sys.getrecursionlimit():,} deep",
            found="deeper nesting",
            hint="No file this package reads nests more than a few levels",
        ) from None
    except ValueError as err:  # too many digits
        raise InputError("unreadable JSON", source=name, found=str(err)[:200]) from None


def json_path(*keys: str) -> str:
    """Render a JSON path such as ``$["q1"]["d3"]``."""
    return "$" + "".join(f"[{json.dumps(k, ensure_ascii=False)}]" for k in keys)


def json_kind(value: Any) -> str:
    """Name a parsed JSON value's type for a message."""
    if isinstance(value, (JsonObject, dict)):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {show(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} (not a finite number)"
    return f"the number {value!r}"


def object_pairs(value: Any, name: str, keys: tuple[str, ...], expected: str) -> dict[str, Any]:
    """Check that ``value`` is a JSON object without duplicate keys and return it as a dict.

    Args:
        value: The parsed value.
        name: The source's name, for messages.
        keys: The JSON path of ``value``.
        expected: What the object should map, for messages.

    Raises:
        InputError: ``value`` is not an object, or repeats a key.
    """
    where = json_path(*keys)
    if not isinstance(value, JsonObject):
        raise InputError(
            f"wrong JSON shape at {where}",
            source=name,
            expected=f"an object {expected}",
            found=json_kind(value),
        )
    out: dict[str, Any] = {}
    for key, item in value:
        if key in out:
            raise InputError(
                f"duplicate key at {json_path(*keys, key)}",
                source=name,
                expected="each key once",
                found=f"{show(key)} repeated",
                hint="Remove the repeated entry; readers here never keep the last one",
            )
        out[key] = item
    return out


def nested_json(
    text: str, name: str, leaf: Callable[[Any, str, tuple[str, str]], V], what: str
) -> dict[str, dict[str, V]]:
    """Parse ``{query_id: {doc_id: value}}`` JSON, checking shape, duplicates and leaves.

    Args:
        text: The JSON text.
        name: The source's name, for messages.
        leaf: Converts one value, given the source name and its ``(query_id, doc_id)``
            path; raises ``InputError`` for a bad value.
        what: What the values are ("score", "relevance"), for messages.

    Returns:
        The nested dict, in file order.
    """
    top = object_pairs(
        parse_json(text, name), name, (), f"mapping each query id to an object of doc id -> {what}"
    )
    out: dict[str, dict[str, V]] = {}
    for query_id, docs in top.items():
        inner = object_pairs(docs, name, (query_id,), f"mapping each doc id to its {what}")
        out[query_id] = {doc: leaf(value, name, (query_id, doc)) for doc, value in inner.items()}
    return out

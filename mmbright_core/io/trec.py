"""The TREC line grammar: blank-separated columns of runs and qrels, read as trec_eval does.

A run line is ``query_id Q0 doc_id rank score tag`` and a qrels line ``query_id iteration
doc_id relevance``. Columns are split on ASCII blanks only, as trec_eval splits them. A run
line with text after the tag is read as trec_eval reads it: the text is ignored, and one
:class:`~mmbright_core.errors.InputWarning` per input counts such lines (trec_eval's own
test run ``results.trunc`` has lines like ``301 Q0 DOC 99 2.13 STANDARD more junk at``).
Any other column count is an error naming the line.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from typing import TypeVar

from mmbright_core.errors import InputError, InputWarning, show
from mmbright_core.io.json_shapes import json_path

V = TypeVar("V")

# trec_eval splits columns on ASCII blanks only; Python's ``str.split()`` would also split
# on Unicode spaces (U+00A0...), which may occur inside ids.
FIELD = re.compile(r"[^ \t\r\f\v]+")
_BLANK = re.compile(r"[ \t\r\n\f\v]")
_TO_SPACE = str.maketrans("\t\r\f\v", "    ")
INTEGER = re.compile(r"[+-]?[0-9]+")

# The two whitespace-separated TREC formats, each named for the other's error message.
TREC_LAYOUTS = {
    "run": ("query_id Q0 doc_id rank score tag", "qrels", "read_qrels"),
    "qrels": ("query_id iteration doc_id relevance", "run", "read_run"),
}


def trec_rows(text: str, name: str, kind: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, columns)`` of a TREC run or qrels, checking the column count.

    Text after a run's tag is dropped from the columns yielded, and counted in one
    :class:`~mmbright_core.errors.InputWarning` once every line is read.

    Raises:
        InputError: A line has another number of columns (naming the other format when the
            count is the other's, as when a qrels file is given for a run).
    """
    layout, other, reader = TREC_LAYOUTS[kind]
    count, other_count = len(layout.split()), len(TREC_LAYOUTS[other][0].split())
    # trec_eval skips whatever follows a run's 6th column; its qrels reader is stricter.
    lenient = kind == "run"
    trailing: list[int] = []
    for line, columns in fields(text):
        if lenient and len(columns) > count:
            trailing.append(line)
            columns = columns[:count]
        if len(columns) != count:
            raise InputError(
                "wrong number of columns",
                source=name,
                line=line,
                expected=f"{count} columns ({layout})",
                found=f"{len(columns)}: {show(' '.join(columns))}",
                hint=f"This looks like a {other} line; read it with {reader}"
                if len(columns) == other_count
                else "Ids may not contain blanks",
            )
        yield line, columns
    if trailing:
        warnings.warn(_trailing_text(name, trailing), stacklevel=2)


def trec_table(
    text: str,
    name: str,
    kind: str,
    check: Callable[[list[str], int], None],
    value: Callable[[list[str], int], V],
) -> dict[str, dict[str, V]]:
    """Read TREC lines into ``query_id -> doc_id -> value``, refusing a doc listed twice.

    Args:
        text: The decoded text.
        name: The source's name, for messages.
        kind: ``"run"`` or ``"qrels"``.
        check: Refuses a line's columns before the duplicate check (given its number).
        value: Reads the line's value once the doc is known to be new there.
    """
    table: dict[str, dict[str, V]] = {}
    for line, columns in trec_rows(text, name, kind):
        check(columns, line)
        query_id, doc_id = columns[0], columns[2]
        docs = table.setdefault(query_id, {})
        if doc_id in docs:
            raise duplicate_error(text, name, line, query_id, doc_id, doc_column=2)
        docs[doc_id] = value(columns, line)
    return table


def bad_column(
    problem: str, token: str, name: str, line: int, *, expected: str, hint: str
) -> InputError:
    """Build the error for a column of a TREC line that cannot be read, naming the line."""
    return InputError(
        problem, source=name, line=line, expected=expected, found=show(token), hint=hint
    )


def _trailing_text(name: str, lines: list[int]) -> InputWarning:
    many = len(lines) > 1
    counted = f"{len(lines):,} lines have" if many else "1 line has"
    first = f" (the first is line {lines[0]})" if many else f" (line {lines[0]})"
    return InputWarning(
        f"{name}: {counted} text after the run tag{first}; ignored, as trec_eval ignores it"
    )


def fields(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, columns)`` for every non-blank line, numbered from 1."""
    # One C-level translate, then a plain split: several times faster than a regex per
    # line on runs of a million lines, with the same ASCII-blank rule as ``FIELD``.
    for number, line in enumerate(text.translate(_TO_SPACE).split("\n"), start=1):
        columns = line.split(" ")
        if "" in columns:
            columns = [c for c in columns if c]
        if columns:
            yield number, columns


def duplicate_error(
    text: str, name: str, line: int, query_id: str, doc_id: str, doc_column: int
) -> InputError:
    """Build the error for a doc id listed twice for one query, naming both lines."""
    first = next(
        number
        for number, columns in fields(text)
        if len(columns) > doc_column and columns[0] == query_id and columns[doc_column] == doc_id
    )
    return InputError(
        f"duplicate doc id {show(doc_id)} for query {show(query_id)}",
        source=name,
        line=line,
        expected="each doc id at most once per query",
        found=f"a second entry (the first is on line {first})",
        hint="Remove one of them; readers here never silently keep the last one",
    )


def check_trec_token(value: object, what: str, keys: tuple[str, ...], hint: str) -> None:
    """Refuse a value that would not read back as one column of a TREC file.

    Raises:
        InputError: ``value`` is not a string, is empty or contains a blank.
    """
    if not isinstance(value, str) or not value or _BLANK.search(value):
        where = f" at {json_path(*keys)}" if keys else ""
        raise InputError(
            f"{what} cannot be written to a TREC file{where}",
            expected="a non-empty string without blanks",
            found=repr(value)[:60],
            hint=hint,
        )

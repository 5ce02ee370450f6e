"""Spreadsheet-safe CSV: every file the package writes as CSV goes through here.

A spreadsheet that opens a CSV runs a cell starting with ``=``, ``+``, ``-`` or ``@`` as
a formula (``=HYPERLINK(...)`` sends data away, ``+cmd|...`` starts a program), and some
also after a tab or a carriage return. OWASP's rule (CSV injection) is applied to every
text cell, headers included: such a cell is written with a ``'`` before it, which a
spreadsheet shows as text. A cell that is a number (``-0.25``, ``+3``, ``-1e-05``) is
not a formula, and is written as it is, so that it stays a number where the file is read.

So that reading a file back gives exactly what was written, a cell that already starts
with one or more ``'`` followed by one of those characters gets one more ``'`` too;
:func:`unprotect` removes one ``'`` from a cell of that shape and leaves every other cell
alone. A note ``'=x`` is written ``''=x`` and read back as ``'=x``.

Lines end in CRLF (RFC 4180, as spreadsheets write): Python's ``csv`` module quotes a cell
holding any character of the line ending, so only then is a carriage return inside a note
quoted, and read back as itself rather than as the end of a line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP)."""

_PREFIX = "'"
_EOL = "\r\n"
_GUARDED = re.compile(r"'*[=+\-@\t\r]")
_PROTECTED = re.compile(r"'+[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
"""A decimal number, as pandas writes one (no ``inf``: a spreadsheet reads ``-inf`` as a name)."""


def protect(cell: str) -> str:
    """Return ``cell`` as written to a CSV file: ``'`` put before a formula's start.

    A number keeps its sign: it is not a formula.
    """
    if _NUMBER.fullmatch(cell):
        return cell
    return _PREFIX + cell if _GUARDED.match(cell) else cell


def unprotect(cell: str) -> str:
    """Undo :func:`protect`: ``unprotect(protect(x)) == x`` for every text ``x``."""
    return cell[1:] if _PROTECTED.match(cell) else cell


def csv_text(rows: Iterable[Iterable[object]]) -> str:
    """Write rows (the header first) as CSV text, each cell through :func:`protect`.

    Cells are written as ``str(cell)``, ``None`` as an empty cell; lines end in CRLF.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=_EOL)
    for row in rows:
        writer.writerow([protect("" if cell is None else str(cell)) for cell in row])
    return out.getvalue()


def frame_csv(frame: pd.DataFrame) -> str:
    """Write a table as CSV text without its index, each cell through :func:`protect`.

    pandas formats the values (floats in full, missing values as empty cells); the cells
    are then protected one by one, so numbers read the same as pandas writes them.
    """
    return csv_text(csv.reader(io.StringIO(frame.to_csv(index=False, lineterminator=_EOL))))

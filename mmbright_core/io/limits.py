"""The bounds on what a reader takes: the input size limit and the longest id.

A reader stops once a source passes :func:`max_input_bytes` (counted as it is read,
decompressed and decoded) and refuses an id past :data:`MAX_ID_CHARS`; the errors for
both are built here, so every reader words them alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from mmbright_core.errors import InputError, InputTooLargeError, show

MAX_INPUT_ENV = "MMBRIGHT_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = 4 * 2**30
"""The most bytes a reader takes from one source, after gunzipping: 4 GiB, several times
the largest full-corpus run (29 domains x 1000 docs per query), while a file past it would
need several times its size in memory to parse. ``MMBRIGHT_MAX_INPUT_BYTES`` (a number of
bytes) or a reader's ``max_bytes`` argument sets another limit."""

MAX_ID_CHARS = 1024
"""The longest query or doc id taken, in characters. The longest real ids are Task 4 pair
ids, ``<passage id>|||<image path>`` (docs/protocol.md, The data as published), a few hundred
characters at most; a longer one is a column mix-up or a hostile file, and would otherwise be
carried into every table, message and page."""


def max_input_bytes(limit: int | None = None) -> int:
    """The most bytes a reader takes from one source (see :data:`DEFAULT_MAX_INPUT_BYTES`).

    Args:
        limit: An explicit limit; by default ``MMBRIGHT_MAX_INPUT_BYTES``, else 4 GiB.

    Raises:
        InputError: The limit (or the environment variable) is not a positive integer.
    """
    if limit is None:
        raw = os.environ.get(MAX_INPUT_ENV, "").strip()
        if not raw:
            return DEFAULT_MAX_INPUT_BYTES
        try:
            limit = int(raw)
        except ValueError:
            limit = 0
        source: str | None = MAX_INPUT_ENV
        found = show(raw)
    else:
        source, found = None, repr(limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InputError(
            "bad input size limit",
            source=source,
            expected="a positive number of bytes, e.g. 8589934592 for 8 GiB",
            found=found,
        )
    return limit


def size_text(size: int) -> str:
    """Write a byte count for a message: ``4 GiB``, ``1.5 MiB``, ``900 bytes``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size:,} bytes"


def too_large(
    problem: str, name: str, limit: int, *, hint: str, found: str | None = None
) -> InputTooLargeError:
    """Build the error for a source past the size ``limit`` (``found``: what was counted).

    Args:
        problem: What passed the limit, e.g. "the input is larger than the input size limit".
        name: The source's name.
        limit: The limit in bytes.
        hint: How to get past it.
        found: What was counted; by default "more than" the limit (reading stops there).
    """
    return InputTooLargeError(
        problem,
        limit=limit,
        source=name,
        expected=f"at most {size_text(limit)} ({limit:,} bytes)",
        found=found or f"more than {size_text(limit)}",
        hint=hint,
    )


def check_id_lengths(
    nested: Mapping[str, Mapping[str, object]], name: str, text: str | None = None
) -> None:
    """Refuse a query or doc id longer than :data:`MAX_ID_CHARS`.

    Args:
        nested: query_id -> doc_id -> value, as read.
        name: The source's name, for messages.
        text: The text read, to name the line of the long id.

    Raises:
        InputError: An id is too long (the message quotes its start and its length).
    """
    for query_id, docs in nested.items():
        if len(query_id) > MAX_ID_CHARS:
            raise long_id_error("query id", query_id, name, text)
        if docs and max(map(len, docs)) > MAX_ID_CHARS:
            doc_id = next(d for d in docs if len(d) > MAX_ID_CHARS)
            raise long_id_error("doc id", doc_id, name, text)


def long_id_error(
    what: str,
    value: str,
    name: str,
    text: str | None = None,
    *,
    row: int | None = None,
    length: int | None = None,
) -> InputError:
    """Build the error for an id past :data:`MAX_ID_CHARS` (``what``: "query id"...).

    The line is found in ``text`` where given; ``row`` names a table's row instead, and
    ``length`` the id's length when ``value`` is only its start.
    """
    at = -1 if text is None else text.find(value)
    return InputError(
        f"row {row}: {what} too long" if row is not None else f"{what} too long",
        source=name,
        line=text.count("\n", 0, at) + 1 if text is not None and at >= 0 else None,
        expected=f"ids of at most {MAX_ID_CHARS:,} characters",
        found=show(value, length=length),
        hint="Check the columns: an id names a query or a document, it never holds its text",
    )

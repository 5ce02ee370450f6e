"""Read and write qrels: TREC qrels files and JSON ``{query_id: {doc_id: relevance}}``.

Relevance labels are integers (graded 2/1/0 in Task 4, docs/protocol.md, Per-task protocol);
anything else is an error rather than a guess, and so is a doc id judged twice for one query.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.atomic import write_file
from mmbright_core.io.json_shapes import bad_leaf, json_path
from mmbright_core.io.reading import Readable, load, parse_table
from mmbright_core.io.trec import (
    INTEGER,
    bad_column,
    check_trec_token,
    trec_table,
)
from mmbright_core.types import Qrels

QRELS_FORMATS: tuple[str, ...] = ("trec", "json")

_TOKEN_HINT = "Write JSON qrels (a .json path) for ids with blanks"


def read_qrels(
    src: Readable, format: str | None = None, *, max_bytes: int | None = None
) -> dict[str, dict[str, int]]:
    """Read qrels from a TREC qrels file or JSON.

    Args:
        src: A path, inline text, bytes or an open file (gzip is recognised by content).
        format: ``"trec"`` or ``"json"``; detected when omitted (``.json`` extension or a
            leading ``{``).
        max_bytes: The most bytes read, counted decompressed; by default
            ``MMBRIGHT_MAX_INPUT_BYTES``, else 4 GiB.

    Returns:
        query_id -> doc_id -> relevance, in the source's order.

    Raises:
        InputError: A label is not an integer or a doc is judged twice (naming the line or
            JSON path), or the source cannot be read within ``max_bytes`` or holds an id
            over 1,024 characters.
        UnknownNameError: ``format`` is neither ``"trec"`` nor ``"json"``.
    """
    if format is not None and format not in QRELS_FORMATS:
        raise UnknownNameError("qrels format", format, QRELS_FORMATS)
    loaded = load(src, max_bytes)

    def is_json(text: str) -> bool:
        if format is not None:
            return format == "json"
        return loaded.suffix == ".json" or text.lstrip().startswith("{")

    return parse_table(loaded, is_json, _json_relevance, "relevance", _parse_trec_qrels)


def _parse_trec_qrels(text: str, name: str) -> dict[str, dict[str, int]]:
    def check(columns: list[str], line: int) -> None:
        if not INTEGER.fullmatch(columns[3]):
            raise bad_column(
                "non-integer relevance (4th column)",
                columns[3],
                name,
                line,
                expected="an integer label such as 0, 1 or 2",
                hint="Relevance labels are integers; round or map them explicitly",
            )

    return trec_table(text, name, "qrels", check, lambda columns, _: int(columns[3]))


def _json_relevance(value: Any, name: str, keys: tuple[str, str]) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    expected, hint = "an integer label such as 0, 1 or 2", "Relevance labels are integers"
    hint += "; round or map them explicitly"
    raise bad_leaf("non-integer relevance", value, name, keys, expected=expected, hint=hint)


def write_qrels(path: str | os.PathLike[str], qrels: Qrels, format: str | None = None) -> Path:
    """Write qrels atomically: TREC ``query_id 0 doc_id relevance`` lines, or JSON.

    Args:
        path: The destination; ``.gz`` is compressed.
        qrels: query_id -> doc_id -> relevance.
        format: ``"trec"`` or ``"json"``; by default JSON for a ``.json`` name, else TREC.

    Returns:
        The destination.

    Raises:
        InputError: A label is not an integer, or an id cannot be written to TREC.
    """
    if format is not None and format not in QRELS_FORMATS:
        raise UnknownNameError("qrels format", format, QRELS_FORMATS)
    suffixes = [s.lower() for s in Path(path).suffixes if s.lower() != ".gz"]
    as_json = format == "json" or (format is None and suffixes[-1:] == [".json"])
    checked = {
        q: {d: _python_label(rel, (q, d)) for d, rel in sorted(docs.items())}
        for q, docs in sorted(qrels.items())
    }
    if as_json:
        return write_file(path, json.dumps(checked, indent=2, ensure_ascii=False) + "\n")
    lines = []
    for query_id, docs in checked.items():
        for doc_id, label in docs.items():
            check_trec_token(query_id, "query id", (query_id,), _TOKEN_HINT)
            check_trec_token(doc_id, "doc id", (query_id, doc_id), _TOKEN_HINT)
            lines.append(f"{query_id} 0 {doc_id} {label}\n")
    return write_file(path, "".join(lines))


def _python_label(value: object, keys: tuple[str, str]) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InputError(
            f"non-integer relevance at {json_path(*keys)}",
            expected="an integer label",
            found=repr(value)[:60],
        )
    return int(value)


__all__ = ["QRELS_FORMATS", "read_qrels", "write_qrels"]

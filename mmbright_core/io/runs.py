"""Read and write runs: TREC run files, the official ``scores.json``, parquet and frames.

A run is ``{query_id: {doc_id: score}}`` (docs/protocol.md, Per-task protocol). Readers validate
everything and alter
nothing: a doc id listed twice for one query is an error, where ranx and ir_measures keep
the last one (docs/protocol.md, Scoring and What peer tools do differently); NaN, infinite and
non-numeric scores are errors too. Writers order each query's documents with the one ranking rule
(``mmbright_core.ranking``) and write scores with ``repr``, so a written run reads back to exactly
the same floats.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io._columns import (
    RunColumns,
    Wording,
    frame_to_run,
    read_parquet_table,
    run_columns,
)
from mmbright_core.io.atomic import atomic_write_bytes, write_file
from mmbright_core.io.json_shapes import json_path, json_score
from mmbright_core.io.reading import PARQUET_MAGIC, Loaded, Readable, load, parse_table
from mmbright_core.io.trec import (
    INTEGER,
    TREC_LAYOUTS,
    bad_column,
    check_trec_token,
    trec_table,
)
from mmbright_core.ranking import ranked
from mmbright_core.types import Run

RunFormat = Literal["trec", "json", "parquet"]
RUN_FORMATS: tuple[str, ...] = ("trec", "json", "parquet")

_TOKEN_HINT = "Use write_json_run for ids with blanks"


def read_run(
    src: Readable | pd.DataFrame, format: str | None = None, *, max_bytes: int | None = None
) -> dict[str, dict[str, float]]:
    """Read a run from a TREC run file, JSON, parquet, or a DataFrame.

    Args:
        src: A path, inline text, bytes, an open file (gzip is recognised by its content),
            or a pandas DataFrame / pyarrow Table with columns ``query_id, doc_id, score``.
        format: ``"trec"``, ``"json"`` or ``"parquet"``; detected when omitted (parquet
            magic bytes, then the ``.json``/``.parquet`` extension, then a leading ``{``).
        max_bytes: The most bytes read, counted decompressed (and decoded, for parquet);
            by default ``MMBRIGHT_MAX_INPUT_BYTES``, else 4 GiB.

    Returns:
        query_id -> doc_id -> score, in the source's order.

    Raises:
        InputError: The source is malformed, is no regular file, is larger than
            ``max_bytes`` or holds an id over 1,024 characters; the message says where.
        UnknownNameError: ``format`` is not one of the formats above.
    """
    if _is_table(src):
        return run_from_frame(src)
    if format is not None and format not in RUN_FORMATS:
        raise UnknownNameError("run format", format, RUN_FORMATS)
    loaded = load(src, max_bytes)
    fmt = format or _detect(loaded.data, loaded.suffix)
    if fmt == "parquet":
        return frame_to_run(read_parquet_table(loaded.data, loaded.name, max_bytes), loaded.name)
    return _parse_text(loaded, fmt)


def _parse_text(loaded: Loaded, fmt: str) -> dict[str, dict[str, float]]:
    return parse_table(loaded, lambda _: fmt == "json", json_score, "score", _parse_trec_run)


def read_run_to_score(
    src: Readable, *, max_bytes: int | None = None
) -> dict[str, dict[str, float]] | RunColumns:
    """Read a run in the form ``evaluate`` scores fastest: a parquet file stays columns.

    A parquet run is validated on its columns (as :func:`read_run` validates it, with the
    same messages) and handed to ``evaluate`` as such, never built into a mapping; a run in
    any other format is read by :func:`read_run`.

    Args:
        src: As for :func:`read_run`.
        max_bytes: As for :func:`read_run`.

    Raises:
        InputError: The source is malformed (see :func:`read_run`).
    """
    loaded = load(src, max_bytes)
    fmt = _detect(loaded.data, loaded.suffix)
    if fmt != "parquet":
        return _parse_text(loaded, fmt)
    return run_columns(read_parquet_table(loaded.data, loaded.name, max_bytes), loaded.name)


def _is_table(src: object) -> bool:
    return isinstance(src, (pd.DataFrame, pa.Table))


def _detect(data: bytes, suffix: str) -> str:
    if data[:4] == PARQUET_MAGIC or suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".json" or data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "json"
    return "trec"


def _parse_trec_run(text: str, name: str) -> dict[str, dict[str, float]]:
    def check(columns: list[str], line: int) -> None:
        rank = columns[3]
        # trec_eval ignores the rank column; checking it still catches swapped columns.
        if not (rank.isascii() and rank.isdigit()) and not INTEGER.fullmatch(rank):
            hint = f"Columns are {TREC_LAYOUTS['run'][0]}"
            raise bad_column(
                "non-integer rank (4th column)",
                rank,
                name,
                line,
                expected="an integer rank",
                hint=hint,
            )

    return trec_table(
        text, name, "run", check, lambda columns, line: _text_score(columns[4], name, line)
    )


def _text_score(token: str, name: str, line: int) -> float:
    # ``float`` also takes "1_0", non-ASCII digits and "nan"/"inf"; refuse them here.
    value: float | None = None
    if token.isascii() and "_" not in token:
        with contextlib.suppress(ValueError):
            value = float(token)
    if value is not None and math.isfinite(value):
        return value
    problem = (
        "non-finite score"
        if value is not None or _is_nonfinite_word(token)
        else "non-numeric score"
    )
    hint = "Fix the retriever's output; NaN and infinite scores have no rank"
    raise bad_column(
        f"{problem} (5th column)", token, name, line, expected="a finite decimal number", hint=hint
    )


def _is_nonfinite_word(token: str) -> bool:
    return token.lower().lstrip("+-") in ("nan", "inf", "infinity")


def run_from_frame(
    frame: Any, source: str = "<frame>", *, wording: Wording = "reader"
) -> dict[str, dict[str, float]]:
    """Convert a pandas DataFrame or pyarrow Table with ``query_id, doc_id, score``.

    Args:
        frame: The table; other columns (a rank, a tag) are ignored.
        source: The name messages use for it.
        wording: ``"scorer"`` reports a bad row as ``evaluate`` reports one in a mapping
            (naming query and doc) and takes an empty table, whatever its column types,
            for an empty run; otherwise what is rejected is the same.

    Returns:
        query_id -> doc_id -> score, in row order.

    Raises:
        InputError: A column is missing or holds a bad value (the message names the row).
    """
    return frame_to_run(frame, source, wording)


def run_to_frame(run: Run) -> pd.DataFrame:
    """Flatten a run into a DataFrame ``query_id, doc_id, score``.

    Queries come in sorted order and each query's documents in ranking order.

    Raises:
        InputError: A score is not a finite number.
    """
    rows = [(q, d, s) for q, docs in _ordered(run, "<run>") for d, s in docs]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return frame.astype({"query_id": "string", "doc_id": "string", "score": "float64"})


def write_trec_run(path: str | os.PathLike[str], run: Run, tag: str = "mmbright") -> Path:
    """Write a TREC run file (gzip-compressed when ``path`` ends in ``.gz``), atomically.

    Args:
        path: The destination.
        run: query_id -> doc_id -> score.
        tag: The run tag of the 6th column.

    Returns:
        The destination.

    Raises:
        InputError: An id or the tag is empty or contains a blank, or a score is not finite.
    """
    check_trec_token(tag, "run tag", (), _TOKEN_HINT)
    lines = []
    for query_id, docs in _ordered(run, str(path)):
        check_trec_token(query_id, "query id", (query_id,), _TOKEN_HINT)
        for rank, (doc_id, score) in enumerate(docs, start=1):
            check_trec_token(doc_id, "doc id", (query_id, doc_id), _TOKEN_HINT)
            lines.append(f"{query_id} Q0 {doc_id} {rank} {score!r} {tag}\n")
    return write_file(path, "".join(lines))


def write_json_run(path: str | os.PathLike[str], run: Run) -> Path:
    """Write a run as JSON ``{query_id: {doc_id: score}}`` (the official scores.json).

    Each query's documents are written in ranking order; ``.gz`` paths are compressed.

    Raises:
        InputError: A score is not a finite number.
    """
    return write_file(path, run_json(run, str(path)))


def run_json(run: Run, source: str = "<run>") -> str:
    """Serialise a run as JSON, one query per line, documents in ranking order, scores exact."""
    # json.dumps with ``indent`` falls back to the pure-Python encoder (~5x slower on a
    # 1.6 M-entry run); one compact object per line keeps the C encoder and stays readable.
    lines = [
        f"  {json.dumps(q, ensure_ascii=False)}: {json.dumps(dict(docs), ensure_ascii=False)}"
        for q, docs in _ordered(run, source)
    ]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_parquet_run(path: str | os.PathLike[str], run: Run) -> Path:
    """Write a run as a parquet file ``query_id, doc_id, score``, atomically."""
    buffer = io.BytesIO()
    run_to_frame(run).to_parquet(buffer, index=False)
    return atomic_write_bytes(path, buffer.getvalue())


def _ordered(run: Run, source: str) -> list[tuple[str, list[tuple[str, float]]]]:
    out = []
    for query_id in sorted(run):
        docs = {d: _python_score(s, source, (query_id, d)) for d, s in run[query_id].items()}
        out.append((query_id, ranked(docs)))
    return out


def _python_score(value: object, source: str, keys: tuple[str, str]) -> float:
    if type(value) is float and math.isfinite(value):  # the common case, checked fast
        return value
    score = math.nan
    if not isinstance(value, (str, bytes, bool)):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            score = float(value)  # type: ignore[arg-type]
    if math.isfinite(score):
        return score
    raise InputError(
        f"bad score at {json_path(*keys)}",
        source=source,
        expected="a finite number",
        found=repr(value)[:60],
    )


__all__ = [
    "RUN_FORMATS",
    "RunColumns",
    "RunFormat",
    "read_run",
    "read_run_to_score",
    "run_columns",
    "run_from_frame",
    "run_json",
    "run_to_frame",
    "write_json_run",
    "write_parquet_run",
    "write_trec_run",
]

"""Columnar runs: parquet files, pandas DataFrames and pyarrow Tables.

The three columns are ``query_id``, ``doc_id`` and ``score`` (the names ir_measures and ranx use).
Ids must be strings; integer ids are accepted and written out in decimal, which loses
nothing. Scores must be finite numbers. As for every other format, a doc id repeated
within one query is an error (docs/protocol.md, Scoring).

This is the one place a table is validated: :func:`run_columns` checks it on its columns
and groups its rows by query, and both the readers (``read_run``, ``run_from_frame``, which
build the mapping from those columns) and ``evaluate`` (which scores the columns themselves,
:mod:`mmbright_core.metrics._table`) start from it. Each query's documents keep the table's
row order, the run's own order that the official oracle breaks its ties by
(:mod:`mmbright_core.metrics._oracle`).
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mmbright_core.errors import InputError, show
from mmbright_core.io.reading import (
    MAX_ID_CHARS,
    PARQUET_MAGIC,
    long_id_error,
    max_input_bytes,
    too_large,
)

_REQUIRED = ("query_id", "doc_id", "score")


def read_parquet_table(data: bytes, name: str, max_bytes: int | None = None) -> pa.Table:
    """Read parquet bytes into a Table, turning every failure into an ``InputError``.

    Only the run's columns are read, batch by batch: a 4 kB file may hold a column that
    decodes to gigabytes, and its metadata's sizes are the writer's word. Each batch is
    counted against ``max_bytes`` (:func:`~mmbright_core.io.reading.max_input_bytes`) and its
    ids against :data:`~mmbright_core.io.reading.MAX_ID_CHARS` as it is decoded, so such a
    file is refused after one batch instead of being read whole.
    """
    if data[:4] != PARQUET_MAGIC:
        raise InputError(
            "not a parquet file",
            source=name,
            expected="the parquet magic bytes 'PAR1'",
            found=repr(data[:4]),
            hint="Pass format='trec' or 'json' for text files",
        )
    limit = max_input_bytes(max_bytes)
    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        schema = parquet.schema_arrow
        if any(c not in schema.names for c in _REQUIRED):
            return schema.empty_table()  # frame_to_run names what is missing
        batches, size = [], 0
        for batch in parquet.iter_batches(columns=list(_REQUIRED)):
            size += batch.nbytes
            if size > limit:
                raise too_large(
                    "the parquet file is larger than the input size limit once decoded",
                    name,
                    limit,
                    hint="Split the run, or raise the limit with MMBRIGHT_MAX_INPUT_BYTES",
                )
            batch.validate(full=True)  # checks, among others, that strings are valid UTF-8
            for label in ("query_id", "doc_id"):
                check_id_column(batch.column(label), label, name)
            batches.append(batch)
        if not batches:
            return pa.schema([schema.field(c) for c in _REQUIRED]).empty_table()
        return pa.Table.from_batches(batches)
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError, IndexError, KeyError) as err:
        # pyarrow reports a corrupt or truncated file through several exception types.
        raise InputError(
            "corrupt or truncated parquet file",
            source=name,
            found=str(err)[:200] or type(err).__name__,
            hint="Re-create the file",
        ) from None


Wording = Literal["reader", "scorer"]
"""Whose words a bad row is reported in: a reader's (``read_run``: "missing score",
"duplicate doc id") or the scorer's (``evaluate``: "bad score", "duplicate row", naming
the query and doc as the mapping path does)."""


@dataclass(frozen=True)
class RunColumns:
    """A validated run table, its rows grouped by query: what the scorer reads a table as.

    Attributes:
        query_ids: The distinct query ids, in the order of their first row.
        starts: Where each query's rows start in the columns below, and where the last stops
            (one more entry than ``query_ids``).
        doc_ids: The doc ids (a string Array), grouped by query, each query's rows in table
            order (the run's own order, which the official oracle breaks ties by).
        scores: Their scores, float64 as given.
    """

    query_ids: list[str]
    starts: npt.NDArray[np.int64]
    doc_ids: pa.Array
    scores: npt.NDArray[np.float64]

    def query_docs(self, i: int) -> tuple[list[str], npt.NDArray[np.float64]]:
        """The doc ids and scores of the ``i``-th query, in table order."""
        start, stop = int(self.starts[i]), int(self.starts[i + 1])
        return self.doc_ids.slice(start, stop - start).to_pylist(), self.scores[start:stop]

    def take(self, rows: npt.NDArray[np.int64]) -> RunColumns:
        """The run of the rows at ``rows`` (grouped by query), every query kept, even empty."""
        query = np.searchsorted(self.starts, rows, side="right") - 1
        starts = np.zeros_like(self.starts)
        np.cumsum(np.bincount(query, minlength=len(self.query_ids)), out=starts[1:])
        doc_ids = self.doc_ids.take(pa.array(rows, pa.int64()))
        return RunColumns(self.query_ids, starts, doc_ids, self.scores[rows])


# Rows whose doc ids are hashed together when duplicates are looked for (whole queries, so
# about one query of a top-1000 run): a hash table of a thousand ids stays in cache, one of
# a whole run's ids does not (4x slower), and a duplicate never spans two queries.
_DUPLICATE_BLOCK = 1 << 10


def run_columns(frame: Any, name: str, wording: Wording = "reader") -> RunColumns:
    """Validate a DataFrame or Table with ``query_id, doc_id, score``; group it by query.

    Every row is checked as :func:`frame_to_run` checks it, on the columns: no Python
    object is made per row. Query ids are factorised (``dictionary_encode``) and the rows
    put in query order by one stable sort, skipped when they already are.

    Args:
        frame: The table; other columns are ignored.
        name: The source messages name.
        wording: See :data:`Wording`.

    Raises:
        InputError: A column is missing, has the wrong type, or holds a bad value, or a doc
            id is repeated within a query.
    """
    table = _run_table(frame, name)
    if wording == "scorer" and table.num_rows == 0:
        # An empty DataFrame's columns may have no type at all: nothing to score.
        return RunColumns([], np.zeros(1, np.int64), pa.array([], pa.string()), np.zeros(0))
    query_ids = _ids(table.column("query_id"), "query_id", name)
    doc_ids = _ids(table.column("doc_id"), "doc_id", name)
    if wording == "scorer":
        scores = _scorer_scores(table.column("score"), query_ids, doc_ids, name)
    else:
        scores = _scores(table.column("score"), name)
    encoded = pc.dictionary_encode(query_ids)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    order = None
    if codes.size and (codes[1:] < codes[:-1]).any():
        order = np.argsort(codes, kind="stable")
        codes, scores = codes[order], scores[order]
    grouped = doc_ids if order is None else doc_ids.take(pa.array(order))
    starts = np.zeros(len(encoded.dictionary) + 1, np.int64)
    np.cumsum(np.bincount(codes, minlength=len(encoded.dictionary)), out=starts[1:])
    if _has_duplicates(grouped, codes, starts):
        raise _first_duplicate(query_ids.to_pylist(), doc_ids.to_pylist(), name, wording)
    return RunColumns(encoded.dictionary.to_pylist(), starts, grouped, scores)


def frame_to_run(frame: Any, name: str, wording: Wording = "reader") -> dict[str, dict[str, float]]:
    """Validate a DataFrame or Table with ``query_id, doc_id, score`` and build the run.

    Args:
        frame: The table; other columns are ignored.
        name: The source messages name.
        wording: See :data:`Wording`; what is rejected is the same either way.

    Returns:
        query_id -> doc_id -> score (float64, as given), each query's docs in row order.

    Raises:
        InputError: A column is missing, has the wrong type, or holds a bad value.
    """
    columns = run_columns(frame, name, wording)
    doc_ids = columns.doc_ids.to_pylist()
    scores = columns.scores.tolist()  # Python floats, not numpy scalars
    bounds = columns.starts.tolist()
    return {
        query_id: dict(zip(doc_ids[start:stop], scores[start:stop], strict=True))
        for query_id, start, stop in zip(columns.query_ids, bounds, bounds[1:], strict=False)
    }


def _run_table(frame: Any, name: str) -> pa.Table:
    table = as_table(frame, name)
    missing = [c for c in _REQUIRED if c not in table.column_names]
    if missing:
        raise InputError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
            source=name,
            expected="columns query_id, doc_id, score",
            found=f"columns {', '.join(table.column_names) or '(none)'}",
            hint="Rename the columns (e.g. qid -> query_id, docno -> doc_id)",
        )
    return table


def _has_duplicates(
    doc_ids: pa.Array, codes: npt.NDArray[np.int64], starts: npt.NDArray[np.int64]
) -> bool:
    """Whether a doc id repeats within a query (rows grouped by query, ``codes`` sorted)."""
    rows = int(starts[-1])
    cuts = np.unique(starts[np.searchsorted(starts, np.arange(0, rows, _DUPLICATE_BLOCK))])
    edges = [*cuts.tolist(), rows]
    for start, stop in itertools.pairwise(edges):
        if stop == start:
            continue
        block = doc_ids.slice(start, stop - start)
        if len(pc.unique(block)) == stop - start:
            continue  # every id of the block is distinct
        if codes[start] == codes[stop - 1]:
            return True  # one query
        local = pc.dictionary_encode(block)
        doc = local.indices.to_numpy(zero_copy_only=False)
        key = (codes[start:stop] - codes[start]) * len(local.dictionary) + doc
        key.sort()
        if (key[1:] == key[:-1]).any():
            return True
    return False


def _first_duplicate(
    query_ids: list[str], doc_ids: list[str], name: str, wording: Wording
) -> InputError:
    """The error naming the first row, in table order, that repeats an earlier one."""
    seen: dict[tuple[str, str], int] = {}
    for row, pair in enumerate(zip(query_ids, doc_ids, strict=True), start=1):
        first = seen.setdefault(pair, row)
        if first != row:
            return _duplicate(row, first, *pair, name, wording)
    raise AssertionError("no duplicate row")  # pragma: no cover - called only on one


def _duplicate(
    row: int, first: int, query_id: str, doc_id: str, name: str, wording: Wording
) -> InputError:
    if wording == "scorer":
        return _bad_row(
            row,
            "duplicate row",
            query_id,
            doc_id,
            f"the same doc again (rows {first} and {row})",
            name,
        )
    return InputError(
        f"row {row}: duplicate doc id {show(doc_id)} for query {show(query_id)}",
        source=name,
        expected="each doc id at most once per query",
        found=f"a second row (the first is row {first})",
        hint="Drop one (DataFrame.drop_duplicates); readers never keep the last one",
    )


def _bad_row(
    row: int, problem: str, query_id: str, doc_id: str, found: str, name: str
) -> InputError:
    return InputError(
        f"row {row}: {problem} for query {show(query_id)}, doc {show(doc_id)}",
        source=name,
        expected="a finite score and one row per doc and query",
        found=found,
        hint="Fix or drop the row; scores are never guessed",
    )


def as_table(frame: Any, name: str) -> pa.Table:
    if isinstance(frame, pa.Table):
        return frame
    if isinstance(frame, pd.DataFrame):
        try:
            return pa.Table.from_pandas(frame, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise InputError(
                "a column mixes value types",
                source=name,
                expected="string ids and numeric scores",
                found=str(err)[:200],
            ) from None
    raise InputError(
        "unsupported table",
        source=name,
        expected="a pandas DataFrame or pyarrow Table",
        found=type(frame).__name__,
    )


def _ids(column: pa.ChunkedArray, label: str, name: str) -> pa.Array:
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pa.types.is_integer(kind):
        column = column.cast(pa.string())
    elif not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise InputError(
            f"column {label} has the wrong type",
            source=name,
            expected="strings (or integers)",
            found=str(kind),
        )
    no_nulls(column, label, name)
    check_id_column(column, label, name)
    return column.combine_chunks()


def check_id_column(column: pa.Array | pa.ChunkedArray, label: str, name: str) -> None:
    """Refuse an id column holding a value over :data:`MAX_ID_CHARS` characters.

    Raises:
        InputError: The first such value, by row, quoted cut to a few hundred characters.
    """
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return  # integer ids are short; other types are refused by _ids
    # An id of at most MAX_ID_CHARS bytes has at most as many characters: counting bytes
    # reads only the offsets.
    if (pc.max(pc.binary_length(column)).as_py() or 0) <= MAX_ID_CHARS:
        return
    lengths = pc.utf8_length(column)
    longest = pc.max(lengths).as_py()
    if longest is None or longest <= MAX_ID_CHARS:
        return
    row = int(pc.index(pc.greater(lengths, MAX_ID_CHARS), True).as_py())
    # Only the start is copied out: the value may be hundreds of megabytes.
    start = pc.utf8_slice_codeunits(column.slice(row, 1), 0, 100)[0].as_py()
    what = label.replace("_", " ")
    raise long_id_error(what, start, name, row=row + 1, length=lengths[row].as_py())


def _numeric(column: pa.ChunkedArray, name: str) -> None:
    kind = column.type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        raise InputError(
            "column score is not numeric",
            source=name,
            expected="a float or integer column",
            found=str(kind),
            hint="Convert it, e.g. with pandas.to_numeric, and check what did not convert",
        )


def _scores(column: pa.ChunkedArray, name: str) -> npt.NDArray[np.float64]:
    _numeric(column, name)
    no_nulls(column, "score", name)
    values = column.cast(pa.float64()).to_numpy()
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise InputError(
            f"row {bad[0] + 1}: non-finite score",
            source=name,
            expected="finite scores",
            found=repr(float(values[bad[0]])),
        )
    return np.asarray(values, np.float64)


def _scorer_scores(
    column: pa.ChunkedArray, query_ids: pa.Array, doc_ids: pa.Array, name: str
) -> npt.NDArray[np.float64]:
    """Scores as float64; a missing one reads as NaN and is rejected with its query and doc."""
    _numeric(column, name)
    values = np.asarray(column.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        at = int(bad[0])
        found = f"{values[at]!r} (NaN also stands for a missing score)"
        query_id, doc_id = query_ids[at].as_py(), doc_ids[at].as_py()
        raise _bad_row(at + 1, "bad score", query_id, doc_id, found, name)
    return values


def no_nulls(column: pa.ChunkedArray, label: str, name: str) -> None:
    if column.null_count:
        row = int(pc.index(pc.is_null(column), True).as_py()) + 1
        raise InputError(
            f"row {row}: missing {label}",
            source=name,
            expected="a value in every row",
            found="null (a missing value, or NaN in a DataFrame)",
        )

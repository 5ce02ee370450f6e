"""Ranking the judged documents of a run given as columns (a DataFrame or Arrow table).

The doc ids are fingerprinted from the Arrow buffers rather than factorised, so a run of
millions of rows is checked for duplicates and matched to the judgments with integer sorts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mmbright_core.errors import InputError, show
from mmbright_core.io._columns import no_nulls
from mmbright_core.metrics._ranks import (
    NO_HITS,
    FloatArray,
    IntArray,
    batches,
    concatenate,
    rank_hits,
)
from mmbright_core.ranking import ranking_scores

_U64 = np.uint64
_MIX = (_U64(0x9E3779B97F4A7C15), _U64(0xC2B2AE3D27D4EB4F))
_LOW_BYTES = np.array([(1 << (8 * i)) - 1 for i in range(8)], dtype=np.uint64)


def _fingerprints(ids: pa.Array) -> npt.NDArray[np.uint64]:
    """A 64-bit fingerprint of each string, computed from its bytes alone.

    Equal ids always get equal prints. A print mixes the length with two 8-byte words read
    straight from the Arrow buffers (no per-id Python work, no hash table): the id's middle
    and last words, where ids such as ``physics/0a1b2c3d_12.txt`` differ; an id of up to 8
    bytes is read whole. Different ids can share a print, so callers treat a shared print
    as a candidate only and compare the ids themselves.
    """
    width = np.dtype(np.int64 if pa.types.is_large_string(ids.type) else np.int32)
    _, offsets_buffer, data_buffer = ids.buffers()
    offsets = np.frombuffer(offsets_buffer, width, len(ids) + 1, ids.offset * width.itemsize)
    offsets = offsets.astype(np.int64, copy=False)
    start, stop = offsets[:-1], offsets[1:]
    data = np.zeros(8, np.uint8) if data_buffer is None else np.frombuffer(data_buffer, np.uint8)
    if data.size < 8:  # so that at least one whole word can be read
        data = np.concatenate([data, np.zeros(8, np.uint8)])
    top = data.size - 8
    words = np.ndarray((top + 1,), np.uint64, data, 0, (1,))  # the 8 bytes at every offset
    length = stop - start
    last_at = stop - 8
    middle_at = start + last_at
    middle_at >>= 1
    short = np.flatnonzero(length < 8)
    if short.size:  # words would reach past a short id (even past the buffer): stay inside
        middle_at[short] = np.minimum(start[short], top)
        last_at[short] = 0
    prints = words[middle_at]
    if short.size:  # keep only the id's own bytes
        shift = ((start[short] - middle_at[short]) * 8).astype(np.uint64)
        prints[short] = (prints[short] >> shift) & _LOW_BYTES[length[short]]
    prints *= _MIX[0]
    last = words[last_at]
    last[short] = 0
    prints += last
    prints *= _MIX[1]
    prints += length.view(np.uint64)
    return prints


class ColumnRun:
    """A run given as a DataFrame or Table, validated and ranked with vectorised numpy.

    Rows of one query need not be adjacent. Queries are handled in blocks of about
    ``BLOCK_ROWS`` rows; within a block one integer sort of packed keys (query,
    fingerprint of the doc id, position) finds duplicate rows and the judged documents,
    with no hash table over millions of ids.
    """

    def __init__(self, frame: Any) -> None:
        queries, docs, scores = _columns(frame)
        self._queries = _id_array(queries, "query_id")
        self._docs = _id_array(docs, "doc_id")
        self._scores = _score_array(scores)
        if not np.isfinite(self._scores).all():
            row = int(np.flatnonzero(~np.isfinite(self._scores))[0])
            self._fail(
                row, "bad score", f"{self._scores[row]!r} (NaN also stands for a missing score)"
            )
        self._raw = self._scores  # as given: the oracle picks its top 100 on these
        self._scores = ranking_scores(self._scores)
        self._group()
        self.query_ids = frozenset(self._names)

    def _fail(self, row: int, problem: str, found: str) -> None:
        query_id, doc_id = self._queries[row].as_py(), self._docs[row].as_py()
        raise InputError(
            f"row {row + 1}: {problem} for query {show(query_id)}, doc {show(doc_id)}",
            source="run",
            expected="a finite score and one row per doc and query",
            found=found,
            hint="Fix or drop the row; scores are never guessed",
        )

    def _group(self) -> None:
        """Find each query's rows; reorder (stably) only when a query's rows are scattered."""
        n = len(self._queries)
        change = pc.not_equal(self._queries[1:], self._queries[:-1])
        starts = np.flatnonzero(np.r_[n > 0, change.to_numpy(zero_copy_only=False)])
        names = self._queries.take(pa.array(starts)).to_pylist()
        self._order: IntArray | None = None
        if len(set(names)) < len(names):
            encoded = pc.dictionary_encode(self._queries)
            codes = encoded.indices.to_numpy()
            names = encoded.dictionary.to_pylist()
            self._order = np.argsort(codes, kind="stable")
            sizes = np.bincount(codes, minlength=len(names))
            starts = np.cumsum(sizes) - sizes
        self._names: list[str] = names
        self._starts = starts.astype(np.int64)
        self._stops = np.r_[starts[1:], n].astype(np.int64)
        self._grouped = self._scores if self._order is None else self._scores[self._order]

    def rankings(self, query_ids: Iterable[str]) -> Iterator[tuple[list[str], FloatArray]]:
        """Each query's doc ids and scores as given: row order, full 64-bit precision."""
        segment_of = {name: s for s, name in enumerate(self._names)}
        for query_id in query_ids:
            s = segment_of[query_id]
            rows = np.arange(self._starts[s], self._stops[s])
            if self._order is not None:
                rows = self._order[rows]  # a stable grouping: the query's rows keep their order
            yield self._docs.take(pa.array(rows)).to_pylist(), self._raw[rows]

    def hits(
        self, present: Mapping[str, Mapping[str, int]], index: Mapping[str, int]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Check every block for duplicates and rank the judged documents the run retrieved.

        Returns:
            Parallel arrays: query index, 0-based rank, label.
        """
        segment_of = {name: s for s, name in enumerate(self._names)}
        judged: dict[int, list[tuple[str, int, int]]] = {}
        for query_id, judgments in present.items():
            entries = [(d, index[query_id], int(v)) for d, v in judgments.items()]
            judged[segment_of[query_id]] = entries
        sizes = (self._stops - self._starts).tolist()
        return concatenate([self._block(s0, s1, judged) for s0, s1 in batches(sizes)])

    def _block(
        self, s0: int, s1: int, judged: Mapping[int, list[tuple[str, int, int]]]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Validate queries ``s0:s1`` and rank their judged documents."""
        block = _Block(self, s0, s1)
        block.check_duplicates()
        entries = [(s - s0, e) for s in range(s0, s1) for e in judged.get(s, ())]
        if not entries:
            return NO_HITS
        segments = np.array([s for s, _ in entries], np.int64)
        owner, positions = block.locate(segments, [e[0] for s, e in entries])
        ranks = block.ranks(segments[owner], positions, [entries[o][1][0] for o in owner.tolist()])
        queries = np.array([entries[o][1][1] for o in owner.tolist()], np.int64)
        labels = np.array([entries[o][1][2] for o in owner.tolist()], np.int64)
        return queries, ranks, labels


class _Block:
    """Queries ``s0:s1`` of a :class:`ColumnRun`, addressed by position in the block."""

    def __init__(self, run: ColumnRun, s0: int, s1: int) -> None:
        self._run = run
        self.r0, r1 = int(run._starts[s0]), int(run._stops[s1 - 1])
        self.starts = run._starts[s0:s1] - self.r0
        self.stops = run._stops[s0:s1] - self.r0
        self.scores = run._grouped[self.r0 : r1]
        if run._order is None:
            self.rows = np.arange(self.r0, r1)
            self.docs = run._docs.slice(self.r0, r1 - self.r0)
        else:
            self.rows = run._order[self.r0 : r1]
            self.docs = run._docs.take(pa.array(self.rows))
        size = r1 - self.r0
        self.rbits = max(1, (size - 1).bit_length())
        self.fbits = 64 - self.rbits - max(1, (s1 - s0 - 1).bit_length())
        sizes = (self.stops - self.starts).astype(np.int64)
        keys = np.repeat(np.arange(s1 - s0, dtype=np.uint64), sizes)
        keys <<= _U64(self.rbits + self.fbits)
        prints = _fingerprints(self.docs) >> _U64(64 - self.fbits)
        keys |= prints << _U64(self.rbits)
        keys |= np.arange(size, dtype=np.uint64)
        keys.sort()
        self.keys = keys

    def positions(self, at: IntArray) -> IntArray:
        """Block positions stored in the low bits of the sorted keys at ``at``."""
        return (self.keys[at] & _U64((1 << self.rbits) - 1)).astype(np.int64)

    def check_duplicates(self) -> None:
        """Raise on two rows with the same doc id in one query (keys sharing a prefix)."""
        low = _U64((1 << self.rbits) - 1)
        same = np.flatnonzero((self.keys[1:] ^ self.keys[:-1]) <= low)
        if not same.size:
            return
        at = np.union1d(same, same + 1)
        positions = self.positions(at)
        docs = self.docs.take(pa.array(positions)).to_pylist()
        seen: dict[tuple[int, str], int] = {}
        for prefix, pos, doc in zip(
            (self.keys[at] >> _U64(self.rbits)).tolist(), positions.tolist(), docs, strict=True
        ):
            first = int(self.rows[seen.setdefault((prefix, doc), pos)])
            row = int(self.rows[pos])
            if first != row:
                rows = f"rows {min(first, row) + 1} and {max(first, row) + 1}"
                self._run._fail(max(first, row), "duplicate row", f"the same doc again ({rows})")

    def locate(self, segments: IntArray, docs: list[str]) -> tuple[IntArray, IntArray]:
        """Block positions of the given (query, doc) pairs; pairs not in the run are left out.

        Returns:
            The indices of the pairs found, and their positions.
        """
        prints = _fingerprints(pa.array(docs, pa.large_string())) >> _U64(64 - self.fbits)
        wanted = (segments.astype(np.uint64) << _U64(self.fbits)) | prints
        wanted <<= _U64(self.rbits)
        lo = np.searchsorted(self.keys, wanted, "left")
        counts = np.searchsorted(self.keys, wanted | _U64((1 << self.rbits) - 1), "right") - lo
        owner = np.repeat(np.arange(len(docs)), counts)
        positions = self.positions(
            np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(owner.size)
        )
        found = self.docs.take(pa.array(positions)).to_pylist()
        pairs = zip(owner.tolist(), found, strict=True)
        match = np.fromiter((d == docs[o] for o, d in pairs), bool, owner.size)
        return owner[match], positions[match]

    def ranks(self, segments: IntArray, positions: IntArray, docs: list[str]) -> IntArray:
        """0-based ranks of the given positions within their queries (the ranking rule)."""
        wanted = self.scores[positions]
        ranks, owners, at = rank_hits(self.scores, self.starts, self.stops, segments, wanted)
        if owners.size:
            # The ranking rule's tie-break: equal scores rank by doc id descending.
            tied = self.docs.take(pa.array(at)).to_pylist()
            for o, other in zip(owners.tolist(), tied, strict=True):
                ranks[o] += other > docs[o]
        return ranks


def _columns(frame: Any) -> tuple[pa.Array, pa.Array, pa.Array]:
    """The ``query_id``, ``doc_id`` and ``score`` columns, without copying where possible."""
    names = ("query_id", "doc_id", "score")
    if isinstance(frame, pd.DataFrame):
        found = [str(c) for c in frame.columns]
    elif isinstance(frame, pa.Table):
        found = frame.column_names
    else:
        raise InputError(
            "unsupported run",
            source="run",
            expected="a mapping query_id -> doc_id -> score, a pandas DataFrame or a pyarrow Table",
            found=type(frame).__name__,
        )
    absent = [c for c in names if c not in found]
    if absent:
        raise InputError(
            f"missing column {', '.join(absent)}",
            source="run",
            expected="columns query_id, doc_id, score",
            found=f"columns {', '.join(found) or '(none)'}",
        )
    try:
        columns = [
            frame.column(c) if isinstance(frame, pa.Table) else pa.array(frame[c]) for c in names
        ]
    except (pa.ArrowException, TypeError, ValueError) as err:
        raise InputError(
            "a column mixes value types",
            source="run",
            expected="string ids and numeric scores",
            found=str(err)[:200],
        ) from None
    queries, docs, scores = (_one_array(c) for c in columns)
    if len(queries) == 0:  # an empty frame's columns may have no type at all
        return pa.array([], pa.string()), pa.array([], pa.string()), pa.array([], pa.float64())
    return queries, docs, scores


def _one_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array; a one-chunk column is used as is (combine_chunks would copy)."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def _id_array(column: pa.Array, label: str) -> pa.Array:
    """An id column as an Arrow string array (integer ids read in decimal, as the readers do)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    if pa.types.is_integer(kind):
        column, kind = column.cast(pa.string()), pa.string()
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise InputError(
            f"column {label} has the wrong type",
            source="run",
            expected="strings",
            found=str(kind),
            hint="Convert it with .astype(str)",
        )
    no_nulls(column, label, "run")
    return column


def _score_array(column: pa.Array) -> FloatArray:
    """Scores as float64; a missing score becomes NaN, which the caller rejects by row."""
    if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
        raise InputError(
            "column score is not numeric",
            source="run",
            expected="a float or integer column",
            found=str(column.type),
            hint="Convert it, e.g. with pandas.to_numeric, and check what did not convert",
        )
    return np.asarray(column.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)

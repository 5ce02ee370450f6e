"""``evaluate``: trec_eval's measures over qrels and a run, from dicts or from columns.

Every measure of a query depends only on where its judged documents sit in the ranking,
so this module finds the rank of each judged document (never sorting a whole ranking)
and computes all measures from those ranks with numpy. The semantics are trec_eval's
(SPEC §4), checked against pytrec_eval to 1e-9 in the tests:

- Ranking: score descending, ties by doc id descending (:mod:`mmbright_core.ranking`).
- Relevant means a label of 1 or more. Gains are linear (the label itself); labels below
  1 add nothing, negative ones included (pytrec_eval gives them gain 0 as well).
- The ideal DCG comes from all the query's judgments, not from the retrieved list.
- A query with no judgment at all is dropped and counted (pytrec_eval's output is
  nondeterministic there); one whose judgments are all 0 scores 0 and is kept.
- ``missing="skip"`` averages over queries in both qrels and run (pytrec_eval and the
  official harness); ``"zero"`` also counts judged queries absent from the run as 0
  (trec_eval ``-c``, ir_measures). A query present with an empty ranking scores 0 in both.
- Scores are read as 64-bit floats and compared at float32 precision, as trec_eval holds
  them (:func:`mmbright_core.ranking.ranking_scores`): 1.0 and 1.0 + 1e-9 tie and the doc
  id decides, exactly as in trec_eval and pytrec_eval. SPEC §4's "compared as 64-bit
  floats" would rank such near-ties differently from the reference these scores must equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from numbers import Integral
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mmbright_core.errors import InputError
from mmbright_core.io._columns import _no_nulls
from mmbright_core.io._json import show
from mmbright_core.measures import FAMILIES, Measure, parse_measures
from mmbright_core.ranking import ranking_scores
from mmbright_core.types import EvalCounts, EvalResult, Missing, Qrels

RELEVANT = 1
"""The smallest label that counts as relevant for P, R, AP and RR (trec_eval's default)."""

ORACLE_DEPTH = 100
"""How much of the run the official harness's oracle re-sorts (SPEC §4)."""

_BLOCK_ROWS = 1 << 18
"""Rows ranked at a time (whole queries): large enough to amortise numpy's per-call cost,
small enough that the working arrays stay a few MB and are reused from block to block."""

_WHOLE_RANKING = np.iinfo(np.int64).max  # the cutoff of AP and RR written without one

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
_NO_HITS: tuple[IntArray, IntArray, IntArray] = (np.zeros(0, np.int64),) * 3


def evaluate(
    qrels: Qrels,
    run: Any,
    measures: Iterable[str | Measure] | str | Measure = ("nDCG@10",),
    missing: Missing = "skip",
) -> EvalResult:
    """Score a run against qrels with trec_eval's semantics.

    Args:
        qrels: query_id -> doc_id -> integer label.
        run: query_id -> doc_id -> score, or a pandas DataFrame / pyarrow Table with the
            columns ``query_id``, ``doc_id`` and ``score`` (the fast path).
        measures: Measure names or :class:`~mmbright_core.measures.Measure` values, or one.
        missing: ``"skip"`` or ``"zero"``: how judged queries absent from the run count.

    Returns:
        Per-query values, their means (NaN when no query was evaluated) and the counts.

    Raises:
        InputError: Bad labels, scores (NaN, infinite, not numbers), duplicate rows, a
            bad ``missing`` or a malformed measure; the message names query and doc.
        UnknownNameError: An unknown measure name.
    """
    wanted = parse_measures(measures)
    if missing not in ("skip", "zero"):
        raise InputError("bad missing rule", expected="'skip' or 'zero'", found=repr(missing))
    _check_qrels(qrels)
    source = _ColumnRun(run) if not isinstance(run, Mapping) else _DictRun(run)
    in_run = source.query_ids
    judged = [q for q, docs in qrels.items() if docs]
    evaluated = [q for q in judged if q in in_run or missing == "zero"]
    index = {q: i for i, q in enumerate(evaluated)}
    present = {q: qrels[q] for q in evaluated if q in in_run}
    found = _Found(evaluated, qrels, *source.hits(present, index))
    per_query: dict[str, dict[str, float]] = {}
    aggregate: dict[str, float] = {}
    for measure in wanted:
        values = _COMPUTE[measure.family](found, measure.cutoff or _WHOLE_RANKING)
        per_query[str(measure)] = dict(zip(evaluated, values.tolist(), strict=True))
        aggregate[str(measure)] = float(values.mean()) if values.size else math.nan
    counts = EvalCounts(
        evaluated=len(evaluated),
        dropped_empty_qrels=len(qrels) - len(judged),
        missing_from_run=sum(q not in in_run for q in judged),
        extra_in_run=len(in_run - qrels.keys()),
    )
    return EvalResult(per_query, aggregate, counts, missing, tuple(map(str, wanted)))


def _check_qrels(qrels: Qrels) -> None:
    """Reject qrels that trec_eval would: non-string ids, labels that are not integers."""
    if not isinstance(qrels, Mapping):
        raise InputError(
            "qrels must be a mapping",
            expected="query_id -> doc_id -> label",
            found=type(qrels).__name__,
        )
    for query_id, docs in qrels.items():
        # type() first: ABC isinstance checks (Mapping, Integral) cost a microsecond each.
        if not isinstance(query_id, str) or not (type(docs) is dict or isinstance(docs, Mapping)):
            raise InputError(
                "malformed qrels entry",
                source="qrels",
                expected="str query_id -> mapping of doc_id -> label",
                found=f"{query_id!r} -> {type(docs).__name__}",
            )
        for doc_id, label in docs.items():
            if not isinstance(doc_id, str) or (type(label) is not int and not _is_integer(label)):
                raise InputError(
                    f"bad judgment for query {show(query_id)}, doc {show(str(doc_id))}",
                    source="qrels",
                    expected="a str doc id and an integer label",
                    found=f"{doc_id!r}: {label!r}",
                    hint="Labels are integers, as in trec_eval qrels (cast with int())",
                )


def _is_integer(label: object) -> bool:
    return isinstance(label, Integral) and not isinstance(label, bool)


def _batches(sizes: list[int]) -> list[tuple[int, int]]:
    """Split consecutive queries into runs ``(first, stop)`` of about ``_BLOCK_ROWS`` rows."""
    batches: list[tuple[int, int]] = []
    first = rows = 0
    for i, size in enumerate(sizes):
        rows += size
        if rows >= _BLOCK_ROWS:
            batches.append((first, i + 1))
            first, rows = i + 1, 0
    if first < len(sizes):
        batches.append((first, len(sizes)))
    return batches


def _rank_hits(
    scores: FloatArray, starts: IntArray, stops: IntArray, segment: IntArray, wanted: FloatArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Rank documents by score within their queries, leaving exact ties to the caller.

    Args:
        scores: Several queries' scores, one after the other.
        starts: Where each query's scores start in ``scores``.
        stops: Where they stop.
        segment: For each document to rank, its query (an index into ``starts``).
        wanted: For each document to rank, its score.

    Returns:
        ``above``: for each document, how many scores of its query beat it; and parallel
        arrays ``(owner, at)``: the positions in ``scores`` holding the same score as
        document ``owner``, listed only where that score is shared (itself included), for
        the ranking rule's doc-id tie-break.
    """
    lengths = stops - starts
    if lengths.size and starts[0] == 0 and (lengths == lengths[0]).all():
        # All queries equally long (a top-k cut): compare whole rows at once.
        rows = scores[: stops[-1]].reshape(lengths.size, -1)[segment]
        above = np.count_nonzero(rows > wanted[:, None], axis=1).astype(np.int64)
        equal = rows == wanted[:, None]
        shared = np.flatnonzero(np.count_nonzero(equal, axis=1) > 1)
        owner, column = np.nonzero(equal[shared])
        return above, shared[owner], starts[segment[shared[owner]]] + column
    sizes = lengths[segment]
    owner = np.repeat(np.arange(segment.size), sizes)
    at = np.arange(owner.size) + np.repeat(starts[segment] - (np.cumsum(sizes) - sizes), sizes)
    values, mine = scores[at], wanted[owner]
    above = np.bincount(owner[values > mine], minlength=segment.size).astype(np.int64)
    equal = np.flatnonzero(values == mine)
    tied = (np.bincount(owner[equal], minlength=segment.size) > 1)[owner[equal]]
    return above, owner[equal[tied]], at[equal[tied]]


class _DictRun:
    """A run given as nested mappings: validated once, ranked a block of queries at a time."""

    def __init__(self, run: Mapping[str, Mapping[str, float]]) -> None:
        self._run = run
        self._scores: dict[str, FloatArray] = {}
        for query_id, ranking in run.items():
            if not isinstance(query_id, str) or not isinstance(ranking, Mapping):
                raise InputError(
                    "malformed run entry",
                    source="run",
                    expected="str query_id -> mapping of doc_id -> score",
                    found=f"{query_id!r} -> {type(ranking).__name__}",
                )
            self._scores[query_id] = _finite_scores(query_id, ranking)
        self.query_ids = run.keys()

    def hits(
        self, present: Mapping[str, Mapping[str, int]], index: Mapping[str, int]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Rank every judged document that the run retrieved.

        Returns:
            Parallel arrays: query index, 0-based rank, label.
        """
        query_ids = list(present)
        sizes = [len(self._scores[q]) for q in query_ids]
        parts = [self._batch(query_ids[a:b], present, index) for a, b in _batches(sizes)]
        return _concatenate(parts)

    def _batch(
        self,
        query_ids: list[str],
        present: Mapping[str, Mapping[str, int]],
        index: Mapping[str, int],
    ) -> tuple[IntArray, IntArray, IntArray]:
        rankings = [self._run[q] for q in query_ids]
        hits = [
            (s, d, index[q], int(v), rankings[s][d])
            for s, q in enumerate(query_ids)
            for d, v in present[q].items()
            if d in rankings[s]
        ]
        if not hits:
            return _NO_HITS
        segment, docs, queries, labels, wanted = (list(c) for c in zip(*hits, strict=True))
        sizes = np.array([len(r) for r in rankings], np.int64)
        stops = np.cumsum(sizes)
        scores = np.concatenate([self._scores[q] for q in query_ids])
        segments = np.array(segment, np.int64)
        ranks, owners, at = _rank_hits(
            scores, stops - sizes, stops, segments, ranking_scores(np.array(wanted, np.float64))
        )
        keys: dict[int, list[str]] = {}
        for o, s, p in zip(owners.tolist(), segments[owners].tolist(), at.tolist(), strict=True):
            # The ranking rule's tie-break: equal scores rank by doc id descending.
            tied = keys.setdefault(s, list(rankings[s]))[p - int(stops[s] - sizes[s])]
            ranks[o] += tied > docs[o]
        return np.array(queries, np.int64), ranks, np.array(labels, np.int64)


def _concatenate(
    parts: list[tuple[IntArray, IntArray, IntArray]],
) -> tuple[IntArray, IntArray, IntArray]:
    if not parts:
        return _NO_HITS
    q, r, lab = (np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(3))
    return q, r, lab


def _finite_scores(query_id: str, ranking: Mapping[str, float]) -> FloatArray:
    """One query's scores as float64, rejecting anything that is not a finite number."""
    try:
        # sum() rejects str and None, which np.fromiter would quietly turn into numbers/NaN.
        sum(ranking.values(), 0.0)
        scores = np.fromiter(ranking.values(), np.float64, len(ranking))
    except (TypeError, ValueError):
        scores = None
    if scores is not None and np.isfinite(scores).all():
        return ranking_scores(scores)
    doc_id, value = next(
        (d, v)
        for d, v in ranking.items()
        if isinstance(v, bool | str)
        or not isinstance(v, int | float | np.number)
        or not math.isfinite(float(v))
    )
    raise InputError(
        f"bad score for query {show(query_id)}, doc {show(str(doc_id))}",
        source="run",
        expected="a finite number",
        found=repr(value),
    )


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


class _ColumnRun:
    """A run given as a DataFrame or Table, validated and ranked with vectorised numpy.

    Rows of one query need not be adjacent. Queries are handled in blocks of about
    ``_BLOCK_ROWS`` rows; within a block one integer sort of packed keys (query,
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
        return _concatenate([self._block(s0, s1, judged) for s0, s1 in _batches(sizes)])

    def _block(
        self, s0: int, s1: int, judged: Mapping[int, list[tuple[str, int, int]]]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Validate queries ``s0:s1`` and rank their judged documents."""
        block = _Block(self, s0, s1)
        block.check_duplicates()
        entries = [(s - s0, e) for s in range(s0, s1) for e in judged.get(s, ())]
        if not entries:
            return _NO_HITS
        segments = np.array([s for s, _ in entries], np.int64)
        owner, positions = block.locate(segments, [e[0] for s, e in entries])
        ranks = block.ranks(segments[owner], positions, [entries[o][1][0] for o in owner.tolist()])
        queries = np.array([entries[o][1][1] for o in owner.tolist()], np.int64)
        labels = np.array([entries[o][1][2] for o in owner.tolist()], np.int64)
        return queries, ranks, labels


class _Block:
    """Queries ``s0:s1`` of a :class:`_ColumnRun`, addressed by position in the block."""

    def __init__(self, run: _ColumnRun, s0: int, s1: int) -> None:
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
        ranks, owners, at = _rank_hits(self.scores, self.starts, self.stops, segments, wanted)
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
    _no_nulls(column, label, "run")
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


class _Found:
    """Judged documents' ranks, and the judgments, as arrays over the evaluated queries.

    Attributes:
        n: The number of evaluated queries.
        query: For each judged document the run retrieved, its query's index.
        rank: Its 0-based rank.
        label: Its label. The three are sorted by query, then rank (trec_eval's order of
            summation).
        num_relevant: Per query, how many judgments are relevant.
    """

    def __init__(
        self, evaluated: list[str], qrels: Qrels, query: IntArray, rank: IntArray, label: IntArray
    ) -> None:
        self.n = len(evaluated)
        order = np.lexsort((rank, query))
        self.query, self.rank, self.label = query[order], rank[order], label[order]
        sizes = [len(qrels[q]) for q in evaluated]
        labels = np.fromiter(
            (v for q in evaluated for v in qrels[q].values()), np.int64, sum(sizes)
        )
        owner = np.repeat(np.arange(self.n), sizes)
        self.num_relevant = _sum_by(owner, (labels >= RELEVANT).astype(np.float64), self.n)
        # The ideal ranking: every judgment of the query, best label first (SPEC §4).
        self._ideal = _best_first(owner, labels)

    def relevant_hits(self) -> tuple[IntArray, IntArray]:
        keep = self.label >= RELEVANT
        return self.query[keep], self.rank[keep]

    def ideal(self, k: int) -> FloatArray:
        """Ideal DCG@k of each query."""
        return _dcg_at(*self._ideal, k, self.n)


def _best_first(query: IntArray, label: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Sort (query, label) pairs by query, then label descending; add positions in query."""
    order = np.lexsort((-label, query))
    query, label = query[order], label[order]
    return query, np.arange(query.size) - np.searchsorted(query, query), label


def _dcg_at(query: IntArray, position: IntArray, gain: IntArray, k: int, n: int) -> FloatArray:
    """Per-query DCG@k: linear gain over log2(rank + 1), labels below 1 adding nothing."""
    keep = (position < k) & (gain > 0)
    return _sum_by(query[keep], gain[keep] / np.log2(position[keep] + 2.0), n)


def _sum_by(query: IntArray, values: FloatArray, n: int) -> FloatArray:
    """Per-query sums, adding in array order (as trec_eval adds down the ranking)."""
    # astype: numpy returns integers when ``values`` is empty.
    return np.bincount(query, values, minlength=n).astype(np.float64)


def _ratio(top: FloatArray, bottom: FloatArray) -> FloatArray:
    return np.divide(top, bottom, out=np.zeros_like(top), where=bottom > 0)


def _ndcg(found: _Found, k: int) -> FloatArray:
    return _ratio(_dcg_at(found.query, found.rank, found.label, k, found.n), found.ideal(k))


def _oracle_ndcg(found: _Found, k: int) -> FloatArray:
    """The official harness's oracle: the run's top 100 re-sorted by label, then nDCG@k.

    The official code picks the top 100 with a sort on score alone (ties in dict order)
    and scores every other retrieved document 0, so a relevant document below rank 100
    can re-enter among the zeros by doc id; here the list is the top 100 under the
    ranking rule and nothing else, as the measure is defined.
    """
    top = found.rank < ORACLE_DEPTH
    return _ratio(
        _dcg_at(*_best_first(found.query[top], found.label[top]), k, found.n), found.ideal(k)
    )


def _in_top(found: _Found, k: int, relevant_only: bool) -> FloatArray:
    query, rank = found.relevant_hits() if relevant_only else (found.query, found.rank)
    keep = rank < k
    return _sum_by(query[keep], np.ones(np.count_nonzero(keep)), found.n)


def _precision(found: _Found, k: int) -> FloatArray:
    return _in_top(found, k, relevant_only=True) / k


def _recall(found: _Found, k: int) -> FloatArray:
    return _ratio(_in_top(found, k, relevant_only=True), found.num_relevant)


def _judged(found: _Found, k: int) -> FloatArray:
    return _in_top(found, k, relevant_only=False) / k


def _average_precision(found: _Found, k: int) -> FloatArray:
    query, rank = found.relevant_hits()
    nth = np.arange(query.size) - np.searchsorted(query, query) + 1.0
    keep = rank < k
    total = _sum_by(query[keep], nth[keep] / (rank[keep] + 1.0), found.n)
    return _ratio(total, found.num_relevant)


def _reciprocal_rank(found: _Found, k: int) -> FloatArray:
    query, rank = found.relevant_hits()
    first = np.r_[True, query[1:] != query[:-1]] if query.size else np.zeros(0, bool)
    first &= rank < k
    values = np.zeros(found.n)
    values[query[first]] = 1.0 / (rank[first] + 1.0)
    return values


_COMPUTE: dict[str, Callable[[_Found, int], FloatArray]] = {
    "nDCG": _ndcg,
    "P": _precision,
    "R": _recall,
    "AP": _average_precision,
    "RR": _reciprocal_rank,
    "Judged": _judged,
    "OracleNDCG": _oracle_ndcg,
}
if _COMPUTE.keys() != FAMILIES.keys():  # pragma: no cover - a registry edit missed here
    raise RuntimeError("every measure family needs a computation in metrics._COMPUTE")

__all__ = ["ORACLE_DEPTH", "RELEVANT", "evaluate"]

"""Ranking the judged documents of a run given as nested mappings (the dict path)."""

from __future__ import annotations

import itertools
import math
import operator
import struct
from collections.abc import Iterable, Iterator, Mapping

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import InputError, show
from mmbright_core.metrics.id_check import all_plain
from mmbright_core.ranking import ranking_scores

BLOCK_ROWS = 1 << 18
"""Rows ranked at a time (whole queries): large enough to amortise numpy's per-call cost,
small enough that the working arrays stay a few MB and are reused from block to block."""


IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
NO_HITS: tuple[IntArray, IntArray, IntArray] = (np.zeros(0, np.int64),) * 3


def batches(sizes: list[int]) -> list[tuple[int, int]]:
    """Split consecutive queries into runs ``(first, stop)`` of about ``BLOCK_ROWS`` rows."""
    batches: list[tuple[int, int]] = []
    first = rows = 0
    for i, size in enumerate(sizes):
        rows += size
        if rows >= BLOCK_ROWS:
            batches.append((first, i + 1))
            first, rows = i + 1, 0
    if first < len(sizes):
        batches.append((first, len(sizes)))
    return batches


def rank_hits(
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


class DictRun:
    """A run given as nested mappings: validated once, ranked a block of queries at a time."""

    def __init__(self, run: Mapping[str, Mapping[str, float]]) -> None:
        self._run = run
        self._scores: dict[str, FloatArray] = {}
        self.unusual: list[str] = []
        """The queries whose doc ids are not all printable ASCII (for the id check)."""
        for query_id, ranking in run.items():
            if not isinstance(query_id, str) or not isinstance(ranking, Mapping):
                raise InputError(
                    "malformed run entry",
                    source="run",
                    expected="str query_id -> mapping of doc_id -> score",
                    found=f"{query_id!r} -> {type(ranking).__name__}",
                )
            if not _plain_ids(query_id, ranking):
                self.unusual.append(query_id)
            self._scores[query_id] = _finite_scores(query_id, ranking)
        self.query_ids = run.keys()

    def rankings(self, query_ids: Iterable[str]) -> Iterator[tuple[list[str], FloatArray]]:
        """Each query's doc ids and scores as given: run order, full 64-bit precision."""
        for query_id in query_ids:
            yield list(self._run[query_id]), self._scores[query_id]

    def hits(
        self, present: Mapping[str, Mapping[str, int]], index: Mapping[str, int]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Rank every judged document that the run retrieved.

        Returns:
            Parallel arrays: query index, 0-based rank, label.
        """
        query_ids = list(present)
        sizes = [len(self._scores[q]) for q in query_ids]
        parts = [self._batch(query_ids[a:b], present, index) for a, b in batches(sizes)]
        return concatenate(parts)

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
            return NO_HITS
        segment, docs, queries, labels, wanted = (list(c) for c in zip(*hits, strict=True))
        sizes = np.array([len(r) for r in rankings], np.int64)
        stops = np.cumsum(sizes)
        scores = ranking_scores(np.concatenate([self._scores[q] for q in query_ids]))
        segments = np.array(segment, np.int64)
        ranks, owners, at = rank_hits(
            scores, stops - sizes, stops, segments, ranking_scores(np.array(wanted, np.float64))
        )
        # The ranking rule's tie-break: equal scores rank by doc id descending. The tied
        # documents' ids are read from each ranking in order, no further than the last.
        owner_query = segments[owners]
        position = at - (stops - sizes)[owner_query]
        order = np.lexsort((position, owner_query))
        tied = zip(
            owners[order].tolist(),
            owner_query[order].tolist(),
            position[order].tolist(),
            strict=True,
        )
        for s, group in itertools.groupby(tied, key=operator.itemgetter(1)):
            entries = list(group)
            ids = _ids_at(rankings[s], [p for _, _, p in entries])
            for (o, _, _), doc_id in zip(entries, ids, strict=True):
                ranks[o] += doc_id > docs[o]
        return np.array(queries, np.int64), ranks, np.array(labels, np.int64)


def _ids_at(ranking: Iterable[str], positions: list[int]) -> list[str]:
    """The ids at ``positions`` (ascending, repeats allowed) of ``ranking``."""
    ids: list[str] = []
    read, after = iter(ranking), 0
    doc_id = ""
    for p in positions:
        if p >= after:
            doc_id = next(itertools.islice(read, p - after, None))
            after = p + 1
        ids.append(doc_id)
    return ids


def concatenate(
    parts: list[tuple[IntArray, IntArray, IntArray]],
) -> tuple[IntArray, IntArray, IntArray]:
    if not parts:
        return NO_HITS
    q, r, lab = (np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(3))
    return q, r, lab


def _plain_ids(query_id: str, ranking: Mapping[str, float]) -> bool:
    """Whether one query's doc ids are all printable ASCII, refusing one that is not a str."""
    try:
        return all_plain(ranking)
    except TypeError:
        doc_id = next(d for d in ranking if not isinstance(d, str))
        raise InputError(
            f"bad doc id for query {show(query_id)}",
            source="run",
            expected="str doc ids",
            found=f"{doc_id!r} ({type(doc_id).__name__})",
            hint="Doc ids are strings, as in trec_eval runs (cast with str())",
        ) from None


def _finite_scores(query_id: str, ranking: Mapping[str, float]) -> FloatArray:
    """One query's scores as float64, rejecting anything that is not a finite number.

    They are kept at full precision (the oracle's top 100 is picked on them, as the
    official harness picks it); ranking rounds them to float32 where it compares them.
    """
    try:
        # sum() rejects str and None, which numpy would quietly turn into numbers/NaN;
        # struct then packs what it accepted as doubles (in C, faster than np.fromiter).
        sum(ranking.values(), 0.0)
        packed = struct.pack(f"{len(ranking)}d", *ranking.values())
        scores = np.frombuffer(packed, np.float64)
    except (TypeError, ValueError, struct.error):
        scores = None
    if scores is not None and np.isfinite(scores).all():
        return scores
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

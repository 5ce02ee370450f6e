"""Ranking the judged documents of a run given as a table (the columnar path).

A DataFrame or Arrow table is validated and grouped by query once, on its columns
(:func:`mmbright_core.io._columns.run_columns`); its judged documents are then found with one
hash look-up over the doc id column and ranked by :func:`~mmbright_core.metrics._ranks.rank_hits`,
as the mapping path ranks them. No Python object is made per row, only per judged document
the run retrieved and per document tied with one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mmbright_core.io._columns import RunColumns
from mmbright_core.metrics._ranks import NO_HITS, FloatArray, IntArray, batches, rank_hits
from mmbright_core.metrics.id_check import printable_ascii
from mmbright_core.ranking import ranking_scores


class TableRun:
    """A run given as validated columns: judged documents found and ranked in bulk."""

    def __init__(self, columns: RunColumns) -> None:
        self._columns = columns
        self._code = {query_id: i for i, query_id in enumerate(columns.query_ids)}
        self.query_ids = self._code.keys()

    def rankings(self, query_ids: Iterable[str]) -> Iterator[tuple[list[str], FloatArray]]:
        """Each query's doc ids and scores as given: table order, full 64-bit precision."""
        for query_id in query_ids:
            yield self._columns.query_docs(self._code[query_id])

    def unusual_docs(self) -> Iterator[tuple[str, list[str]]]:
        """Each query's doc ids that are not printable ASCII, found on the ids' bytes."""
        ids = self._columns.doc_ids
        _, offsets, data = ids.buffers()
        kind = np.int64 if pa.types.is_large_string(ids.type) else np.int32
        bounds = np.frombuffer(offsets, kind)[ids.offset : ids.offset + len(ids) + 1]
        if data is None or not len(ids):
            return
        text = np.frombuffer(data, np.uint8)[bounds[0] : bounds[-1]]
        if printable_ascii(text):  # almost every run
            return
        odd = np.flatnonzero((text < 0x20) | (text > 0x7E))
        # side="right": an empty id starts where the next one does and holds no byte.
        rows = np.unique(np.searchsorted(bounds[:-1] - bounds[0], odd, side="right") - 1)
        segments = np.searchsorted(self._columns.starts, rows, side="right") - 1
        by_query: dict[int, list[str]] = {}
        odd_ids = ids.take(pa.array(rows)).to_pylist()
        for segment, doc_id in zip(segments.tolist(), odd_ids, strict=True):
            by_query.setdefault(segment, []).append(doc_id)
        for segment, doc_ids in by_query.items():
            yield self._columns.query_ids[segment], doc_ids

    def retrieved(self, pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        wanted = set(pairs)
        if not wanted:
            return set()
        values = list({d for _, d in wanted})
        _, segment, value = self._look_up(values)
        query_ids = self._columns.query_ids
        found = zip(segment.tolist(), value.tolist(), strict=True)
        return wanted & {(query_ids[s], values[v]) for s, v in found}

    def _look_up(self, values: list[str]) -> tuple[IntArray, IntArray, IntArray]:
        """The rows holding one of ``values``: row, its query's position, which value."""
        columns = self._columns
        value_set = pa.array(values, columns.doc_ids.type)
        found = pc.fill_null(pc.index_in(columns.doc_ids, value_set=value_set), -1)
        found_at = found.to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(found_at >= 0)
        segment = np.searchsorted(columns.starts, rows, side="right") - 1
        return rows, segment, found_at[rows]

    def hits(
        self, present: Mapping[str, Mapping[str, int]], index: Mapping[str, int]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Rank every judged document that the run retrieved.

        Returns:
            Parallel arrays: query index, 0-based rank, label.
        """
        columns = self._columns
        judged = list({d for docs in present.values() for d in docs})
        if not judged or not columns.scores.size:
            return NO_HITS
        # Each judgment as one integer, (query, judged doc): a row is a hit when its own
        # (query, doc) pair is among them.
        slot = {d: j for j, d in enumerate(judged)}
        code = self._code
        pairs = np.fromiter(
            (code[q] * len(judged) + slot[d] for q, docs in present.items() for d in docs),
            np.int64,
        )
        values = np.fromiter((v for docs in present.values() for v in docs.values()), np.int64)
        by_pair = np.argsort(pairs)
        rows, segment, doc = self._look_up(judged)
        keys = segment * len(judged) + doc
        at = np.minimum(np.searchsorted(pairs, keys, sorter=by_pair), pairs.size - 1)
        hit = pairs[by_pair[at]] == keys
        if not hit.any():
            return NO_HITS
        rows, segment, judgment = rows[hit], segment[hit], by_pair[at[hit]]
        queries = np.array([index.get(q, -1) for q in columns.query_ids], np.int64)[segment]
        docs = [judged[j] for j in doc[hit].tolist()]
        ranks = self._ranks(ranking_scores(columns.scores), segment, rows, docs)
        return queries, ranks, values[judgment]

    def _ranks(
        self, scores: FloatArray, segment: IntArray, rows: IntArray, docs: list[str]
    ) -> IntArray:
        """The 0-based rank of each hit (at ``rows``, of query ``segment``), ties by doc id."""
        starts = self._columns.starts
        ranks = np.zeros(rows.size, np.int64)
        # Whole queries a block at a time bound the (hits x query length) comparisons.
        for first, stop in batches(np.diff(starts).tolist()):
            mine = np.flatnonzero((segment >= first) & (segment < stop))
            if not mine.size:
                continue
            low = starts[first]
            above, owners, at = rank_hits(
                scores[low : starts[stop]],
                starts[first:stop] - low,
                starts[first + 1 : stop + 1] - low,
                segment[mine] - first,
                scores[rows[mine]],
            )
            tied = self._columns.doc_ids.take(pa.array(at + low)).to_pylist()
            for owner, doc_id in zip(owners.tolist(), tied, strict=True):
                # The ranking rule's tie-break: equal scores rank by doc id descending.
                above[owner] += doc_id > docs[mine[owner]]
            ranks[mine] = above
        return ranks

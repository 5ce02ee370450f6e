"""The official harness's oracle run: where each relevant document lands in it.

The official ``calculate_retrieval_metrics`` (``src/retrievers/task1_text.py`` of
mm-bright/MM-BRIGHT, the function every task's ``EvaluationRunner._evaluate_domain`` calls)
builds its "Oracle NDCG@k" as follows, and this module reproduces it step by step:

1. It picks the run's top 100 with Python's ``sorted`` on the raw score, descending. That
   sort is stable, so documents of equal score keep the run's own order (dict order, the
   order of ``scores.json``); scores are compared as 64-bit floats.
2. It keeps *every* document of the run: one of that top 100 with a judgment gets its
   label as score, every other one gets 0.
3. It scores that run with pytrec_eval's ``ndcg_cut``. trec_eval ranks by score, then doc
   id descending, so the documents at 0 fall in doc-id order: a relevant document from
   below rank 100 can come back into the top k among them, and a judged document of
   label 0 in the top 100 sits among them too. A negative label, as a score, ranks it below
   every 0.

The ideal ranking is trec_eval's as ever (every judgment of the query); only the ranks of
relevant documents are needed, since nothing else adds gain.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np

from mmbright_core.metrics._ranks import NO_HITS, FloatArray, IntArray

ORACLE_DEPTH = 100
"""How much of the run the official oracle lifts to its labels (docs/protocol.md, Scoring)."""


class RankedSource(Protocol):
    """A run that can list each query's documents in its own order, scores as given."""

    def rankings(self, query_ids: Iterable[str]) -> Iterator[tuple[list[str], FloatArray]]: ...


def oracle_hits(
    source: RankedSource,
    present: Mapping[str, Mapping[str, int]],
    index: Mapping[str, int],
    depth: int = ORACLE_DEPTH,
) -> tuple[IntArray, IntArray, IntArray]:
    """Rank every relevant document of the run in the official oracle run.

    Args:
        source: The run.
        present: query_id -> judgments, for the evaluated queries the run holds.
        index: query_id -> its index among the evaluated queries.
        depth: How many of the run's best documents get their label as score.

    Returns:
        Parallel arrays sorted by query, then rank: query index, 0-based rank in the
        oracle run, label (every label is 1 or more).
    """
    rows: list[tuple[int, int, int]] = []
    for query_id, (doc_ids, scores) in zip(present, source.rankings(present), strict=True):
        i = index[query_id]
        hits = _one_query(doc_ids, scores, present[query_id], depth)
        rows.extend((i, rank, label) for rank, label in hits)
    if not rows:
        return NO_HITS
    query, rank, label = (np.array(c, np.int64) for c in zip(*rows, strict=True))
    order = np.lexsort((rank, query))
    return query[order], rank[order], label[order]


def _one_query(
    doc_ids: Sequence[str], scores: FloatArray, judged: Mapping[str, int], depth: int
) -> list[tuple[int, int]]:
    """(rank, label) of each relevant document of one query in its oracle run."""
    if len(doc_ids) <= depth:
        top = set(doc_ids)
    else:
        # Step 1: a stable sort on the negated raw scores is ``sorted(..., reverse=True)``.
        top = {doc_ids[i] for i in np.argsort(-scores, kind="stable")[:depth].tolist()}
    lifted = {d: v for d, v in judged.items() if v != 0 and d in top}
    # Scores above 0 rank first: label descending, then doc id descending (trec_eval).
    first = sorted(((v, d) for d, v in lifted.items() if v > 0), reverse=True)
    out = [(rank, label) for rank, (label, _) in enumerate(first)]
    rest = [d for d, v in judged.items() if v > 0 and d not in lifted]
    if not rest:
        return out
    ordered = sorted(doc_ids)
    for doc_id in rest:
        at = bisect_right(ordered, doc_id)
        if at == 0 or ordered[at - 1] != doc_id:
            continue  # not retrieved
        # Among the zeros it comes after every zero-scored id greater than its own.
        above = len(ordered) - at - sum(d > doc_id for d in lifted)
        out.append((len(first) + above, judged[doc_id]))
    return out

"""The one ranking rule: score descending, then doc id descending (trec_eval's order).

trec_eval sorts a query's documents by score and breaks ties by comparing doc ids with
``strcmp`` in descending order. It holds scores as 32-bit floats, so two scores that differ
only beyond float32 precision (1.0 and 1.0 + 1e-9) tie there and the doc id decides;
``ranking_score`` applies the same rounding so that rankings and scores here equal
trec_eval's and pytrec_eval's on any input. (docs/protocol.md, Scoring says scores are compared as
64-bit floats; that would rank such near-ties differently from trec_eval, the reference the scores
must equal, so this module follows trec_eval.) Python compares ``str`` by code point, which
orders UTF-8 encoded ids exactly as ``strcmp`` orders their bytes, so the two agree on any id. Every
place in the package that orders or cuts a run goes through this module (docs/protocol.md, Scoring,
and ranx's insertion-order tie-break as the peer pitfall this avoids).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping

import numpy as np
import numpy.typing as npt


def ranking_score(score: float) -> float:
    """Return a score at the precision trec_eval compares scores at (float32)."""
    return float(np.float32(score))


def ranking_scores(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return scores at the precision trec_eval compares them at (float32), as float64."""
    return scores.astype(np.float32).astype(np.float64)


def _key(item: tuple[str, float]) -> tuple[float, str]:
    return ranking_score(item[1]), item[0]


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Return ``(doc_id, score)`` pairs in ranking order.

    Args:
        scores: doc_id -> score for one query.

    Returns:
        The pairs sorted by score descending, ties by doc id descending.
    """
    return sorted(scores.items(), key=_key, reverse=True)


def rank_order(
    doc_ids: npt.NDArray[np.str_], scores: npt.NDArray[np.float64]
) -> npt.NDArray[np.intp]:
    """Return the indices that put parallel arrays in ranking order.

    Args:
        doc_ids: The doc ids (a numpy unicode array).
        scores: Their float64 scores.

    Returns:
        Indices ordering by score descending, ties by doc id descending.
    """
    # lexsort sorts ascending on the last key first; reversing an ascending
    # (score, doc_id) sort gives descending on both, matching ``ranked``.
    return np.lexsort((doc_ids, ranking_scores(scores)))[::-1]


def top_k(scores: Mapping[str, float], k: int, exclude: Collection[str] = ()) -> dict[str, float]:
    """Cut one query's scores to its best ``k``, after removing excluded ids.

    Exclusion happens before the cut, as the benchmark's protocol requires (docs/protocol.md,
    Per-task protocol), so an excluded document never takes the place of a legitimate one.

    Args:
        scores: doc_id -> score for one query.
        k: How many to keep.
        exclude: Doc ids to remove first.

    Returns:
        A dict of at most ``k`` entries, in ranking order.
    """
    kept = [(d, s) for d, s in scores.items() if d not in exclude] if exclude else scores.items()
    # nlargest with the ranking key keeps exactly the first k of ``ranked`` in O(n log k).
    return dict(heapq.nlargest(k, kept, key=_key))

"""Checking a reranker's answer and turning it into the reranked order of one query.

docs/protocol.md, "Two-stage runs": the top ``depth`` of the first stage is reordered by
the answer and everything below keeps its first-stage order beneath it. An answer that is
not usable (an order that is no permutation of the candidates, scores of the wrong number
or not finite, ranked positions out of range, twice or with a score that is not finite, a
reranker's own ``problem``) leaves the query in its first-stage order,
and the problem is recorded: never a silent reordering. Scores are written as ranks
(``n`` for the first of ``n`` documents down to 1), exact in float32, so the package's one
ranking rule (:mod:`mmbright_core.ranking`) gives back exactly this order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mmbright_core.rerank.base import Reranked


def checked_order(answer: Reranked, size: int) -> tuple[tuple[int, ...], str | None]:
    """Return the best-first order of ``size`` candidates an answer gives, and its problem.

    Args:
        answer: The reranker's answer.
        size: How many candidates it was given.

    Returns:
        A permutation of ``range(size)`` and None; or the identity and why the answer was
        unusable.
    """
    keep = tuple(range(size))
    if answer.problem is not None:
        return keep, answer.problem
    if answer.order is not None:
        if sorted(answer.order) != list(keep):
            return (
                keep,
                f"order is not a permutation of the {size} candidates: {_cut(answer.order)}",
            )
        return tuple(answer.order), None
    if answer.scores is not None:
        scores = answer.scores
        if len(scores) != size:
            return keep, f"{len(scores)} scores for {size} candidates"
        if not all(math.isfinite(s) for s in scores):
            return keep, f"scores that are not finite numbers: {_cut(scores)}"
        # Ties keep the first-stage order (a stable sort on the negated score).
        return tuple(sorted(keep, key=lambda i: -scores[i])), None
    if answer.ranked is not None:
        return _ranked_order(answer.ranked, size)
    return keep, None


def _ranked_order(
    ranked: Sequence[tuple[int, float]], size: int
) -> tuple[tuple[int, ...], str | None]:
    keep = tuple(range(size))
    positions = [i for i, _ in ranked]
    if len(set(positions)) != len(positions) or not all(0 <= i < size for i in positions):
        return keep, f"ranked positions that are not distinct candidates: {_cut(positions)}"
    if not all(math.isfinite(s) for _, s in ranked):
        return keep, f"scores that are not finite numbers: {_cut([s for _, s in ranked])}"
    # The ranked lead by score (ties in first-stage order); the rest follow in that order.
    head = [i for i, _ in sorted(ranked, key=lambda pair: (-pair[1], pair[0]))]
    chosen = set(head)
    return (*head, *(i for i in keep if i not in chosen)), None


def reranked_run(ranking: Sequence[str], order: Sequence[int]) -> dict[str, float]:
    """Return one query's reranked run: its top ``len(order)`` reordered, the rest beneath.

    Args:
        ranking: The first stage's doc ids, best first.
        order: The best-first order of the top ``len(order)`` positions.

    Returns:
        doc_id -> score, the scores being ranks (``len(ranking)`` down to 1).
    """
    head = [ranking[i] for i in order]
    ordered = [*head, *ranking[len(order) :]]
    return {doc_id: float(len(ordered) - at) for at, doc_id in enumerate(ordered)}


def _cut(values: Sequence[object], shown: int = 12) -> str:
    more = f", … ({len(values)} in all)" if len(values) > shown else ""
    return "[" + ", ".join(map(str, values[:shown])) + more + "]"

"""How one query's ranking changed between two runs: moved documents, Kendall tau, RBO.

Used to read the image effect (docs/protocol.md, Published numbers: adding query images often lowers
scores): which relevant documents left the top k, which non-relevant ones came in, and how similar
the two rankings are overall. Rankings follow the package's one rule (``mmbright_core.ranking``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mmbright_core.errors import InputError
from mmbright_core.ranking import ranked

RBO_P = 0.9
"""Persistence of rank-biased overlap: the top 10 carry about 86% of the weight."""

CHANGE_ORDER = (
    "relevant dropped",
    "relevant entered",
    "non-relevant entered",
    "non-relevant dropped",
    "unjudged entered",
    "unjudged dropped",
    "moved up",
    "moved down",
    "same rank",
)
"""The kinds of ``change``, in display order; a move within the top k is written with its
size ("moved up 2"), so that a changed rank never reads as kept."""


@dataclass(frozen=True)
class RankDiff:
    """The top-k of two rankings of one query, side by side.

    Attributes:
        k: The cut-off compared.
        docs: One row per document in the union of both top-k lists, with columns
            ``doc_id``, ``relevance`` (NaN if unjudged), ``rank_a`` and ``rank_b`` (1-based
            rank in each full run, NaN if absent), ``change`` (a kind of ``CHANGE_ORDER``:
            entering or leaving the top k, else "moved up 2", "moved down 1", "same rank")
            and ``move`` (the rank change from A to B in words, for every row: "moved up
            2", "same rank", "not in A", "not in B").
        kendall_tau: Kendall tau-b over the union of the two top-k lists.
        rbo: Rank-biased overlap of the two top-k lists (extrapolated, p = ``RBO_P``).
        judges_non_relevant: Whether the query's judgments name a non-relevant document
            (:func:`judges_non_relevant`, of all of them, not only those in ``docs``).
    """

    k: int
    docs: pd.DataFrame
    kendall_tau: float
    rbo: float
    judges_non_relevant: bool = False


def kendall_tau_b(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Kendall tau-b of two paired rankings (ties allowed), as ``scipy.stats.kendalltau``.

    Args:
        x: Ranks (or scores) of n items in the first ranking.
        y: Ranks of the same items in the second ranking.

    Returns:
        tau-b in [-1, 1]; NaN when either side is constant or n < 2.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(
            "Kendall tau needs two rankings of the same items", found=f"{a.shape}, {b.shape}"
        )
    upper = np.triu_indices(a.size, k=1)
    da = np.sign(a[:, None] - a[None, :])[upper]
    db = np.sign(b[:, None] - b[None, :])[upper]
    untied_a = float(np.count_nonzero(da))
    untied_b = float(np.count_nonzero(db))
    if untied_a == 0 or untied_b == 0:
        return math.nan
    return float(np.sum(da * db)) / math.sqrt(untied_a * untied_b)


def rbo(first: Sequence[str], second: Sequence[str], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap of two top lists (Webber, Moffat & Zobel 2010, eq. 32).

    The overlap at each depth is weighted by ``p**d``; beyond the shorter list the overlap
    is assumed to keep its last proportion, and beyond the longer one to stay constant.
    Identical lists give 1, disjoint lists 0.

    Args:
        first: Doc ids in ranking order (no duplicates).
        second: Doc ids in ranking order.
        p: Persistence, in (0, 1).

    Returns:
        RBO in [0, 1]; NaN when both lists are empty.
    """
    if not 0.0 < p < 1.0:
        raise InputError("RBO persistence must lie strictly between 0 and 1", found=str(p))
    short, long = (first, second) if len(first) <= len(second) else (second, first)
    s, n = len(short), len(long)
    if n == 0:
        return math.nan
    if s == 0:
        return 0.0
    overlap = _overlaps(short, long)  # X_d for d = 1..n, the short list cut at s
    depths = np.arange(1, n + 1, dtype=np.float64)
    weights = p**depths
    total = float(np.sum(overlap / depths * weights))
    tail = depths[s:]
    total += float(np.sum(overlap[s - 1] * (tail - s) / (s * tail) * weights[s:]))
    last = ((overlap[-1] - overlap[s - 1]) / n + overlap[s - 1] / s) * p**n
    return (1.0 - p) / p * total + float(last)


def _overlaps(short: Sequence[str], long: Sequence[str]) -> npt.NDArray[np.float64]:
    # X_d = |short[:min(d, s)] & long[:d]|, grown one depth at a time.
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    shared = 0
    out = np.empty(len(long))
    for depth, doc in enumerate(long):
        item = short[depth] if depth < len(short) else None
        if item is not None:
            shared += (item in seen_long) + (item == doc)
        shared += doc in seen_short
        if item is not None:
            seen_short.add(item)
        seen_long.add(doc)
        out[depth] = shared
    return out


def rank_diff(
    qrels: Mapping[str, int],
    run_a: Mapping[str, float],
    run_b: Mapping[str, float],
    k: int = 10,
) -> RankDiff:
    """Compare one query's rankings in runs A and B at cut-off ``k``.

    Kendall tau is taken over the union of the two top-k lists using each document's rank
    in the full run; a document absent from a run is tied below all of its ranked ones.

    Args:
        qrels: doc_id -> relevance for the query.
        run_a: doc_id -> score in run A (e.g. text only).
        run_b: doc_id -> score in run B (e.g. text + image).
        k: Cut-off.

    Returns:
        The side-by-side table and the two similarity measures.
    """
    if k < 1:
        raise InputError("the rank-diff cut-off must be positive", found=str(k))
    order_a = [doc for doc, _ in ranked(run_a)]
    order_b = [doc for doc, _ in ranked(run_b)]
    rank_a = {doc: i + 1 for i, doc in enumerate(order_a)}
    rank_b = {doc: i + 1 for i, doc in enumerate(order_b)}
    union = list(dict.fromkeys(order_a[:k] + order_b[:k]))
    docs = pd.DataFrame(
        {
            "doc_id": union,
            "relevance": [float(qrels[d]) if d in qrels else math.nan for d in union],
            "rank_a": [float(rank_a.get(d, math.nan)) for d in union],
            "rank_b": [float(rank_b.get(d, math.nan)) for d in union],
        }
    )
    docs["change"] = [_change(row, k) for row in docs.itertuples(index=False)]
    docs["move"] = [move_label(a, b) for a, b in zip(docs["rank_a"], docs["rank_b"], strict=True)]
    docs = docs.sort_values(["rank_b", "rank_a"], na_position="last", kind="stable")
    tau = kendall_tau_b(
        docs["rank_a"].fillna(len(order_a) + 1), docs["rank_b"].fillna(len(order_b) + 1)
    )
    return RankDiff(
        k,
        docs.reset_index(drop=True),
        tau,
        rbo(order_a[:k], order_b[:k]),
        judges_non_relevant(qrels),
    )


def move_label(rank_a: float, rank_b: float) -> str:
    """Say how a document's rank changed from run A to run B ("moved up 2", "not in B").

    Up means towards rank 1. NaN is a rank the run does not have.
    """
    if math.isnan(rank_a) or math.isnan(rank_b):
        return "not in A" if math.isnan(rank_a) else "not in B"
    shift = int(rank_a - rank_b)
    if shift == 0:
        return "same rank"
    return f"moved up {shift}" if shift > 0 else f"moved down {-shift}"


def pushed_down(docs: pd.DataFrame, k: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The relevant items B ranks lower than A did, and the items that took their place.

    Args:
        docs: A rank-diff table (``doc_id``, ``relevance``, ``rank_a``, ``rank_b``).
        k: The cut-off.

    Returns:
        ``(pushed, displacing)``: the judged-relevant items A had in its top ``k`` that B
        ranks lower (or not at all); the items not judged relevant that B puts in its top
        ``k`` above the lowest of them while A ranked them lower (or not at all).
    """
    relevant = docs["relevance"] > 0
    lower_b = docs["rank_b"].fillna(math.inf) > docs["rank_a"]
    pushed = docs.loc[relevant & lower_b & (docs["rank_a"] <= k)]
    if pushed.empty:
        return pushed, docs.iloc[0:0]
    floor = pushed["rank_b"].fillna(math.inf).max()
    rose = docs["rank_a"].fillna(math.inf) > docs["rank_b"]
    displacing = docs.loc[~relevant & rose & (docs["rank_b"] <= k) & (docs["rank_b"] < floor)]
    return pushed, displacing


def _change(row: Any, k: int) -> str:
    in_a = row.rank_a <= k  # NaN compares False: absent means not in the top k
    in_b = row.rank_b <= k
    if in_a and in_b:
        return move_label(row.rank_a, row.rank_b)
    # An unjudged document is not known to be non-relevant (the qrels hold no label for it).
    judged = "unjudged" if math.isnan(row.relevance) else "non-relevant"
    kind = "relevant" if row.relevance > 0 else judged
    return f"{kind} dropped" if in_a else f"{kind} entered"


def unjudged_lead(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> int:
    """How many unjudged documents a top ``k`` ranks above its first relevant document.

    A document absent from the query's qrels is unjudged; one judged 0 is non-relevant and
    is not counted. With no relevant document in the top ``k``, every unjudged one counts.

    Args:
        ranking: Doc ids in ranking order (after the protocol's exclusions).
        qrels: doc_id -> relevance for the query.
        k: Cut-off.
    """
    count = 0
    for doc in ranking[:k]:
        label = qrels.get(doc)
        if label is not None and label > 0:
            break
        count += label is None
    return count


def judgment_gap(
    qrels: Mapping[str, int],
    top_a: Sequence[str],
    top_b: Sequence[str],
    delta: float,
    k: int = 10,
    *,
    non_relevant_judged: bool | None = None,
) -> bool:
    """Whether B's loss on a query may be a gap in the judgments rather than a failure.

    Definition: B scores below A (``delta < 0``), the query's judgments name some
    non-relevant document (a label of 0 or below), and B's top ``k`` ranks more unjudged
    documents above its first relevant document than A's top ``k`` does
    (:func:`unjudged_lead`). The places B's relevant documents lost went to documents
    nobody assessed, which may be relevant: a judged non-relevant document moving up, or
    relevant ones reordered, is not a gap. Judgments that list only relevant documents (as
    MM-BRIGHT's qrels do) cannot tell a document nobody assessed from one found
    non-relevant: every other document is "unjudged", the rule would flag nearly every loss
    that pushes the first relevant document down, and so it flags none there.

    Args:
        qrels: doc_id -> relevance for the query.
        top_a: Run A's top ``k`` doc ids in order (after exclusions).
        top_b: Run B's top ``k`` doc ids in order.
        delta: B's measure minus A's for the query.
        k: Cut-off.
        non_relevant_judged: Whether the query's judgments name a non-relevant document,
            where ``qrels`` holds only some of them (a :class:`RankDiff`'s); by default,
            whether ``qrels`` does.
    """
    if non_relevant_judged is None:
        non_relevant_judged = judges_non_relevant(qrels)
    if delta >= 0 or not non_relevant_judged:
        return False
    return unjudged_lead(top_b, qrels, k) > unjudged_lead(top_a, qrels, k)


def judges_non_relevant(qrels: Mapping[str, int]) -> bool:
    """Whether judgments name a non-relevant document: only then is "unjudged" its own state."""
    return any(label <= 0 for label in qrels.values())

"""Exact inner-product search: one BLAS matrix product per block of queries, then a cut.

The scores are float32 inner products from numpy's ``sgemm``, computed in blocks of a fixed
shape: a block always has the same number of query rows (the last one padded with zeros), so
a query's scores never depend on which other queries were searched with it or how many
(BLAS picks other kernels, and other rounding, for one-row or tiny products). Each block's
score matrix stays under :data:`BLOCK_BYTES`.

The cut is exact under the ranking rule (:mod:`mmbright_core.ranking`): :func:`candidates`
keeps every position whose ranking value (the score x 100 rounded to float32) can reach the
k-th one, ties at the cut included, so that the rule applied to the candidates alone gives
the same top k as applied to the whole row. It finds them without sorting the row: a
threshold guessed from a strided sample, one comparison over the row, and a partition of
the few thousand positions above it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from mmbright_core.retrieval.groups import Groups

FloatRows = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

#: The most a block's score matrix may take (queries x corpus x 4 bytes).
BLOCK_BYTES = 128 * 2**20
#: Query rows per block, at most and at least: BLAS rounds 1-4-row products differently.
MAX_ROWS, MIN_ROWS = 64, 16
#: Sample positions per position kept, and the sample's spare (in standard deviations).
_SAMPLE_PER_KEPT, _SPARE_SIGMAS = 16, 5.0


def block_rows(corpus_size: int) -> int:
    """Return the query rows of every block for a corpus of ``corpus_size`` vectors."""
    return int(np.clip(BLOCK_BYTES // (4 * max(corpus_size, 1)), MIN_ROWS, MAX_ROWS))


def score_blocks(vectors: FloatRows, queries: FloatRows) -> Iterator[tuple[int, FloatRows]]:
    """Yield ``(first query, scores)`` per block: float32 inner products with every vector.

    Args:
        vectors: The ``(n, dim)`` float32 corpus, C-contiguous.
        queries: The ``(q, dim)`` float32 queries.

    Yields:
        The block's first query index and its ``(rows, n)`` scores (padding rows dropped);
        the array is the caller's to modify.
    """
    rows = block_rows(len(vectors))
    block = np.zeros((rows, vectors.shape[1]), dtype=np.float32)
    for start in range(0, len(queries), rows):
        stop = min(start + rows, len(queries))
        block[: stop - start] = queries[start:stop]
        block[stop - start :] = 0.0
        yield start, (block @ vectors.T)[: stop - start]


def candidates(row: FloatRows, k: int, margin: float = 0.0) -> IntArray:
    """Return, in corpus order, the positions that can enter the top ``k`` of ``row``.

    Positions scored ``-inf`` (removed by the caller) are never returned.

    Args:
        row: One query's float32 scores.
        k: How many the cut keeps.
        margin: How far below the k-th score a position is kept beyond the ranking rule's
            ties: twice the error bound of ``row`` when its scores are to be recomputed.

    Returns:
        Every live position whose ranking value is at least the k-th largest one (all of
        them when ``k`` or fewer are live).
    """
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    guess = _guess_threshold(row, k)
    found = np.flatnonzero(row >= guess)
    if len(found) < k:  # the guess was too high (or absent): look at the whole row
        guess = np.float32(-np.inf)
        found = np.flatnonzero(row > guess)
        if len(found) <= k:
            return found
    values = row[found]
    kth = np.partition(values, len(values) - k)[len(values) - k]
    if kth == -np.inf:
        return found[values > kth]
    # Scores within two float32 steps of the k-th can round to its ranking value (x 100 to
    # float32, mmbright_core.ranking); four steps is a margin that keeps every such tie.
    lower = kth - 4 * np.spacing(np.abs(kth)) - np.float32(margin)
    if lower < guess:
        return np.flatnonzero(row >= lower)
    return found[values >= lower]


def kept_documents(
    scores: FloatRows,
    removed: npt.ArrayLike,
    k: int,
    groups: Groups | None,
    exact: tuple[FloatRows, FloatRows, float] | None = None,
) -> tuple[IntArray, FloatRows]:
    """Return, in corpus order, the documents that can enter the top ``k``, and their scores.

    Args:
        scores: One query's float32 scores of every unit (overwritten: removed units -inf).
        removed: The document positions removed before the cut.
        k: How many documents the cut keeps.
        groups: How units expand into documents (None: units are the documents).
        exact: ``(vectors, query, error)`` to return the units' :func:`exact_scores`
            instead of ``scores``, which are then taken to be off by at most ``error``.

    Returns:
        Document positions, ascending, and their float32 scores.
    """
    removed = np.unique(np.asarray(removed, dtype=np.int64))
    margin = 0.0 if exact is None else 2 * exact[2]
    if groups is None:
        scores[removed] = -np.inf
        units = candidates(scores, k, margin)
        return units, _unit_scores(scores, units, exact)
    scores[_emptied_units(groups, removed)] = -np.inf
    units = candidates(scores, k, margin)
    values = _unit_scores(scores, units, exact)
    docs, where = groups.expand(units)
    kept = ~np.isin(docs, removed)
    order = np.argsort(docs[kept], kind="stable")  # corpus order, for ties at the cut
    return docs[kept][order], values[where][kept][order]


def _unit_scores(
    scores: FloatRows, units: IntArray, exact: tuple[FloatRows, FloatRows, float] | None
) -> FloatRows:
    return scores[units] if exact is None else exact_scores(exact[0], exact[1], units)


def exact_scores(vectors: FloatRows, query: FloatRows, positions: IntArray) -> FloatRows:
    """The inner products of ``query`` with ``vectors[positions]``, the same wherever they are.

    A BLAS product rounds a score by the position of its row and column in the product (with
    OpenBLAS 0.3.31's Haswell kernel, rows 6-11 of each 12-row tile differ from rows 0-5 in
    the last bit), so its scores depend on the queries searched together and on the block
    shape. Here each product of two float32 components is exact in float64, the products are
    summed in float64 component by component in one fixed order, and the sum is rounded to
    float32: the score of a pair of vectors never depends on anything else.
    """
    products = np.ascontiguousarray(vectors[positions].T, dtype=np.float64)
    products *= query.astype(np.float64)[:, None]
    total = np.zeros(len(positions), dtype=np.float64)
    for component in products:  # one fixed order of addition for every score
        total += component
    return total.astype(np.float32)


def error_bound(vectors: FloatRows, queries: FloatRows) -> FloatRows:
    """Per query, a bound on how far any float32 product score lies from the exact one.

    ``|fl(q . v) - q . v| <= gamma_n |q| |v|`` with ``gamma_n = n u / (1 - n u)``, ``u = 2^-24``,
    for any order of summation (Higham, Accuracy and Stability of Numerical Algorithms, 3.1);
    the float32 rounding of the exact score adds half a step, counted by the cut's margin.
    """
    unit = 2.0**-24
    n = vectors.shape[1] + 1
    gamma = n * unit / (1 - n * unit)
    longest = float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max(initial=0.0)))
    lengths = np.sqrt(np.einsum("ij,ij->i", queries, queries).astype(np.float64))
    return (gamma * 1.01 * lengths * longest).astype(np.float32)  # 1 %: the norms' rounding


def _emptied_units(groups: Groups, removed: IntArray) -> IntArray:
    # Units all of whose documents are removed: each remaining unit then brings at least one
    # document, so the k best units hold the k best documents (and all their ties).
    units, counts = np.unique(groups.unit_of_doc[removed], return_counts=True)
    return units[counts >= groups.offsets[units + 1] - groups.offsets[units]]


def _guess_threshold(row: FloatRows, k: int) -> np.float32:
    # A value that about (k + 5 sigma) / k times k positions exceed, read off a strided sample;
    # -inf when the row is too short for a sample to pay. Only speed depends on it.
    stride = len(row) // (_SAMPLE_PER_KEPT * k)
    if stride < 2:
        return np.float32(-np.inf)
    sample = row[::stride]
    expected = len(sample) * k / len(row)
    rank = min(len(sample), int(expected + _SPARE_SIGMAS * np.sqrt(expected)) + 4)
    return np.float32(np.partition(sample, len(sample) - rank)[len(sample) - rank])


def exact_search(vectors: FloatRows, queries: FloatRows, n: int) -> tuple[FloatRows, IntArray]:
    """Return the ``n`` best inner products and their positions per query, best first.

    Args:
        vectors: The ``(N, dim)`` float32 corpus, C-contiguous, ``n <= N``.
        queries: The ``(q, dim)`` float32 queries.
        n: How many to return per query.

    Returns:
        ``(q, n)`` scores and positions; equal scores in corpus order.
    """
    scores = np.empty((len(queries), n), dtype=np.float32)
    positions = np.empty((len(queries), n), dtype=np.int64)
    for start, block in score_blocks(vectors, queries):
        for row, values in enumerate(block, start):
            kept = candidates(values, n)
            best = kept[np.argsort(-values[kept], kind="stable")[:n]]
            scores[row], positions[row] = values[best], best
    return scores, positions

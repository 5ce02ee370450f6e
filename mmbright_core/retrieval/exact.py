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
    from mmbright_core.retrieval.index import Groups

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


def candidates(row: FloatRows, k: int) -> IntArray:
    """Return, in corpus order, the positions that can enter the top ``k`` of ``row``.

    Positions scored ``-inf`` (removed by the caller) are never returned.

    Args:
        row: One query's float32 scores.
        k: How many the cut keeps.

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
    lower = kth - 4 * np.spacing(np.abs(kth))
    if lower < guess:
        return np.flatnonzero(row >= lower)
    return found[values >= lower]


def kept_documents(
    scores: FloatRows, removed: npt.ArrayLike, k: int, groups: Groups | None
) -> tuple[IntArray, FloatRows]:
    """Return, in corpus order, the documents that can enter the top ``k``, and their scores.

    Args:
        scores: One query's float32 scores of every unit (overwritten: removed units -inf).
        removed: The document positions removed before the cut.
        k: How many documents the cut keeps.
        groups: How units expand into documents (None: units are the documents).

    Returns:
        Document positions, ascending, and their float32 scores.
    """
    removed = np.unique(np.asarray(removed, dtype=np.int64))
    if groups is None:
        scores[removed] = -np.inf
        docs = candidates(scores, k)
        return docs, scores[docs]
    scores[_emptied_units(groups, removed)] = -np.inf
    units = candidates(scores, k)
    docs, where = groups.expand(units)
    kept = ~np.isin(docs, removed)
    order = np.argsort(docs[kept], kind="stable")  # corpus order, for ties at the cut
    return docs[kept][order], scores[units][where][kept][order]


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

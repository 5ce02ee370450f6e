"""Exact inner-product search: BLAS finds the candidates, exactly rounded products score them.

A query's score of a vector is their exact inner product rounded to the nearest float32
(:meth:`ExactCorpus.rescore`): a function of the two vectors alone, whatever other queries
are searched with it, however the queries are blocked, and on any BLAS or CPU. BLAS's float32
``sgemm`` cannot give that: it rounds a row differently by its place in the product's
register tiles, by the product's number of rows and by its thread count.

The ``sgemm`` product (one per block of queries, each block's score matrix under
:data:`BLOCK_BYTES`) only chooses which units to score again. Its error is bounded
(:meth:`ExactCorpus.error`), so :func:`candidates` widens its cut by that bound: it keeps every
position whose score can reach the k-th one under the ranking rule
(:mod:`mmbright_core.ranking`: the score x 100 rounded to float32, ties at the cut included),
and the rule applied to their re-scored values alone gives the same top k as applied to the
whole re-scored row. It finds them without sorting the row: a threshold guessed from a strided
sample, one comparison over the row, and a partition of the few thousand positions above it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from mmbright_core.retrieval.search.groups import Groups

FloatRows = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: The most a block's score matrix may take (queries x corpus x 4 bytes).
BLOCK_BYTES = 128 * 2**20
#: Query rows per block at most: larger products gain little more from BLAS.
MAX_ROWS = 256
#: Sample positions per position kept, and the sample's spare (in standard deviations).
_SAMPLE_PER_KEPT, _SPARE_SIGMAS = 16, 5.0
#: float32's and float64's unit roundoffs, and float32's smallest normal number (below it
#: BLAS may flush to zero).
_UNIT, _WIDE_UNIT, _TINY = 2.0**-24, 2.0**-53, float(np.finfo(np.float32).tiny)


@dataclass(frozen=True)
class ExactCorpus:
    """The vectors the exact search scores, and a bound on their L2 norms.

    Attributes:
        vectors: The ``(n, dim)`` float32 corpus, C-contiguous.
        norm: At least the largest L2 norm of its rows.
    """

    vectors: FloatRows
    norm: float

    @classmethod
    def of(cls, vectors: FloatRows) -> ExactCorpus:
        """Wrap ``vectors`` (float32, C-contiguous) with a bound on their norms."""
        dim = vectors.shape[1]
        # float32 sums of squares, in any order, err by at most gamma_dim of their value
        # (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5), plus
        # what underflow takes from squares below the smallest normal; the last factor covers
        # the float64 square root.
        squares = float(np.einsum("ij,ij->i", vectors, vectors).max(initial=0.0))
        bound = (squares + dim * _TINY) / (1 - _gamma(dim))
        return cls(vectors, float(np.sqrt(bound)) * (1 + 2.0**-20))

    def error(self, query: FloatRows) -> float:
        """Return a bound on how far any ``sgemm`` score of ``query`` lies from its re-score.

        The float32 product errs from the exact inner product by at most gamma_dim times the
        sum of the products' magnitudes (Higham, eq. 3.5), at most ``|query| * norm``
        (Cauchy-Schwarz); the re-score (:meth:`rescore`) by half a float32 step, at most one
        unit roundoff of the same. The last term bounds what flushing subnormal numbers to
        zero can take, in the product or its sums.
        """
        dim = len(query)
        magnitude = _length(query) * self.norm * (1 + 2.0**-20)
        return (_gamma(dim) + _UNIT) * magnitude + dim * _TINY * (2 + _length(query) + self.norm)

    def rescore(self, query: FloatRows, positions: IntArray) -> FloatRows:
        """Return the float32 nearest to each exact inner product of ``query`` with ``positions``.

        Each product of two float32 components is exact in float64 (48 significant bits of
        53); their float64 sum, in whatever order BLAS takes, lies within gamma_dim (float64)
        of their magnitudes' sum of the exact value. Where no float32 rounding boundary lies
        that close, the sum rounded to float32 is the exact value rounded to float32 (to
        nearest, ties to even); elsewhere (rarely) the exact value is rounded from an exact
        sum (:func:`_nearest_float32`). A score is thus a function of its two vectors alone:
        never of the other positions, their number, the block of queries, BLAS or the CPU.
        """
        rows = self.vectors[positions].astype(np.float64)
        wide = query.astype(np.float64)
        near = rows @ wide
        nearest = near.astype(np.float32)
        # Two terms more than the sum has cover the rounding of ``near`` +- the bound.
        slack = _gamma(len(query) + 2, _WIDE_UNIT)
        unsure = np.flatnonzero(_straddles(near, nearest, slack * _length(query) * self.norm))
        if len(unsure):  # the same test with each sum's own magnitudes (computed in float64)
            magnitude = np.abs(rows[unsure]) @ np.abs(wide) / (1 - slack)
            unsure = unsure[_straddles(near[unsure], nearest[unsure], slack * magnitude)]
        for position in unsure.tolist():
            nearest[position] = _nearest_float32((rows[position] * wide).tolist())
        return nearest


def _gamma(terms: int, unit: float = _UNIT) -> float:
    # Higham's gamma_n = n u / (1 - n u): the relative error bound of an n-term sum.
    return terms * unit / (1 - terms * unit)


def _length(query: FloatRows) -> float:
    # The query's L2 norm, from float64 squares (its error is far below the 2**-20 margins).
    wide = query.astype(np.float64)
    return float(np.sqrt(wide @ wide))


def _straddles(
    near: npt.NDArray[np.float64], nearest: FloatRows, slack: float | npt.NDArray[np.float64]
) -> BoolArray:
    # Whether a float32 rounding boundary (the midpoint of ``nearest`` and a neighbour) lies
    # within ``slack`` of ``near``; those midpoints are exact in float64.
    wide = nearest.astype(np.float64)
    low = (wide + np.nextafter(nearest, np.float32(-np.inf))) / 2
    high = (wide + np.nextafter(nearest, np.float32(np.inf))) / 2
    return np.asarray((near - slack <= low) | (near + slack >= high))


def _nearest_float32(products: list[float]) -> np.float32:
    # fsum rounds the exact sum to float64 once (Shewchuk's algorithm); rounding that to
    # float32 rounds the exact sum, unless the float64 sum is itself a float32 midpoint: then
    # the sign of what fsum rounded away (an exact sum again) says which side the sum is on.
    total = math.fsum(products)
    nearest = np.float32(total)
    for other in (
        np.nextafter(nearest, np.float32(-np.inf)),
        np.nextafter(nearest, np.float32(np.inf)),
    ):
        middle = (float(nearest) + float(other)) / 2
        if total == middle:
            rest = math.fsum([*products, -middle])
            if rest != 0:
                return max(nearest, other) if rest > 0 else min(nearest, other)
    return nearest


def block_rows(corpus_size: int) -> int:
    """Return the query rows of every block for a corpus of ``corpus_size`` vectors."""
    return int(np.clip(BLOCK_BYTES // (4 * max(corpus_size, 1)), 1, MAX_ROWS))


def score_blocks(vectors: FloatRows, queries: FloatRows) -> Iterator[tuple[int, FloatRows]]:
    """Yield ``(first query, scores)`` per block: float32 ``sgemm`` products with every vector.

    These scores only choose the candidates (:func:`candidates`, within
    :meth:`ExactCorpus.error` of the re-scored values); their last bits depend on the block.

    Args:
        vectors: The ``(n, dim)`` float32 corpus, C-contiguous.
        queries: The ``(q, dim)`` float32 queries.

    Yields:
        The block's first query index and its ``(rows, n)`` scores, the caller's to modify.
    """
    rows = block_rows(len(vectors))
    for start in range(0, len(queries), rows):
        yield start, queries[start : start + rows] @ vectors.T


def candidates(row: FloatRows, k: int, error: float = 0.0) -> IntArray:
    """Return, in corpus order, the positions that can enter the top ``k`` of ``row``.

    Positions scored ``-inf`` (removed by the caller) are never returned.

    Args:
        row: One query's float32 scores.
        k: How many the cut keeps.
        error: How far each score may lie from the value the cut is made on (0: none).

    Returns:
        Every live position whose ranking value can be at least the k-th largest one once
        every score is moved by up to ``error`` (all of them when ``k`` or fewer are live).
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
    lower = _lowest_rival(kth, error)
    if lower < guess:
        return np.flatnonzero(row >= lower)
    return found[values >= lower]


def _lowest_rival(kth: np.float32, error: float) -> np.float32:
    # The k-th value is at least kth - error. Values within two float32 steps of it can round
    # to its ranking value (x 100 to float32, mmbright_core.ranking); four steps is a margin
    # that keeps every such tie. A score may lie ``error`` above its value: below the result,
    # none can reach the cut. Rounded down to float32, the row's precision.
    step = float(np.spacing(np.float32(abs(float(kth)) + error)))
    lower = float(kth) - 2 * error - 4 * step
    bound = np.float32(lower)
    return bound if float(bound) <= lower else np.nextafter(bound, np.float32(-np.inf))


def kept_documents(
    corpus: ExactCorpus,
    query: FloatRows,
    scores: FloatRows,
    removed: npt.ArrayLike,
    k: int,
    groups: Groups | None,
) -> tuple[IntArray, FloatRows]:
    """Return, in corpus order, the documents that can enter the top ``k``, and their scores.

    Args:
        corpus: The scored vectors.
        query: The query vector.
        scores: Its ``sgemm`` scores of every unit (overwritten: removed units -inf).
        removed: The document positions removed before the cut.
        k: How many documents the cut keeps.
        groups: How units expand into documents (None: units are the documents).

    Returns:
        Document positions, ascending, and their re-scored float32 scores
        (:meth:`ExactCorpus.rescore`).
    """
    removed = np.unique(np.asarray(removed, dtype=np.int64))
    error = corpus.error(query)
    if groups is None:
        scores[removed] = -np.inf
        docs = candidates(scores, k, error)
        return docs, corpus.rescore(query, docs)
    scores[_emptied_units(groups, removed)] = -np.inf
    units = candidates(scores, k, error)
    docs, where = groups.expand(units)
    kept = ~np.isin(docs, removed)
    order = np.argsort(docs[kept], kind="stable")  # corpus order, for ties at the cut
    return docs[kept][order], corpus.rescore(query, units)[where][kept][order]


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


def exact_search(corpus: ExactCorpus, queries: FloatRows, n: int) -> tuple[FloatRows, IntArray]:
    """Return the ``n`` best inner products and their positions per query, best first.

    Args:
        corpus: The ``N`` scored vectors, ``n <= N``.
        queries: The ``(q, dim)`` float32 queries.
        n: How many to return per query.

    Returns:
        ``(q, n)`` re-scored inner products (:meth:`ExactCorpus.rescore`) and positions;
        equal scores in corpus order.
    """
    scores = np.empty((len(queries), n), dtype=np.float32)
    positions = np.empty((len(queries), n), dtype=np.int64)
    for start, block in score_blocks(corpus.vectors, queries):
        for row, values in enumerate(block, start):
            kept = candidates(values, n, corpus.error(queries[row]))
            exact = corpus.rescore(queries[row], kept)
            best = np.argsort(-exact, kind="stable")[:n]
            scores[row], positions[row] = exact[best], kept[best]
    return scores, positions

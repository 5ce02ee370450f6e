"""Top-k selection under the ranking rule: over full score arrays, exactly, and through faiss.

Every cut here removes the query's excluded documents *before* counting to ``k`` (docs/protocol.md,
Fusion rules) and orders ties by doc id descending (:mod:`mmbright_core.ranking`), including ties
that straddle the cut. The exact (``flat``) search scores every unit with one BLAS matrix product
per block of queries and scores the candidates again, exactly rounded, so that a score depends
on its two vectors alone (:mod:`mmbright_core.retrieval.search.exact`); faiss serves the approximate
indexes (:mod:`mmbright_core.retrieval.search.approximate`), where the search keeps asking for more
until the ``k``-th kept score is strictly above everything it has not seen. Task 4 pairs
share their passage's text embedding or BM25 score;
:class:`~mmbright_core.retrieval.search.groups.Groups` maps one indexed unit (a passage) to its
documents (its pairs), so a passage is scored once and expanded afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import InputError
from mmbright_core.ranking import rank_order, ranking_scores
from mmbright_core.retrieval.search.approximate import faiss_index, settled_candidates
from mmbright_core.retrieval.search.exact import (
    ExactCorpus,
    exact_search,
    kept_documents,
    score_blocks,
)
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.types import TaskData

IndexKind = Literal["flat", "hnsw", "ivf"]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def doc_positions(doc_ids: Sequence[str]) -> dict[str, int]:
    """Return doc_id -> position, for turning excluded ids into indices."""
    return {doc_id: i for i, doc_id in enumerate(doc_ids)}


def excluded_indices(
    query_ids: Sequence[str], excluded: Mapping[str, frozenset[str]], positions: Mapping[str, int]
) -> list[IntArray]:
    """Return, per query, the corpus positions of its excluded ids (absent ids are ignored)."""
    out = []
    for query_id in query_ids:
        found = [positions[d] for d in excluded.get(query_id, ()) if d in positions]
        out.append(np.array(sorted(found), dtype=np.int64))
    return out


def top_k_array(
    doc_ids: npt.NDArray[np.str_],
    scores: FloatArray,
    k: int,
    exclude: IntArray | None = None,
) -> dict[str, float]:
    """Cut one query's full score array to its best ``k`` under the ranking rule.

    Args:
        doc_ids: Every document's id (a numpy unicode array).
        scores: Their scores, parallel to ``doc_ids``.
        k: How many to keep.
        exclude: Positions removed before the cut.

    Returns:
        doc_id -> score for at most ``k`` documents, in ranking order.
    """
    keep = np.ones(len(scores), dtype=bool)
    if exclude is not None and len(exclude):
        keep[exclude] = False
    candidates = np.flatnonzero(keep)
    if len(candidates) > k:
        values = ranking_scores(scores[candidates].astype(np.float64))  # the rule's precision
        kth = np.partition(values, len(values) - k)[len(values) - k]
        above = values > kth
        # Ties at the cut: the official code sorts the whole corpus with Python's stable
        # sort and keeps the first k, so the earliest tied documents in corpus order get in
        # (BRIGHT retrievers.py get_scores); the ranking rule then orders what was kept.
        tied = np.flatnonzero(values == kth)[: k - int(above.sum())]
        above[tied] = True
        candidates = candidates[above]
    order = candidates[rank_order(doc_ids[candidates], scores[candidates].astype(np.float64))]
    # tolist() makes the str and float objects in one pass (indexing numpy scalars is slower).
    return dict(zip(doc_ids[order].tolist(), scores[order].tolist(), strict=True))


class VectorIndex:
    """Inner-product search over L2-normalised float32 vectors.

    Args:
        vectors: An ``(n, dim)`` array; rows should be L2-normalised (cosine = inner product).
        kind: ``flat`` (exact, BLAS matrix products; the default), ``hnsw`` or ``ivf``
            (approximate faiss indexes, for large corpora).
        hnsw_m: Neighbours per node of the HNSW graph.
        ef_search: HNSW search breadth (raised to the number of results asked for).
        nlist: IVF cell count (default ``4 * sqrt(n)``).
        nprobe: IVF cells visited per query.
    """

    def __init__(
        self,
        vectors: npt.ArrayLike,
        kind: IndexKind = "flat",
        *,
        hnsw_m: int = 32,
        ef_search: int = 128,
        nlist: int | None = None,
        nprobe: int = 16,
    ) -> None:
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        if data.ndim != 2 or 0 in data.shape:
            raise InputError("cannot index an empty or non-2-D array", found=str(data.shape))
        self.kind = kind
        self.ef_search = ef_search
        self._size, dim = data.shape
        # The exact search reads the vectors themselves; faiss keeps its own copy.
        flat = data if kind == "flat" else np.empty((0, dim), dtype=np.float32)
        self._exact = ExactCorpus.of(flat)
        self._index: Any = None
        if kind != "flat":
            self._index = faiss_index(data, kind, hnsw_m=hnsw_m, nlist=nlist, nprobe=nprobe)

    def __len__(self) -> int:
        return int(self._size)

    def search(self, queries: npt.ArrayLike, n: int) -> tuple[npt.NDArray[np.float32], IntArray]:
        """Return the ``n`` best inner products and positions per query (-1 pads a short list)."""
        data = np.ascontiguousarray(queries, dtype=np.float32)
        if self.kind == "flat":
            return exact_search(self._exact, data, min(n, len(self)))
        if self.kind == "hnsw":
            self._index.hnsw.efSearch = max(self.ef_search, n)
        scores, positions = self._index.search(data, min(n, len(self)))
        return scores, positions.astype(np.int64)


def dense_top_k(
    index: VectorIndex,
    queries: npt.ArrayLike,
    doc_ids: npt.NDArray[np.str_],
    k: int,
    exclude: Sequence[IntArray],
    groups: Groups | None = None,
    scale: float = 100.0,
) -> list[dict[str, float]]:
    """Search ``index`` and cut each query to ``k`` documents, exclusions first, ties by id.

    Args:
        index: The indexed units (documents, or the units of ``groups``).
        queries: One L2-normalised query vector per row.
        doc_ids: Every document's id.
        k: How many documents to keep per query.
        exclude: Per query, the document positions to remove before the cut.
        groups: How units expand into documents (None: units are the documents).
        scale: Multiplier of the inner product (cosine x 100, docs/protocol.md, Fusion rules).

    Returns:
        One doc_id -> score dict per query, in query order.
    """
    matrix = np.ascontiguousarray(queries, dtype=np.float32)
    if index.kind == "flat":
        return _exact_top_k(index, matrix, doc_ids, k, exclude, groups, scale)
    found = settled_candidates(index, matrix, exclude, groups, k)
    return [top_k_array(doc_ids[d], v.astype(np.float64) * scale, k) for d, v in found]


def _exact_top_k(
    index: VectorIndex,
    matrix: npt.NDArray[np.float32],
    doc_ids: npt.NDArray[np.str_],
    k: int,
    exclude: Sequence[IntArray],
    groups: Groups | None,
    scale: float,
) -> list[dict[str, float]]:
    # Every unit is scored, so each cut is settled in one pass over its row.
    # The cut is found on BLAS's float32 products and its scores recomputed exactly, so that
    # a query's result does not depend on its companions or the BLAS kernel (ExactCorpus.rescore).
    results = []
    for start, block in score_blocks(index._exact.vectors, matrix):
        for query, scores in enumerate(block, start):
            docs, values = kept_documents(
                index._exact, matrix[query], scores, exclude[query], k, groups
            )
            results.append(top_k_array(doc_ids[docs], values.astype(np.float64) * scale, k))
    return results


def scale_settings(scale: float) -> dict[str, float]:
    """Return a run's record of its score scale: nothing for the default x 100.

    Only a scale other than 100 is recorded, so the configuration of every other run stays as
    it was.
    """
    return {} if scale == 100.0 else {"score_scale": scale}


def l2_normalise(vectors: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Return float32 rows scaled to unit length (zero rows stay zero)."""
    data = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(data, axis=-1, keepdims=True)
    return (data / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def rank_vectors(
    data: TaskData,
    groups: Groups,
    unit_vectors: npt.ArrayLike,
    query_vectors: npt.ArrayLike,
    k: int,
    kind: IndexKind = "flat",
    scale: float = 100.0,
) -> dict[str, dict[str, float]]:
    """Rank ``data.corpus`` for every query by the cosine between embeddings, times ``scale``.

    Args:
        data: The task's data; its corpus order defines document positions.
        groups: The indexed units and the documents each one stands for.
        unit_vectors: One embedding per unit of ``groups``.
        query_vectors: One embedding per query of ``data``, in order.
        k: The per-query cut, applied after exclusions.
        kind: The faiss index kind.
        scale: Multiplier of the cosine (100, or 1 where the official code writes plain
            cosine: docs/protocol.md, Fusion rules).

    Returns:
        query_id -> doc_id -> score.
    """
    query_ids = [q.query_id for q in data.queries]
    if not data.corpus or not query_ids:
        return {query_id: {} for query_id in query_ids}
    doc_ids = np.array([d.doc_id for d in data.corpus])
    exclude = excluded_indices(query_ids, data.excluded, doc_positions(doc_ids.tolist()))
    # Vectors may arrive raw (CLIP keeps raw features for the official fusion) or rounded by
    # a float16 cache: normalise them so that the inner product is the cosine.
    index = VectorIndex(l2_normalise(unit_vectors), kind)
    found = dense_top_k(index, l2_normalise(query_vectors), doc_ids, k, exclude, groups, scale)
    return dict(zip(query_ids, found, strict=True))

"""Approximate inner-product search through faiss (``hnsw``, ``ivf``), widened until settled.

faiss answers a query with its best ``width`` units. The search keeps asking for more (four
times as many each round) until the ``k``-th score kept after the query's exclusions is
strictly above everything it has not seen, so that no unseen unit could enter the cut
(docs/protocol.md, Fusion rules: exclusions before the top-k cut). Each query starts from its
own width (``k``, its exclusions and a spare), never its companions': an HNSW search's breadth
follows the width, so a shared one would let one query's exclusions change another's results.
What is kept here is handed back in corpus order, with faiss's float32 scores;
:mod:`mmbright_core.retrieval.search.index` cuts it under the ranking rule, as it cuts the
candidates of the exact search (:mod:`mmbright_core.retrieval.search.exact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import InputError

if TYPE_CHECKING:
    from mmbright_core.retrieval.search.groups import Groups

FloatRows = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
Candidates = tuple[IntArray, FloatRows]
"""Kept document positions (corpus order) and their inner products."""


class Searcher(Protocol):
    """What the widening search asks of an index: its size and its ``n`` best per query."""

    def __len__(self) -> int: ...

    def search(self, queries: npt.ArrayLike, n: int) -> tuple[FloatRows, IntArray]:
        """Return the ``n`` best inner products and positions per query (-1 pads)."""
        ...


def faiss_index(data: FloatRows, kind: str, *, hnsw_m: int, nlist: int | None, nprobe: int) -> Any:
    """Build and fill a faiss inner-product index of ``kind`` over ``data``.

    Args:
        data: The ``(n, dim)`` float32 vectors, C-contiguous.
        kind: ``hnsw`` or ``ivf``.
        hnsw_m: Neighbours per node of the HNSW graph.
        nlist: IVF cell count (default ``4 * sqrt(n)``).
        nprobe: IVF cells visited per query.

    Raises:
        InputError: Any other kind.
    """
    import faiss

    dim = data.shape[1]
    index: Any
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
    elif kind == "ivf":
        cells = nlist or max(1, min(int(4 * np.sqrt(len(data))), len(data) // 39 or 1))
        # faiss keeps its own reference to the quantizer (add_ref_in_constructor).
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, cells, faiss.METRIC_INNER_PRODUCT)
        index.train(data)
        index.nprobe = nprobe
    else:
        raise InputError("unknown index kind", expected="flat, hnsw or ivf", found=repr(kind))
    index.add(data)
    return index


def settled_candidates(
    index: Searcher,
    matrix: FloatRows,
    exclude: Sequence[IntArray],
    groups: Groups | None,
    k: int,
) -> list[Candidates]:
    """Search until every query's cut is settled; return each one's kept candidates.

    Args:
        index: The indexed units (documents, or the units of ``groups``).
        matrix: One L2-normalised float32 query vector per row.
        exclude: Per query, the document positions to remove before the cut.
        groups: How units expand into documents (None: units are the documents).
        k: How many documents the cut keeps.

    Returns:
        Per query, in query order, the kept documents in corpus order (for ties at the
        cut) and their inner products.
    """
    found: dict[int, Candidates] = {}
    # Enough for the common case; raised geometrically for queries whose cut is not settled.
    # Each query's width is its own (an HNSW search's breadth follows it), so that a query's
    # results never depend on the queries searched with it.
    widths = np.array([min(len(index), k + len(e) + 16) for e in exclude], dtype=np.int64)
    pending = np.arange(len(matrix))
    while len(pending):
        unsettled = []
        for width in np.unique(widths[pending]).tolist():
            group = pending[widths[pending] == width]
            scores, positions = index.search(matrix[group], width)
            for row, query in enumerate(group.tolist()):
                kept = _settle(
                    scores[row], positions[row], exclude[query], groups, k, width >= len(index)
                )
                if kept is None:
                    unsettled.append(query)
                    continue
                docs, values = kept
                order = np.argsort(docs, kind="stable")
                found[query] = (docs[order], values[order])
        pending = np.array(unsettled, dtype=np.int64)
        widths[pending] = np.minimum(len(index), widths[pending] * 4)
    return [found[query] for query in range(len(matrix))]


def _settle(
    scores: FloatRows,
    positions: IntArray,
    exclude: IntArray,
    groups: Groups | None,
    k: int,
    exhaustive: bool,
) -> Candidates | None:
    # Returns the kept candidates once no unseen unit can enter the top k, else None.
    valid = positions >= 0
    units, unit_scores = positions[valid], scores[valid]
    if groups is None:
        docs, values = units, unit_scores
    else:
        docs, where = groups.expand(units)
        values = unit_scores[where]
    keep = ~np.isin(docs, exclude)
    docs, values = docs[keep], values[keep]
    if exhaustive or len(unit_scores) == 0:
        return docs, values
    if len(values) < k:
        return None
    kth = np.partition(values, len(values) - k)[len(values) - k]
    return (docs, values) if kth > unit_scores.min() else None

"""Exact late-interaction search: MaxSim over every token of every document, in blocks.

A late-interaction model (ColBERT, ColPali, ColQwen2) gives a query and a document one vector
per token (or image patch). Their score is MaxSim: for each query token, its largest inner
product with any document token, summed over the query's tokens. Here it is computed for every
document of a domain, nothing skipped, and never in half precision (whose rounding ties near
scores). A first pass, in blocks of documents, takes the token products in float32 (BLAS), each
query token's maximum and the sum of the maxima; its error is bounded, so it only chooses the
documents that can enter a query's top ``k``, and those are scored again from float64 products
(:func:`exact_maxsim`), the sum rounded once to float32: a document's score is a function of
its query and itself, however the documents were blocked and however many query tokens were
padded beside it. The ranking rule then cuts each query's row (:mod:`mmbright_core.ranking`:
ties by doc id descending, exclusions before the cut).

Documents are held as *token rows*: a document's token vectors end to end, padded with zero
vectors to a fixed number of tokens (:func:`pack_tokens`), so that one row per document goes
through the content-keyed embedding cache (:mod:`mmbright_core.retrieval.cache.store`) and a
block of documents is read from its memory-mapped shards alone. A padding token is known by
being all zeros: a model's token vectors are L2-normalised, never zero. Memory is one block
of documents and its similarity matrix (under :data:`BLOCK_BYTES`) plus the score rows
(queries x documents x 4 bytes), whatever the domain's size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import InputError, require
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.index import top_k_array

FloatRows = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

#: The most one block's query-by-document token similarities may take (float32 bytes).
BLOCK_BYTES = 64 * 2**20


def pack_tokens(tokens: Sequence[npt.ArrayLike], width: int) -> FloatRows:
    """Return one row per document: its token vectors end to end, zero-padded to ``width``.

    Args:
        tokens: Per document, its ``(n_tokens, dim)`` token vectors.
        width: The tokens a row holds (the model's longest document).

    Raises:
        InputError: A document has more than ``width`` tokens, or none.
    """
    arrays = [np.asarray(t, dtype=np.float32) for t in tokens]
    if not arrays:
        return np.zeros((0, 0), dtype=np.float32)
    dim = arrays[0].shape[1]
    rows = np.zeros((len(arrays), width, dim), dtype=np.float32)
    for row, array in enumerate(arrays):
        if not 0 < len(array) <= width:
            raise InputError(
                "a document's token vectors do not fit its row",
                expected=f"1 to {width} tokens (the model's longest document)",
                found=f"{len(array)} tokens",
                hint="Raise the backend's doc_tokens option.",
            )
        rows[row, : len(array)] = array
    return rows.reshape(len(arrays), width * dim)


def unpack_tokens(rows: npt.ArrayLike, dim: int) -> list[FloatRows]:
    """Return each row's token vectors without its padding (the inverse of :func:`pack_tokens`)."""
    data = np.asarray(rows, dtype=np.float32)
    tokens = data.reshape(len(data), -1, dim)
    return [row[np.any(row != 0, axis=1)] for row in tokens]


def pad_queries(queries: Sequence[npt.ArrayLike]) -> FloatRows:
    """Return the queries' token vectors as one ``(q, longest, dim)`` array, zero-padded.

    A zero query token adds exactly 0 to every score (its every product is 0), so padding
    changes no score.
    """
    arrays = [np.asarray(q, dtype=np.float32) for q in queries]
    longest = max((len(a) for a in arrays), default=0)
    dim = arrays[0].shape[1] if arrays else 0
    out = np.zeros((len(arrays), longest, dim), dtype=np.float32)
    for row, array in enumerate(arrays):
        out[row, : len(array)] = array
    return out


def block_documents(queries: FloatRows, width: int) -> int:
    """Return how many documents of ``width`` tokens one block scores for ``queries``."""
    per_document = 4 * max(queries.shape[0] * queries.shape[1] * width, 1)
    return max(1, BLOCK_BYTES // per_document)


def maxsim(
    queries: FloatRows, documents: FloatRows, device: str = "cpu"
) -> tuple[FloatRows, float]:
    """Return the ``(q, n)`` MaxSim scores of padded queries with a block of token rows.

    Args:
        queries: ``(q, q_tokens, dim)`` float32 query tokens, zero-padded (:func:`pad_queries`).
        documents: ``(n, width * dim)`` float32 token rows (:func:`pack_tokens`).
        device: The torch device the products run on.

    Returns:
        Float32 scores (per query token the largest float32 product with any real document
        token, summed in float64 and rounded once), and the largest L2 norm of a token of
        the block.
    """
    torch: Any = require("torch", "late-interaction scoring", "hf")
    if torch.get_float32_matmul_precision() != "highest":
        # TF32 or bfloat16 products break the error bound the candidates are chosen within.
        raise InputError(
            "float32 matrix products are set below full precision",
            expected="torch.set_float32_matmul_precision('highest') (torch's default)",
            found=torch.get_float32_matmul_precision(),
        )
    q, q_tokens, dim = queries.shape
    n = len(documents)
    with torch.inference_mode():
        docs = torch.from_numpy(np.ascontiguousarray(documents, dtype=np.float32)).to(device)
        docs = docs.reshape(n, -1, dim)
        squares = docs.square().sum(dim=2)  # (n, width)
        padding = ~docs.ne(0).any(dim=2)  # the zero tokens
        query = torch.from_numpy(np.ascontiguousarray(queries)).to(device)
        products = query.reshape(q * q_tokens, dim) @ docs.reshape(-1, dim).T
        products = products.reshape(q * q_tokens, n, -1)
        if bool(padding.any()):
            products.masked_fill_(padding.unsqueeze(0), float("-inf"))
        best = products.amax(dim=2).reshape(q, q_tokens, n)
        scores = best.double().sum(dim=1).float().cpu().numpy()
        return scores, float(squares.max().double().sqrt()) if n else 0.0


def exact_maxsim(query: npt.ArrayLike, rows: FloatRows, dim: int) -> FloatRows:
    """Return the MaxSim of one query with each token row, from float64 products.

    The products of float32 components are exact in float64 and their sums within a few
    float64 units of exact, so each score rounded to float32 is, but at a rounding boundary,
    the exact MaxSim rounded: a function of its query and document alone, whatever documents
    are scored beside it or however they were blocked.
    """
    wide = np.asarray(query, dtype=np.float64)
    tokens = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1, dim)
    out = np.empty(len(tokens), dtype=np.float32)
    # Rows a chunk at a time, so that their float64 copy and products stay under a block.
    step = max(1, BLOCK_BYTES // (8 * tokens.shape[1] * max(dim, len(wide))))
    for start in range(0, len(tokens), step):
        part = tokens[start : start + step]
        flat = part.reshape(-1, dim).astype(np.float64)
        products = (flat @ wide.T).reshape(len(part), -1, len(wide))  # (n, width, q_tokens)
        products[~np.any(part != 0, axis=2)] = -np.inf  # padding tokens
        out[start : start + step] = products.max(axis=1).sum(axis=1)
    return out


def maxsim_top_k(
    queries: Sequence[npt.ArrayLike],
    rows: Callable[[IntArray], FloatRows],
    doc_ids: npt.NDArray[np.str_],
    k: int,
    exclude: Sequence[IntArray],
    groups: Groups | None = None,
    *,
    width: int,
    device: str = "cpu",
) -> list[dict[str, float]]:
    """Score every unit by MaxSim, block by block, and cut each query to ``k`` documents.

    The blocked float32 pass (:func:`maxsim`) chooses the candidates: its error is bounded by
    the float32 products' (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
    eq. 3.5: gamma_dim times the two vectors' norms, per query token) and the final rounding,
    so every document whose score can reach the k-th one is kept, ties at the cut included,
    and scored again by :func:`exact_maxsim`. The cut is made on those scores alone.

    Args:
        queries: Per query, its ``(n_tokens, dim)`` token vectors.
        rows: Returns the token rows of the given units (the cache's rows, read as asked).
        doc_ids: Every document's id.
        k: How many documents to keep per query, after exclusions.
        exclude: Per query, the document positions to remove before the cut.
        groups: How units expand into documents (None: units are the documents).
        width: The tokens of a row.
        device: The torch device the products run on.

    Returns:
        One doc_id -> score dict per query, in query order, under the ranking rule.

    Raises:
        InputError: ``rows`` did not return one row per unit asked for.
    """
    padded = pad_queries(queries)
    units = len(doc_ids) if groups is None else len(groups.units)
    scores = np.empty((len(padded), units), dtype=np.float32)
    size, norm = block_documents(padded, width), 0.0
    for start in range(0, units if len(padded) else 0, size):
        block = _rows(rows, np.arange(start, min(start + size, units), dtype=np.int64))
        scores[:, start : start + len(block)], largest = maxsim(padded, block, device)
        norm = max(norm, largest)
    dim = padded.shape[2] if len(padded) else 0
    out = []
    for query, row in enumerate(scores):
        per_doc = row if groups is None else row[groups.unit_of_doc]
        live = np.ones(len(per_doc), dtype=bool)
        live[exclude[query]] = False
        found = np.flatnonzero(live)
        if len(found) > k:
            approx = per_doc[found]
            kth = float(np.partition(approx, len(approx) - k)[len(approx) - k])
            found = found[approx >= kth - 2 * _error(padded[query], norm)]
        unit_of = found if groups is None else groups.unit_of_doc[found]
        needed = np.unique(unit_of)
        exact = exact_maxsim(queries[query], _rows(rows, needed), dim)
        values = exact[np.searchsorted(needed, unit_of)].astype(np.float64)
        out.append(top_k_array(doc_ids[found], values, k))
    return out


def _rows(rows: Callable[[IntArray], FloatRows], units: IntArray) -> FloatRows:
    block = rows(units)
    if len(block) != len(units):
        raise InputError(
            "token rows missing for some documents",
            expected=f"{len(units)} rows",
            found=f"{len(block)} rows",
        )
    return block


def _error(query: FloatRows, norm: float) -> float:
    # Per query token: a float32 product errs by at most gamma_dim |q| |d|, and so does the
    # maximum of such products; the float64 sum rounded to float32 adds half a float32 step of
    # the score, at most a unit roundoff of the sum of |q| |d|. The margin covers float64's own.
    dim = query.shape[1]
    unit = 2.0**-24
    gamma = dim * unit / (1 - dim * unit)
    lengths = float(np.sqrt((query.astype(np.float64) ** 2).sum(axis=1)).sum())
    return (gamma + unit) * lengths * norm * (1 + 2.0**-20)

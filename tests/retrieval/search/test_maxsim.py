"""Exact MaxSim: the upstream libraries' rankings, blocks, padding, exclusions and Task 4 pairs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from maxsim_goldens import GOLDEN, MODELS

from mmbright_core.errors import InputError
from mmbright_core.ranking import ranked
from mmbright_core.retrieval.search import maxsim as maxsim_module
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.maxsim import (
    maxsim,
    maxsim_top_k,
    pack_tokens,
    pad_queries,
    unpack_tokens,
)

pytest.importorskip("torch")


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    return np.split(flat, np.cumsum(lengths)[:-1])


def _blocks(rows: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda units: rows[units[units < len(rows)]]


def _reference(queries: list[np.ndarray], documents: list[np.ndarray]) -> np.ndarray:
    # MaxSim by its definition, in float64, one pair at a time.
    return np.array(
        [
            [(q.astype(float) @ d.astype(float).T).max(axis=1).sum() for d in documents]
            for q in queries
        ]
    )


@pytest.mark.parametrize("kind", MODELS)
def test_top10_equals_the_upstream_scoring_of_the_same_vectors(kind: str) -> None:
    # PyLate's colbert_scores (ColBERT) and colpali-engine's score_multi_vector (ColPali,
    # ColQwen2) on the token vectors of tiny random-weight models (tests/support/maxsim_goldens.py).
    golden = np.load(GOLDEN)
    queries = _split(golden[f"{kind}/queries"], golden[f"{kind}/queries_lengths"])
    documents = _split(golden[f"{kind}/documents"], golden[f"{kind}/documents_lengths"])
    width = max(len(d) for d in documents)
    doc_ids = np.array([f"d{i:02d}" for i in range(len(documents))])
    found = maxsim_top_k(
        queries,
        _blocks(pack_tokens(documents, width)),
        doc_ids,
        10,
        [np.empty(0, dtype=np.int64)] * len(queries),
        width=width,
    )
    upstream = [[doc_ids[i] for i in row] for row in golden[f"{kind}/top10"]]
    assert [list(run) for run in found] == upstream


def test_scores_are_maxsim_at_float32_whatever_the_block_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    queries = [rng.standard_normal((n, 8)).astype(np.float32) for n in (2, 5, 3)]
    documents = [rng.standard_normal((n, 8)).astype(np.float32) for n in rng.integers(1, 9, 50)]
    rows = pack_tokens(documents, 8)
    doc_ids = np.array([f"d{i:02d}" for i in range(50)])
    none = [np.empty(0, dtype=np.int64)] * 3
    whole = maxsim_top_k(queries, _blocks(rows), doc_ids, 50, none, width=8)
    monkeypatch.setattr(maxsim_module, "BLOCK_BYTES", 1)  # one document per block
    assert maxsim_top_k(queries, _blocks(rows), doc_ids, 50, none, width=8) == whole
    reference = _reference(queries, documents)
    for query, run in enumerate(whole):
        expected = {doc_ids[d]: float(np.float32(reference[query, d])) for d in range(50)}
        assert run == pytest.approx(expected, rel=1e-5)
        assert list(run) == [doc for doc, _ in ranked(run)]  # the ranking rule's order


def test_padding_changes_no_score() -> None:
    rng = np.random.default_rng(4)
    query = rng.standard_normal((3, 4)).astype(np.float32)
    document = rng.standard_normal((2, 4)).astype(np.float32)
    alone, _ = maxsim(pad_queries([query]), pack_tokens([document], 2))
    padded, norm = maxsim(pad_queries([query, np.ones((9, 4))]), pack_tokens([document], 7))
    assert norm == pytest.approx(np.linalg.norm(document, axis=1).max())
    assert padded[0, 0] == alone[0, 0]
    # A padding token of the document is never its best match, even against negative products.
    negative, _ = maxsim(pad_queries([-np.abs(query)]), pack_tokens([np.abs(document)], 5))
    assert negative[0, 0] < 0


def test_rows_round_trip_and_refuse_a_document_too_long() -> None:
    tokens = [np.eye(4, dtype=np.float32)[:2], np.eye(4, dtype=np.float32)[1:]]
    rows = pack_tokens(tokens, 3)
    assert rows.shape == (2, 12)
    assert all(np.array_equal(a, b) for a, b in zip(unpack_tokens(rows, 4), tokens, strict=True))
    with pytest.raises(InputError, match="do not fit"):
        pack_tokens(tokens, 2)


def test_exclusions_come_before_the_cut_and_pairs_share_their_passage() -> None:
    queries = [np.array([[1.0, 0.0]], dtype=np.float32)]
    passages = [np.array([[x, np.sqrt(1 - x * x)]], dtype=np.float32) for x in (0.9, 0.5, 0.1)]
    groups = Groups.from_keys(["p0", "p0", "p1", "p2"])  # two pairs of passage p0
    doc_ids = np.array(["p0|||a", "p0|||b", "p1|||c", "p2|||d"])
    rows = pack_tokens(passages, 1)
    found = maxsim_top_k(queries, _blocks(rows), doc_ids, 2, [np.array([1])], groups, width=1)
    assert list(found[0]) == ["p0|||a", "p1|||c"]
    with pytest.raises(InputError, match="missing"):
        maxsim_top_k(queries, _blocks(rows[:2]), doc_ids, 2, [np.array([1])], groups, width=1)


def test_products_below_float32_precision_are_refused() -> None:
    import torch

    query, document = pad_queries([np.ones((1, 2))]), pack_tokens([np.ones((1, 2))], 1)
    torch.set_float32_matmul_precision("high")  # TF32 where the hardware has it
    try:
        with pytest.raises(InputError, match="below full precision"):
            maxsim(query, document)
    finally:
        torch.set_float32_matmul_precision("highest")

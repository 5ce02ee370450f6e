from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mmbright_core.errors import InputError
from mmbright_core.ranking import top_k
from mmbright_core.retrieval.index import (
    Groups,
    VectorIndex,
    dense_top_k,
    l2_normalise,
    top_k_array,
)


def test_top_k_array_breaks_ties_by_doc_id_descending():
    ids = np.array(["a", "b", "c", "d"])
    scores = np.array([1.0, 2.0, 2.0, 2.0])
    assert list(top_k_array(ids, scores, 4)) == ["d", "c", "b", "a"]


def test_top_k_array_keeps_the_earliest_ties_at_the_cut():
    # The official cut is a stable sort of the corpus: of three tied documents, the first two
    # in corpus order get in, then the ranking rule orders them.
    ids = np.array(["d", "c", "b", "a"])
    scores = np.array([1.0, 2.0, 2.0, 2.0])
    assert list(top_k_array(ids, scores, 2)) == ["c", "b"]


def test_top_k_array_excludes_before_the_cut():
    ids = np.array(["a", "b", "c"])
    scores = np.array([3.0, 2.0, 1.0])
    assert top_k_array(ids, scores, 2, exclude=np.array([0])) == {"b": 2.0, "c": 1.0}


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0]), min_size=1, max_size=30),
    k=st.integers(1, 35),
    excluded=st.sets(st.integers(0, 29)),
)
def test_top_k_array_matches_the_official_cut_then_the_ranking_rule(scores, k, excluded):
    ids = np.array([f"doc{i:02d}" for i in range(len(scores))])
    rng = np.random.default_rng(len(scores) * 100 + k)
    ids = ids[rng.permutation(len(ids))]  # corpus order is not id order
    excluded = {i for i in excluded if i < len(scores)}
    expected = _official_cut(ids.tolist(), scores, k, excluded)
    found = top_k_array(ids, np.array(scores), k, np.array(sorted(excluded), dtype=np.int64))
    assert list(found.items()) == list(expected.items())


def test_groups_expand_units_into_their_documents():
    groups = Groups.from_keys(["p1", "p2", "p1", "p3", "p2"])
    assert groups.units == ("p1", "p2", "p3")
    assert groups.unit_of_doc.tolist() == [0, 1, 0, 2, 1]
    docs, where = groups.expand(np.array([1, 2]))
    assert docs.tolist() == [1, 4, 3] and where.tolist() == [0, 0, 1]


def _official_cut(ids, scores, k, exclude):
    """Stable sort of the corpus by score, the first k kept (the official code), then ranked."""
    items = [(d, s) for i, (d, s) in enumerate(zip(ids, scores, strict=True)) if i not in exclude]
    return top_k(dict(sorted(items, key=lambda item: item[1], reverse=True)[:k]), k)


def _brute_force(vectors, query, ids, k, exclude, scale=100.0):
    scores = (vectors @ query).astype(np.float32).astype(np.float64) * scale
    return _official_cut(ids.tolist(), scores.tolist(), k, set(exclude.tolist()))


def test_dense_top_k_equals_brute_force_with_ties_at_the_cut():
    rng = np.random.default_rng(0)
    base = l2_normalise(rng.normal(size=(5, 8)))
    vectors = np.vstack([base[i % 5] for i in range(60)])  # 12 exact copies of each vector
    ids = np.array([f"d{i:03d}" for i in range(60)])
    queries = l2_normalise(rng.normal(size=(3, 8)))
    exclude = [np.array([0, 5, 10], dtype=np.int64), np.array([], dtype=np.int64), np.arange(20)]
    found = dense_top_k(VectorIndex(vectors), queries, ids, 7, exclude)
    for query, excluded, run in zip(queries, exclude, found, strict=True):
        expected = _brute_force(vectors, query, ids, 7, excluded)
        assert list(run) == list(expected)  # same documents, same order
        assert list(run.values()) == pytest.approx(list(expected.values()), abs=1e-4)


def test_dense_top_k_with_groups_scores_every_pair_of_a_passage():
    passages = l2_normalise(np.eye(3, dtype=np.float32))
    groups = Groups.from_keys(["p0", "p0", "p1", "p2", "p2", "p2"])
    ids = np.array(["p0|a", "p0|b", "p1|a", "p2|a", "p2|b", "p2|c"])
    found = dense_top_k(
        VectorIndex(passages), np.array([[0, 0, 1.0]]), ids, 2, [np.array([5])], groups
    )
    assert found == [{"p2|b": 100.0, "p2|a": 100.0}]


def test_k_larger_than_corpus_returns_everything():
    vectors = l2_normalise(np.eye(4, dtype=np.float32))
    ids = np.array(["a", "b", "c", "d"])
    found = dense_top_k(
        VectorIndex(vectors), vectors[:1], ids, 1000, [np.array([], dtype=np.int64)]
    )
    assert len(found[0]) == 4 and next(iter(found[0])) == "a"


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_indexes_return_k_results(kind):
    rng = np.random.default_rng(1)
    vectors = l2_normalise(rng.normal(size=(2000, 16)))
    ids = np.array([f"d{i}" for i in range(2000)])
    queries = vectors[:5]
    found = dense_top_k(
        VectorIndex(vectors, kind, nprobe=64), queries, ids, 10, [np.array([0])] * 5
    )
    assert all(len(run) == 10 for run in found)
    assert "d0" not in found[0] and next(iter(found[1])) == "d1"


def test_unknown_index_kind():
    with pytest.raises(InputError, match="flat, hnsw or ivf"):
        VectorIndex(np.ones((2, 2)), "annoy")  # type: ignore[arg-type]

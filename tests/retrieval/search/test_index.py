from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mmbright_core.errors import InputError
from mmbright_core.ranking import top_k
from mmbright_core.retrieval.search import exact
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.index import (
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


# Exact search (kind "flat"): one BLAS product per block of queries, cut under the ranking rule.


def _dyadic(rng, shape, top=2):
    """Vectors whose inner products are exact in float32 in any summation order (every partial
    sum is an integer below 2**24 times 2**-20, for ``top`` <= 1000 and up to 16 dimensions):
    every BLAS kernel, faiss's or numpy's, gives the same bits. With a small ``top`` the scores
    take few values and many tie."""
    return (rng.integers(-top, top + 1, size=shape) / 1024).astype(np.float32)


def _faiss_flat(vectors, queries, ids, k, exclude, groups=None, scale=100.0):
    """The previous exact path: faiss IndexFlatIP over every unit, then the ranking rule."""
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    scores, positions = index.search(queries, len(vectors))
    runs = []
    for row, where, excluded in zip(scores, positions, exclude, strict=True):
        full = np.empty(len(vectors), dtype=np.float32)
        full[where] = row
        if groups is not None:
            full = full[groups.unit_of_doc]  # each document takes its unit's score
        runs.append(top_k_array(ids, full.astype(np.float64) * scale, k, excluded))
    return runs


@pytest.mark.parametrize("n_queries", [1, 25])  # a one-row product and a block of them
def test_exact_search_equals_the_previous_faiss_flat_path_and_brute_force(n_queries):
    rng = np.random.default_rng(n_queries)
    vectors, queries = _dyadic(rng, (3000, 12)), _dyadic(rng, (n_queries, 12))
    ids = np.array([f"d{i:04d}" for i in rng.permutation(3000)])  # corpus order != id order
    exclude = [np.sort(rng.choice(3000, 40, replace=False)) for _ in range(n_queries)]
    found = dense_top_k(VectorIndex(vectors), queries, ids, 100, exclude)
    # The scores take at most 97 values, so hundreds of documents tie at each cut.
    assert found == _faiss_flat(vectors, queries, ids, 100, exclude)
    for query, excluded, run in zip(queries, exclude, found, strict=True):
        expected = _brute_force(vectors, query, ids, 100, excluded)
        assert list(run.items()) == list(expected.items())  # same order, same floats


def test_exact_search_with_groups_equals_the_previous_faiss_flat_path():
    rng = np.random.default_rng(7)
    passages = _dyadic(rng, (400, 8), top=1000)  # few ties
    keys = [f"p{i:03d}" for i in range(400)] + ["p399"] * 2  # one pair per passage, p399 three
    groups = Groups.from_keys(keys)
    ids = np.array([f"{key}|{i:03d}" for i, key in enumerate(keys)])
    queries = np.vstack([_dyadic(rng, (3, 8), top=1000), passages[399:]])
    # Query 0 loses every pair of its best passages: none may take a place in its top k.
    best = np.argsort(-(passages @ queries[0]), kind="stable")[:5]
    emptied = np.concatenate(
        [groups.members[groups.offsets[u] : groups.offsets[u + 1]] for u in best]
    )
    exclude = [np.sort(emptied), np.array([0, 1, 2]), np.array([], dtype=np.int64), np.array([400])]
    found = dense_top_k(VectorIndex(passages), queries, ids, 50, exclude, groups)
    assert found == _faiss_flat(passages, queries, ids, 50, exclude, groups)
    assert all(len(run) == 50 for run in found)
    assert not set(found[0]) & set(ids[emptied].tolist())
    # The last query is p399's own vector, which no other passage beats here: its two pairs
    # left share its score, so the doc id orders them.
    assert list(found[3])[:2] == ["p399|401", "p399|399"]


def test_exact_ties_at_the_cut_take_the_earliest_in_corpus_order_then_rank_by_id():
    vectors = np.ones((4, 2), dtype=np.float32)  # every document scores 2.0 x 100
    ids = np.array(["b", "d", "a", "c"])
    found = dense_top_k(VectorIndex(vectors), np.ones((1, 2)), ids, 2, [np.array([0])])
    # "b" is excluded before the cut; of the tied rest, corpus order lets "d" and "a" in.
    assert list(found[0].items()) == [("d", 200.0), ("a", 200.0)]


def _merging_pair():
    """Two adjacent float32 scores that the ranking rule (x 100, then float32) cannot tell apart."""
    low = np.float32(0.37)
    while True:
        high = np.nextafter(low, np.float32(1.0))
        if np.float32(np.float64(low) * 100) == np.float32(np.float64(high) * 100):
            return low, high
        low = high


def test_exact_search_ranks_at_the_rules_float32_precision_and_reports_float64_scores():
    low, high = _merging_pair()
    assert high > low  # float32 inner products that differ, ...
    vectors = np.array([[low, 0.0], [high, 0.0], [0.25, 0.0]], dtype=np.float32)
    ids = np.array(["b", "a", "c"])  # corpus order: the lower score first
    queries = np.array([[1.0, 0.0]])
    none = [np.array([], dtype=np.int64)]
    # ... tie under the rule: the cut keeps the earliest ("b", the lower inner product) ...
    assert list(dense_top_k(VectorIndex(vectors), queries, ids, 1, none)[0]) == ["b"]
    # ... and the order is by doc id descending, not by the float32 inner product.
    found = dense_top_k(VectorIndex(vectors), queries, ids, 3, none)[0]
    assert list(found) == ["b", "a", "c"]
    # The scores reported are the float32 products x 100 in float64, not rounded again.
    assert found == {"b": float(low) * 100, "a": float(high) * 100, "c": 25.0}
    assert found["a"] != found["b"]


def random_search(seed: int, docs: int, queries: int, dim: int):
    """Seeded unit vectors of ``docs`` passages and ``queries`` queries, with no exclusions.

    The ids are ``d`` and the position, zero-padded to the width of the last: id order is
    corpus order.
    """
    rng = np.random.default_rng(seed)
    vectors = l2_normalise(rng.normal(size=(docs, dim)))
    asked = l2_normalise(rng.normal(size=(queries, dim)))
    ids = np.array([f"d{i:0{len(str(docs - 1))}d}" for i in range(docs)])
    return vectors, asked, ids, [np.array([], dtype=np.int64)] * queries


def test_a_query_scores_the_same_alone_as_among_others():
    # BLAS rounds a one-row or tiny product (gemv, small-matrix kernels) differently from a
    # large one: a query's scores must not depend on how many are searched with it.
    vectors, queries, ids, none = random_search(3, 3000, 30, 64)
    index = VectorIndex(vectors)
    together = dense_top_k(index, queries, ids, 200, none)
    alone = [dense_top_k(index, queries[i : i + 1], ids, 200, none[:1])[0] for i in range(30)]
    assert alone == together  # same documents, same order, same floats


def test_score_blocks_stay_under_the_memory_bound_and_change_no_result(monkeypatch):
    vectors, queries, ids, none = random_search(4, 2000, 70, 16)
    wide = dense_top_k(VectorIndex(vectors), queries, ids, 30, none)
    monkeypatch.setattr(exact, "BLOCK_BYTES", 20 * 2000 * 4)  # 20 rows of 2,000 scores
    blocks = [block.shape for _, block in exact.score_blocks(vectors, queries)]
    assert blocks == [(20, 2000)] * 3 + [(10, 2000)]
    assert dense_top_k(VectorIndex(vectors), queries, ids, 30, none) == wide


def test_a_query_scores_the_same_at_every_place_of_a_block_and_under_any_memory_bound(
    monkeypatch,
):
    # OpenBLAS's sgemm rounds a row by its place in the product's register tiles (on its
    # Haswell kernel rows 6-11 of every 12 differ from rows 0-5) and by the product's rows.
    rng = np.random.default_rng(8)
    vectors = l2_normalise(rng.normal(size=(2000, 96)))
    query = l2_normalise(rng.normal(size=(1, 96)))
    ids = np.array([f"d{i:04d}" for i in range(2000)])
    index = VectorIndex(vectors)
    alone = dense_top_k(index, query, ids, 50, [np.array([], dtype=np.int64)])[0]
    scores, positions = index.search(query, 50)
    crowd = np.repeat(query, 40, axis=0)  # the same query at places 0-39 of its block
    none = [np.array([], dtype=np.int64)] * 40
    for rows in (64, 20, 16):
        monkeypatch.setattr(exact, "BLOCK_BYTES", rows * 2000 * 4)
        assert exact.block_rows(2000) == rows
        assert all(run == alone for run in dense_top_k(index, crowd, ids, 50, none))
        found_scores, found_positions = index.search(crowd, 50)
        assert (found_scores == scores).all() and (found_positions == positions).all()


def _nearest_float32(exact_value):
    """The float32 nearest to a Fraction, ties to the even significand."""
    guess = np.float32(float(exact_value))
    around = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(1))]
    return min(
        around,
        key=lambda v: (abs(Fraction(float(v)) - exact_value), int(v.view(np.uint32)) % 2),
    )


def _exact_score(vector, query):
    return _nearest_float32(
        sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(vector, query, strict=True))
    )


@pytest.mark.parametrize("dim", [1, 7, 12, 384])
def test_exact_scores_are_the_exact_inner_products_rounded_to_float32(dim):
    rng = np.random.default_rng(dim)
    vectors = l2_normalise(rng.normal(size=(120, dim)))
    queries = l2_normalise(rng.normal(size=(2, dim)))
    scores, positions = VectorIndex(vectors).search(queries, 120)
    for query, row, where in zip(queries, scores, positions, strict=True):
        expected = np.array([_exact_score(vector, query) for vector in vectors])
        assert (row.view(np.uint32) == expected[where].view(np.uint32)).all()  # bit for bit
        assert (where == np.argsort(-expected, kind="stable")).all()  # best first, ties by position


def test_exact_scores_round_sums_at_a_float32_midpoint_by_what_float64_drops():
    # 0.75 + 2**-25 lies halfway between two float32s; 2**-80 more or less is lost in any
    # float64 sum, which would round the midpoint to the even neighbour (0.75) every time.
    even, odd = np.float32(0.75), np.nextafter(np.float32(0.75), np.float32(1))
    half = 2.0**-25  # half a float32 step at 0.75
    vectors = np.array(
        [
            [even, half, 2.0**-80],
            [even, half, -(2.0**-80)],
            [even, half, 0.0],
            [odd, half, 0.0],
            [odd, half, -(2.0**-80)],
        ],
        dtype=np.float32,
    )
    scores, positions = VectorIndex(vectors).search(np.ones((1, 3), np.float32), 5)
    found = dict(zip(positions[0].tolist(), scores[0].tolist(), strict=True))
    above_odd = float(np.nextafter(odd, np.float32(1)))
    assert found == {0: float(odd), 1: float(even), 2: float(even), 3: above_odd, 4: float(odd)}
    assert all(found[i] == _exact_score(v, np.ones(3)) for i, v in enumerate(vectors))


def test_the_cut_widened_by_the_product_error_equals_the_rule_on_every_rescored_score():
    # Vectors crowded around one direction: their sgemm scores, off by a few float32 steps,
    # rank them otherwise than the re-scored values. Cut at the sgemm scores' own k-th, the
    # search would miss some of the re-scored top k.
    rng = np.random.default_rng(9)
    base = l2_normalise(rng.normal(size=(1, 64)))
    vectors = l2_normalise(base + 1e-4 * rng.normal(size=(4000, 64)))
    queries = l2_normalise(base + 1e-4 * rng.normal(size=(20, 64)))
    ids = np.array([f"d{i:04d}" for i in rng.permutation(4000)])
    exclude = [np.sort(rng.choice(4000, 30, replace=False)) for _ in range(20)]
    found = dense_top_k(VectorIndex(vectors), queries, ids, 100, exclude)
    everything = np.arange(4000)
    for query, excluded, run in zip(queries, exclude, found, strict=True):
        row = exact.ExactCorpus.of(vectors).rescore(query, everything).astype(np.float64)
        assert run == top_k_array(ids, row * 100, 100, excluded)


@pytest.mark.parametrize("seed", range(60))
def test_candidates_widened_by_an_error_hold_the_top_k_of_any_values_within_it(seed):
    rng = np.random.default_rng(seed)
    size, k = int(rng.integers(1, 3000)), int(rng.integers(1, 60))
    levels, steps = int(rng.integers(1, 50)), int(rng.integers(0, 12))
    # Scores a few float32 steps apart on few levels, and the values the cut is made on: each
    # moved by ``error`` (``steps`` steps of 2**-24) up, down, or not at all; most of those
    # above a pivot down and most below it up, the moves that change the top k the most.
    level = rng.uniform(0.5, 0.9, levels)[rng.integers(0, levels, size)]
    row = (level + rng.integers(0, 40, size) * 2.0**-24).astype(np.float32)
    error = steps * 2.0**-24
    against = np.where(row >= rng.choice(row), -1, 1)
    moves = np.where(rng.random(size) < 0.8, against, rng.integers(-1, 2, size))
    values = row + np.float32(error) * moves.astype(np.float32)
    ids = np.array([f"d{i:04d}" for i in rng.permutation(size)])
    kept = exact.candidates(row.copy(), k, error)
    assert np.all(np.diff(kept) > 0)
    expected = top_k_array(ids, values.astype(np.float64) * 100, k)
    assert top_k_array(ids[kept], values[kept].astype(np.float64) * 100, k) == expected


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(1, 4000),
    k=st.integers(1, 60),
    levels=st.integers(1, 50),
    removed=st.floats(0.0, 0.9),
    seed=st.integers(0, 2**32 - 1),
)
def test_candidates_hold_every_tie_of_the_kth_ranking_value(size, k, levels, removed, seed):
    rng = np.random.default_rng(seed)
    # Few distinct values, half of them moved one float32 step up: scores that differ but may
    # tie once the rule rounds them (x 100 to float32).
    base = rng.uniform(0.37, 1.0, levels).astype(np.float32)[rng.integers(0, levels, size)]
    row = np.where(rng.random(size) < 0.5, np.nextafter(base, np.float32(1.0)), base)
    row[rng.random(size) < removed] = -np.inf
    ids = np.array([f"d{i:04d}" for i in rng.permutation(size)])
    live = np.flatnonzero(row > -np.inf)
    kept = exact.candidates(row.copy(), k)
    assert np.all(np.diff(kept) > 0) and np.isin(kept, live).all()  # corpus order, live only
    expected = top_k_array(ids[live], row[live].astype(np.float64) * 100, k)
    assert top_k_array(ids[kept], row[kept].astype(np.float64) * 100, k) == expected
    assert len(kept) >= min(k, len(live))


def test_flat_search_returns_faiss_flat_scores_best_first():
    import faiss

    rng = np.random.default_rng(5)
    vectors, queries = _dyadic(rng, (500, 10), top=1000), _dyadic(rng, (3, 10), top=1000)
    flat = faiss.IndexFlatIP(10)
    flat.add(vectors)
    expected_scores, expected_positions = flat.search(queries, 40)
    scores, positions = VectorIndex(vectors).search(queries, 40)
    assert np.array_equal(scores, expected_scores)
    assert np.array_equal(positions, expected_positions)  # no two of these scores tie
    assert VectorIndex(vectors).search(queries, 900)[1].shape == (3, 500)  # n above the corpus


def test_two_passages_with_one_vector_score_alike_wherever_they_are():
    # BLAS rounds by a column's place in its tile too: the same vector at positions 0 and
    # 1,999 must get one score, and the tie goes by doc id.
    vectors, queries, ids, none = random_search(7, 2000, 40, 48)
    vectors[1999] = vectors[0]
    for found in dense_top_k(VectorIndex(vectors), queries, ids, 2000, none):
        assert found["d0000"] == found["d1999"]
        order = list(found)
        assert order.index("d1999") == order.index("d0000") - 1  # ties by doc id, descending


def test_plain_cosine_scale_ranks_random_vectors_as_x100_and_writes_the_cosine():
    vectors, queries, ids, none = random_search(7, 500, 20, 32)
    index = VectorIndex(vectors)
    cosine = dense_top_k(index, queries, ids, 50, none, scale=1.0)
    x100 = dense_top_k(index, queries, ids, 50, none)
    assert [list(c) for c in cosine] == [list(h) for h in x100]
    products = (queries @ vectors.T).astype(np.float32)
    for query, found in enumerate(cosine):  # the inner product itself, not x 100
        expected = {d: float(products[query, int(d[1:])]) for d in found}
        assert found == pytest.approx(expected, abs=1e-6)
        assert all(-1.0 <= s <= 1.0 for s in found.values())


def test_plain_cosine_scale_keeps_apart_the_near_ties_x100_merges():
    # The official code ranks a cosine-writing model's float32 cosines (pytrec_eval): two that
    # x 100 rounds to one float32 stay in cosine order there, and so here at scale 1.
    low, high = _merging_pair()
    vectors = np.array([[low, 0.0], [high, 0.0], [0.25, 0.0]], dtype=np.float32)
    ids, queries = np.array(["b", "a", "c"]), np.array([[1.0, 0.0]])
    none = [np.array([], dtype=np.int64)]
    assert list(dense_top_k(VectorIndex(vectors), queries, ids, 3, none, scale=1.0)[0]) == [
        "a",
        "b",
        "c",
    ]
    assert list(dense_top_k(VectorIndex(vectors), queries, ids, 3, none)[0]) == ["b", "a", "c"]


def test_an_hnsw_query_finds_the_same_alone_as_beside_one_with_many_exclusions():
    # The search breadth (efSearch) follows the number of results asked for: a companion's
    # exclusions must not widen another query's search.
    rng = np.random.default_rng(10)
    vectors = l2_normalise(rng.normal(size=(5000, 32)))
    queries = l2_normalise(rng.normal(size=(2, 32)))
    ids = np.array([f"d{i:04d}" for i in range(5000)])
    index = VectorIndex(vectors, "hnsw", hnsw_m=8, ef_search=16)
    none = np.array([], dtype=np.int64)
    alone = dense_top_k(index, queries[:1], ids, 10, [none])[0]
    beside = dense_top_k(index, queries, ids, 10, [none, np.arange(1000)])[0]
    assert beside == alone

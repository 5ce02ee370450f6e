import math

import numpy as np
import pytest
from scipy import stats as sps

from mmbright_core.analysis.rankdiff import kendall_tau_b, pushed_down, rank_diff, rbo
from mmbright_core.errors import InputError


def test_rbo_hand_computed_equal_lengths():
    # A = a b c, B = b a d, p = 0.9. Overlaps X_1..3 = 0, 2, 2.
    # (1-p)/p * (0/1*0.9 + 2/2*0.81 + 2/3*0.729) + 2/3*0.729 = 0.144 + 0.486 = 0.63
    assert rbo(["a", "b", "c"], ["b", "a", "d"]) == pytest.approx(0.63)


def test_rbo_hand_computed_uneven_lengths():
    # S = a, L = b a: X_1 = 0, X_2 = 1, s = 1, l = 2.
    # (1-p)/p * (0 + 1/2*0.81 + X_s*(2-1)/(1*2)*0.81 [X_s = 0]) + ((1-0)/2 + 0/1)*0.81
    # = 0.045 + 0.405 = 0.45
    assert rbo(["a"], ["b", "a"]) == pytest.approx(0.45)
    assert rbo(["b", "a"], ["a"]) == pytest.approx(0.45)
    # S = a, L = a b: the short list is assumed to keep agreeing, so RBO is 1.
    assert rbo(["a"], ["a", "b"]) == pytest.approx(1.0)


def test_rbo_extremes_and_other_persistence():
    assert rbo(list("abcdefghij"), list("abcdefghij")) == pytest.approx(1.0)
    assert rbo(list("abc"), list("xyz")) == 0.0
    assert rbo([], ["a"]) == 0.0
    assert math.isnan(rbo([], []))
    # p = 0.5, A = a b, B = b a: X = 0, 2 -> 1 * (0 + 1*0.25) + 1*0.25 = 0.5
    assert rbo(["a", "b"], ["b", "a"], p=0.5) == pytest.approx(0.5)
    with pytest.raises(InputError):
        rbo(["a"], ["a"], p=1.0)


@pytest.mark.parametrize("seed", range(5))
def test_kendall_tau_b_equals_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=15)
    y = rng.integers(0, 6, size=15)
    assert kendall_tau_b(x, y) == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)


def test_kendall_tau_b_constant_is_nan():
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_rank_diff_without_missing_items_matches_scipy():
    # The same five documents in both runs, reordered: no document is missing.
    run_a = {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0}
    run_b = {"d1": 3.0, "d2": 5.0, "d3": 1.0, "d4": 4.0, "d5": 2.0}
    diff = rank_diff({"d1": 1}, run_a, run_b, k=5)
    assert list(diff.docs["change"]) == [
        "moved up 1",
        "moved up 2",
        "moved down 2",
        "moved up 1",
        "moved down 2",
    ]
    assert list(diff.docs["move"]) == list(diff.docs["change"])
    expected = sps.kendalltau(diff.docs["rank_a"], diff.docs["rank_b"]).statistic
    assert diff.kendall_tau == pytest.approx(expected)
    # B ranks d2 d4 d1 d5 d3 (RBO of a reorder of the same five is < 1).
    assert list(diff.docs["doc_id"]) == ["d2", "d4", "d1", "d5", "d3"]
    assert 0.0 < diff.rbo < 1.0


def test_rank_diff_moves_by_hand():
    qrels = {"d1": 1, "d2": 1, "d3": 0}
    run_a = {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6}
    run_b = {"d3": 0.9, "d4": 0.8, "d1": 0.7, "d5": 0.6}
    diff = rank_diff(qrels, run_a, run_b, k=2)
    rows = {r.doc_id: r for r in diff.docs.itertuples()}
    assert list(diff.docs["doc_id"]) == ["d3", "d4", "d1", "d2"]
    assert rows["d1"].change == "relevant dropped" and rows["d1"].rank_b == 3
    assert rows["d2"].change == "relevant dropped" and math.isnan(rows["d2"].rank_b)
    assert rows["d3"].change == "non-relevant entered" and rows["d3"].relevance == 0
    assert rows["d4"].change == "unjudged entered" and math.isnan(rows["d4"].relevance)
    assert (rows["d1"].move, rows["d2"].move, rows["d4"].move) == (
        "moved down 2",
        "not in B",
        "moved up 2",
    )
    # d2 is absent from B: ranked 5 (below B's four). Ranks A 1 2 3 4, B 3 5 1 2:
    # concordant pairs (d1,d2), (d3,d4); the other four discordant: tau = -2/6.
    assert diff.kendall_tau == pytest.approx(-1 / 3)
    assert diff.rbo == 0.0


def test_rank_diff_ties_follow_the_ranking_rule():
    # Equal scores: doc id descending, so "b" ranks above "a" in both runs.
    diff = rank_diff({}, {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, k=1)
    assert list(diff.docs["doc_id"]) == ["b"]
    assert diff.rbo == 1.0


def test_rank_diff_rejects_bad_cutoff():
    with pytest.raises(InputError):
        rank_diff({}, {}, {}, k=0)


def test_pushed_down_names_the_relevant_items_b_lowered_and_what_rose_above_them():
    # A: r1 r2 x y; B: x r1 z r2 (r2 falls 2 -> 4, r1 1 -> 2; x and z rise above r2).
    qrels = {"r1": 1, "r2": 2, "x": 0}
    run_a = {"r1": 4.0, "r2": 3.0, "x": 2.0, "y": 1.0}
    run_b = {"x": 4.0, "r1": 3.0, "z": 2.0, "r2": 1.0}
    pushed, displacing = pushed_down(rank_diff(qrels, run_a, run_b, k=4).docs, k=4)
    assert sorted(pushed["doc_id"]) == ["r1", "r2"]
    assert sorted(displacing["doc_id"]) == ["x", "z"]  # y fell, so it displaced nothing


def test_pushed_down_is_empty_when_b_lowers_no_relevant_item():
    docs = rank_diff({"r": 1}, {"r": 2.0, "x": 1.0}, {"r": 2.0, "y": 1.0}, k=2).docs
    pushed, displacing = pushed_down(docs, k=2)
    assert pushed.empty and displacing.empty

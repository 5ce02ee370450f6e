"""The one ranking rule: score descending, ties by doc id descending (trec_eval)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mmbright_core.ranking import rank_order, ranked, top_k

SCORES = {"d1": 1.0, "d10": 2.0, "d9": 2.0, "é": 0.5, "e": 0.5}


def test_ties_break_by_doc_id_descending_in_string_order() -> None:
    # "d9" > "d10" as strings (as strcmp orders them), and "é" (U+00E9) > "e".
    assert [d for d, _ in ranked(SCORES)] == ["d9", "d10", "d1", "é", "e"]


def test_top_k_excludes_before_the_cut() -> None:
    assert list(top_k(SCORES, 2)) == ["d9", "d10"]
    # Excluding d9 lets d1 into the top 2 instead of leaving a hole.
    assert top_k(SCORES, 2, exclude={"d9"}) == {"d10": 2.0, "d1": 1.0}
    assert top_k(SCORES, 10) == dict(ranked(SCORES))
    assert top_k({}, 5) == {}


doc_ids = st.text(alphabet="ab9é0", min_size=1, max_size=3)
runs = st.dictionaries(doc_ids, st.sampled_from([0.0, 0.5, 1.0, -2.0]), max_size=25)


@settings(max_examples=200, deadline=None)
@given(runs, st.integers(min_value=0, max_value=30), st.sets(doc_ids, max_size=5))
def test_top_k_is_the_head_of_the_ranking(scores: dict, k: int, exclude: set) -> None:
    head = [(d, s) for d, s in ranked(scores) if d not in exclude][:k]
    assert list(top_k(scores, k, exclude).items()) == head


@settings(max_examples=200, deadline=None)
@given(runs)
def test_rank_order_agrees_with_ranked(scores: dict) -> None:
    ids = np.array(list(scores), dtype=str)
    values = np.array(list(scores.values()), dtype=np.float64)
    order = rank_order(ids, values)
    assert [str(ids[i]) for i in order] == [d for d, _ in ranked(scores)]

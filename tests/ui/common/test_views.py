"""The inspector's and per-query page's tables: filters, the ranking cut, missed items, walking."""

from __future__ import annotations

import math

import pandas as pd

from mmbright_core.ui.common import views


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "domain": ["a", "a", "b", "b"],
            "query_id": ["1", "2", "3", "4"],
            "nDCG@10": [0.1, 0.9, math.nan, 0.5],
            "n_images": [0, 3, 1, 6],
        }
    )


def test_filter_rows_by_domain_images_and_score():
    rows = _rows()
    assert list(views.filter_rows(rows, "nDCG@10")["query_id"]) == ["1", "2", "4"]
    assert list(views.filter_rows(rows, "nDCG@10", domains=["b"])["query_id"]) == ["4"]
    assert list(views.filter_rows(rows, "nDCG@10", images=(1, 5))["query_id"]) == ["2"]
    kept = views.filter_rows(rows, "nDCG@10", scores=(0.0, 0.5))
    assert list(kept["query_id"]) == ["1", "4"]


def test_ranking_applies_exclusions_before_the_cut():
    scores = {"x": 3.0, "y": 2.0, "z": 1.0, "w": 1.0}
    top, removed = views.ranking(scores, {"y": 1, "w": 0}, {"x"}, k=2)
    # x is excluded; z and w tie at 1.0 and the larger id (z) ranks first.
    assert list(top["doc_id"]) == ["y", "z"]
    assert top["relevance"].tolist()[0] == 1.0 and math.isnan(top["relevance"].tolist()[1])
    assert list(removed["doc_id"]) == ["x"] and removed["raw_rank"].tolist() == [1]


def test_missed_lists_relevant_outside_the_top_with_ranks():
    scores = {"a": 5.0, "b": 4.0, "c": 3.0}
    out = views.missed(scores, {"c": 2, "q": 1, "a": 1}, set(), k=2)
    assert list(out["doc_id"]) == ["c", "q"]
    assert out["rank"].tolist()[0] == 3.0 and math.isnan(out["rank"].tolist()[1])


def test_walk_wraps_and_enters_the_list():
    order = [("a", "1"), ("a", "2"), ("b", "3")]
    assert views.walk(order, ("b", "3"), 1) == ("a", "1")
    assert views.walk(order, ("a", "1"), -1) == ("b", "3")
    assert views.walk(order, ("z", "9"), 1) == ("a", "1")
    assert views.walk([], None, 1) is None


PAIR = "physics/ab12_3.txt|||physics/physics_ab12_0001/image_1.png"
TEXT_ONLY = "physics/ab12_3.txt|||__NO_IMAGE__"


def test_named_columns_names_both_runs_keeps_ranks_whole_and_pairs_readable():
    docs = pd.DataFrame(
        {
            "doc_id": [PAIR, TEXT_ONLY],
            "relevance": [2.0, math.nan],
            "rank_a": [3.0, math.nan],
            "rank_b": [1.0, 2.0],
            "move": ["moved up 2", "not in A"],
        }
    )
    out = views.named_columns(docs, "bm25", "ocr-bm25")
    assert list(out.columns) == [
        "document",
        "doc_id",
        "relevance",
        "rank (bm25)",
        "rank (ocr-bm25)",
        "move",
    ]
    assert list(out["document"]) == [
        "physics/ab12_3.txt + image_1.png",
        "physics/ab12_3.txt (text only)",
    ]
    assert list(out["doc_id"]) == [PAIR, TEXT_ONLY]
    text = out.to_csv(index=False)
    assert "3.0" not in text and "1.0" not in text and ",3," in text
    summary = pd.DataFrame(
        {"scope": ["pooled"], "mean_a": [0.5], "mean_b": [0.25], "delta": [-0.25]}
    )
    named = views.named_columns(summary, "bm25", "ocr-bm25", "nDCG@10")
    assert list(named.columns) == [
        "scope",
        "nDCG@10 (bm25)",
        "nDCG@10 (ocr-bm25)",
        "delta (ocr-bm25 − bm25)",
    ]

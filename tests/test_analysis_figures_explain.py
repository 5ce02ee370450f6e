"""The inspector's figures: the slope of relevant items' ranks and the text/image split."""

from __future__ import annotations

import math

import pandas as pd

from mmbright_core.analysis import figures
from mmbright_core.analysis.rankdiff import rank_diff


def test_slope_draws_each_relevant_item_from_rank_a_to_rank_b() -> None:
    # d1 falls 1 -> 3, d2 leaves B's ranking, d3 (not relevant) is not drawn.
    diff = rank_diff(
        {"d1": 2, "d2": 1, "d3": 0},
        {"d1": 3.0, "d2": 2.0, "d3": 1.0},
        {"d3": 3.0, "x": 2.0, "d1": 1.0},
        k=2,
    )
    fig = figures.rank_slope(diff.docs, "bm25", "ocr-bm25", k=2).to_dict()
    lines = {trace["name"]: trace for trace in fig["data"]}
    assert set(lines) == {"d1", "d2"}
    assert list(lines["d1"]["y"]) == [1.0, 3.0] and list(lines["d1"]["text"]) == ["1", "3"]
    assert list(lines["d2"]["y"]) == [2.0, 3.0]  # absent: drawn below the cut
    assert list(lines["d2"]["text"]) == ["2", "not ranked"]
    assert lines["d1"]["line"]["color"] == lines["d2"]["line"]["color"]  # both fell
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"
    assert list(fig["layout"]["xaxis"]["categoryarray"]) == ["bm25", "ocr-bm25"]


def test_slope_escapes_names_and_tells_equal_names_apart() -> None:
    docs = pd.DataFrame(
        {"doc_id": ["<b>d</b>"], "relevance": [1.0], "rank_a": [4.0], "rank_b": [math.nan]}
    )
    fig = figures.rank_slope(docs, "<i>r</i>", "<i>r</i>").to_dict()
    (line,) = fig["data"]
    assert line["name"] == "&lt;b&gt;d&lt;/b&gt;"
    assert list(fig["layout"]["xaxis"]["categoryarray"]) == [
        "A: &lt;i&gt;r&lt;/i&gt;",
        "B: &lt;i&gt;r&lt;/i&gt;",
    ]
    assert "<i>" not in fig["layout"]["title"]["text"]


def test_slope_of_no_relevant_item_is_empty() -> None:
    docs = pd.DataFrame({"doc_id": ["d"], "relevance": [0.0], "rank_a": [1.0], "rank_b": [2.0]})
    assert figures.rank_slope(docs, "a", "b").to_dict()["data"] == []

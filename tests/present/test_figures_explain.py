"""The inspector's figures: the slope of relevant items' ranks and the text/image split."""

from __future__ import annotations

import math

import pandas as pd

from mmbright_core.analysis.rankdiff import rank_diff
from mmbright_core.present import figures, palette


def test_slope_draws_each_relevant_item_from_rank_a_to_rank_b() -> None:
    # d1 falls 1 -> 3, d2 leaves B's ranking, d3 (not relevant) is not drawn.
    diff = rank_diff(
        {"d1": 2, "d2": 1, "d3": 0},
        {"d1": 3.0, "d2": 2.0, "d3": 1.0},
        {"d3": 3.0, "x": 2.0, "d1": 1.0},
        k=2,
    )
    fig = figures.rank_slope(diff.docs, "bm25", "ocr-bm25", k=2).to_dict()
    lines = {trace["name"].split(" · ")[0]: trace for trace in fig["data"]}
    assert set(lines) == {"d1", "d2"}
    assert list(lines["d1"]["y"]) == [1.0, 3.0] and list(lines["d1"]["text"]) == ["1", "3"]
    assert list(lines["d2"]["y"]) == [2.0, 3.0]  # absent: drawn below the cut
    assert list(lines["d2"]["text"]) == ["2", "not ranked"]
    assert {line["line"]["dash"] for line in lines.values()} == {"dash"}  # both fell
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"
    assert list(fig["layout"]["xaxis"]["categoryarray"]) == ["bm25", "ocr-bm25"]


def test_slope_escapes_names_and_tells_equal_names_apart() -> None:
    docs = pd.DataFrame(
        {"doc_id": ["<b>d</b>"], "relevance": [1.0], "rank_a": [4.0], "rank_b": [math.nan]}
    )
    fig = figures.rank_slope(docs, "<i>r</i>", "<i>r</i>").to_dict()
    (line,) = fig["data"]
    assert line["name"] == "&lt;b&gt;d&lt;/b&gt; · grade 1"
    assert list(fig["layout"]["xaxis"]["categoryarray"]) == [
        "A: &lt;i&gt;r&lt;/i&gt;",
        "B: &lt;i&gt;r&lt;/i&gt;",
    ]
    assert "<i>" not in fig["layout"]["title"]["text"]


def test_slope_of_no_relevant_item_is_empty() -> None:
    docs = pd.DataFrame({"doc_id": ["d"], "relevance": [0.0], "rank_a": [1.0], "rank_b": [2.0]})
    assert figures.rank_slope(docs, "a", "b").to_dict()["data"] == []


def test_slope_names_task4_pairs_by_passage_and_image_and_colours_each_grade() -> None:
    # The passage's pair with its image is graded 2 and rises; its text-only pair, graded 1,
    # falls out of B's ranking.
    passage = "physics/ab12_88755.txt"
    with_image = f"{passage}|||physics/physics_ab12_0001/image_1.png"
    text_only = f"{passage}|||__NO_IMAGE__"
    docs = pd.DataFrame(
        {
            "doc_id": [with_image, text_only],
            "relevance": [2.0, 1.0],
            "rank_a": [3.0, 1.0],
            "rank_b": [1.0, math.nan],
        }
    )
    fig = figures.rank_slope(docs, "bm25", "ocr-bm25").to_dict()
    lines = {trace["name"]: trace for trace in fig["data"]}
    assert set(lines) == {
        f"{passage} + image_1.png · grade 2",
        f"{passage} (text only) · grade 1",
    }
    texts = " ".join(str(t.get("hovertemplate")) + t["name"] for t in fig["data"])
    assert "|||" not in texts and "__NO_IMAGE__" not in texts
    rose = lines[f"{passage} + image_1.png · grade 2"]
    fell = lines[f"{passage} (text only) · grade 1"]
    assert rose["line"]["color"] == palette.GRADES[2].hex
    assert fell["line"]["color"] == palette.GRADES[1].hex
    assert palette.GRADES[2].hex != palette.GRADES[1].hex
    assert (rose["line"]["dash"], fell["line"]["dash"]) == ("solid", "dash")

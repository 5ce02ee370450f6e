"""Where an image's weight lies: the centre cells, the shares and the groups, on real grids."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from corner_embedder import SPEC, demo_run, quarter
from PIL import Image

from mmbright_core.analysis.attribution import retriever_from_config
from mmbright_core.data.sources import Source, open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.present.region_overlay import region_name
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.dual.regions import (
    CENTRE,
    EDGES,
    NO_WEIGHT,
    TEXT,
    Case,
    case,
    centre_cells,
    explain_regions,
    query_weights,
    shares,
    text_cells,
    text_share,
    weight_groups,
    where,
)
from mmbright_core.retrieval.explanation import ImageRegions
from mmbright_core.types import TaskData


def _grid(values: np.ndarray) -> ImageRegions:
    rows = tuple(tuple(float(v) for v in row) for row in values)
    return ImageRegions("q.png", 70, 70, rows)


@pytest.mark.parametrize("grid", [1, 2, 3, 5, 7, 9, 16])
def test_the_centre_cells_are_those_the_sentence_calls_centre(grid: int):
    mask = centre_cells(grid)
    named = np.array(
        [[region_name(r, c, grid) == "centre" for c in range(grid)] for r in range(grid)]
    )
    assert (mask == named).all()


def test_shares_split_the_absolute_values_over_every_image():
    one = np.zeros((7, 7))
    one[0, 0], one[3, 3] = -3.0, 1.0  # a corner lowering, the centre raising
    other = np.zeros((7, 7))
    other[6, 2] = 4.0
    centre, edges = shares([_grid(one), _grid(other)])
    assert (centre, edges) == pytest.approx((1 / 8, 7 / 8))
    assert all(math.isnan(v) for v in shares([_grid(np.zeros((7, 7)))]))


def test_a_query_is_grouped_by_weight_per_cell():
    assert where(40 / 49, 7) == CENTRE  # the edges hold 40 of 49 cells: no more than their area
    assert where(0.9, 7) == EDGES
    assert where(float("nan"), 7) == NO_WEIGHT
    assert where(0.9, 7, text=0.5, text_area=0.25) == TEXT  # text first, when it weighs more
    assert where(0.9, 7, text=0.25, text_area=0.25) == EDGES  # no more than its area
    assert where(0.9, 7, text=1.0, text_area=1.0) == EDGES  # every cell text: no text group
    assert where(0.9, 7, text=float("nan"), text_area=0.5) == EDGES  # no OCR
    assert where(float("nan"), 7, text=0.0, text_area=0.5) == NO_WEIGHT


def test_text_cells_are_those_the_boxes_cover_a_tenth_of():
    image = _grid(np.zeros((7, 7)))  # 70 x 70 pixels: cells of 10 x 10
    # A line across the top three and a half cells, 5 pixels high (half of each, a quarter of
    # the fourth), and a sliver of 9 pixels in the last cell (under a tenth).
    mask = text_cells(image, [(0, 0, 35, 5), (60.2, 60, 60.9, 68.6)])
    expected = np.zeros((7, 7), dtype=bool)
    expected[0, :4] = True
    assert (mask == expected).all()
    assert not text_cells(image, []).any()
    assert text_cells(image, [(-5, -5, 500, 500)]).all()  # clipped to the image


def test_the_text_share_pools_the_values_and_the_cells_of_every_image():
    one = np.zeros((7, 7))
    one[0, 0], one[6, 6] = -3.0, 1.0
    other = np.zeros((7, 7))
    other[3, 3] = 4.0
    found = text_share([_grid(one), _grid(other)], [[(0, 0, 10, 10)], [(30, 30, 40, 40)]])
    assert found == pytest.approx((7 / 8, 2 / 98))
    assert text_share([_grid(one)], [[]]) == (0.0, 0.0)
    share, area = text_share([_grid(np.zeros((7, 7)))], [[(0, 0, 10, 10)]])
    assert math.isnan(share) and area == pytest.approx(1 / 49)


def test_the_case_compares_the_top_hit_with_the_best_relevant_item_below_it():
    assert case("d", "q", ["a", "b", "c"], {"c": 1, "b": 2}).versus == "b"
    assert case("d", "q", ["a", "b"], {"a": 1, "b": 1}).versus is None  # the top is relevant
    assert case("d", "q", ["a", "b"], {}).versus is None


def test_the_groups_count_queries_losses_and_mean_deltas():
    weights = pd.DataFrame(
        {
            "domain": ["d"] * 4,
            "query_id": ["q1", "q2", "q3", "q4"],
            "edge_share": [0.95, 0.5, 0.9, 0.2],
            "text_share": [0.5, float("nan"), 0.7, 0.9],
            "where": [EDGES, CENTRE, EDGES, TEXT],
        }
    )
    per_query = pd.DataFrame(
        {"domain": ["d"] * 4, "query_id": ["q1", "q2", "q3", "q4"], "delta": [-0.2, 0.1, 0.0, -0.5]}
    )
    groups = weight_groups(weights, per_query).set_index("group")
    assert list(groups.index) == [TEXT, EDGES, CENTRE]
    assert groups.loc[EDGES, "queries"] == 2 and groups.loc[EDGES, "losses"] == 1
    assert groups.loc[EDGES, "delta"] == pytest.approx(-0.1)
    assert groups.loc[EDGES, "edge_share"] == pytest.approx(0.925)
    assert groups.loc[EDGES, "text_share"] == pytest.approx(0.6)
    assert (groups.loc[TEXT, "queries"], groups.loc[TEXT, "losses"]) == (1, 1)
    assert math.isnan(groups.loc[CENTRE, "text_share"])


def _demo_case(tmp_path: Path) -> tuple[Retriever, Source, TaskData, Case]:
    """The corner plugin's run on the demo's biology queries, and its first query's case."""
    outputs = read_outputs(demo_run(tmp_path / "run"))
    retriever = retriever_from_config(outputs.run_config, import_modules=(SPEC,))
    source = open_source("demo")
    data = source.task(2, "biology")
    ranked = outputs.runs["biology"]["biology_0"]
    return (
        retriever,
        source,
        data,
        case("biology", "biology_0", list(ranked), data.qrels["biology_0"]),
    )


def test_query_weights_gives_each_grids_shares_and_says_why_a_case_has_none(tmp_path: Path):
    retriever, source, data, good = _demo_case(tmp_path)
    missing = Case("biology", "biology_0", "biology/not-there.txt", None)
    seen = []
    table, skipped = query_weights(
        retriever, source, [good, missing], lambda domain: data, grid=5,
        cache_dir=str(tmp_path / "cache"), progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert seen == [(1, 2), (2, 2)]
    assert [(c, "not in the corpus" in why) for c, why in skipped] == [(missing, True)]
    direct = explain_regions(
        retriever, data, source, "biology_0", good.doc_id, versus=good.versus, grid=5,
        cache_dir=tmp_path / "other",
    )  # fmt: skip
    (row,) = table.itertuples(index=False)
    assert (row.centre_share, row.edge_share) == pytest.approx(shares(direct.images))
    assert row.where == where(row.edge_share, 5)


def test_text_boxes_over_the_region_the_model_sees_group_the_query_as_text(tmp_path: Path):
    # The plugin sees only the top-left quarter of an image: text found there holds the weight.
    retriever, source, data, one = _demo_case(tmp_path)
    pictures: list[Image.Image] = []

    def boxes(picture: Image.Image) -> list[tuple[float, float, float, float]]:
        pictures.append(picture)
        return [tuple(float(v) for v in quarter(picture))]  # type: ignore[list-item]

    cache = str(tmp_path / "cache")
    weigh = dict(grid=6, cache_dir=cache, text_boxes=boxes)
    table, _ = query_weights(retriever, source, [one], lambda domain: data, **weigh)  # type: ignore[arg-type]
    direct = explain_regions(
        retriever, data, source, "biology_0", one.doc_id, versus=one.versus, grid=6,
        cache_dir=tmp_path / "other",
    )  # fmt: skip
    (image,) = direct.images
    assert [p.size for p in pictures] == [(image.width, image.height)]
    (row,) = table.itertuples(index=False)
    expected = text_share(direct.images, [[tuple(float(v) for v in quarter(pictures[0]))]])
    assert (row.text_share, row.text_area) == pytest.approx(expected)
    assert row.text_share == pytest.approx(1.0) and row.text_area == pytest.approx(9 / 36)
    assert row.where == TEXT
    again, _ = query_weights(retriever, source, [one], lambda domain: data, **weigh)  # type: ignore[arg-type]
    assert len(pictures) == 2 and pictures[1].tobytes() == pictures[0].tobytes()  # read back
    pd.testing.assert_frame_equal(again, table)
    without, _ = query_weights(
        retriever, source, [one], lambda domain: data, grid=6, cache_dir=cache
    )
    assert math.isnan(without["text_share"].iloc[0]) and without["where"].iloc[0] != TEXT

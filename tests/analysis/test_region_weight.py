"""Where an image's weight lies: the centre cells, the shares and the groups, on real grids."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from corner_embedder import SPEC, demo_run

from mmbright_core.analysis.attribution import explain_regions, retriever_from_config
from mmbright_core.analysis.region_weight import (
    CENTRE,
    EDGES,
    NO_WEIGHT,
    Case,
    case,
    centre_cells,
    query_weights,
    shares,
    weight_groups,
    where,
)
from mmbright_core.analysis.regions import ImageRegions
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.present.region_overlay import region_name


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


def test_the_case_compares_the_top_hit_with_the_best_relevant_item_below_it():
    assert case("d", "q", ["a", "b", "c"], {"c": 1, "b": 2}).versus == "b"
    assert case("d", "q", ["a", "b"], {"a": 1, "b": 1}).versus is None  # the top is relevant
    assert case("d", "q", ["a", "b"], {}).versus is None


def test_the_groups_count_queries_losses_and_mean_deltas():
    weights = pd.DataFrame(
        {
            "domain": ["d"] * 3,
            "query_id": ["q1", "q2", "q3"],
            "edge_share": [0.95, 0.5, 0.9],
            "where": [EDGES, CENTRE, EDGES],
        }
    )
    per_query = pd.DataFrame(
        {"domain": ["d"] * 3, "query_id": ["q1", "q2", "q3"], "delta": [-0.2, 0.1, 0.0]}
    )
    groups = weight_groups(weights, per_query).set_index("group")
    assert list(groups.index) == [EDGES, CENTRE]
    assert groups.loc[EDGES, "queries"] == 2 and groups.loc[EDGES, "losses"] == 1
    assert groups.loc[EDGES, "delta"] == pytest.approx(-0.1)
    assert groups.loc[EDGES, "edge_share"] == pytest.approx(0.925)


def test_query_weights_gives_each_grids_shares_and_says_why_a_case_has_none(tmp_path: Path):
    outputs = read_outputs(demo_run(tmp_path / "run"))
    retriever = retriever_from_config(outputs.run_config, import_modules=(SPEC,))
    source = open_source("demo")
    data = source.task(2, "biology")
    ranked = outputs.runs["biology"]["biology_0"]
    good = case("biology", "biology_0", list(ranked), data.qrels["biology_0"])
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

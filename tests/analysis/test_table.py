import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mmbright_core.analysis.leaderboard import leaderboard
from mmbright_core.analysis.table import results_table, source_results_table
from mmbright_core.benchmark import apply_protocol, score_task
from mmbright_core.data.view import TaskView
from mmbright_core.io.runs import run_to_frame
from mmbright_core.measures import parse_measure
from mmbright_core.types import ImageRef, Query, TaskData

QUERIES = (
    Query("q1", "bio", "why?", (ImageRef("i1.png"), ImageRef("i2.png"))),
    Query("q2", "bio", "how does it work", ()),
    Query("q3", "bio", "no judgments", (ImageRef("bad.svg"),)),
    Query("q4", "bio", "not in the run", ()),
)
TASK = TaskData(
    task=2,
    domain="bio",
    protocol="paper",
    queries=QUERIES,
    corpus=(),
    qrels={"q1": {"d1": 1, "d3": 0}, "q2": {"d9": 2, "d8": 1}, "q3": {}, "q4": {"d1": 1}},
    excluded={"q1": frozenset({"dx"})},
)
RUN = {
    # dx is excluded, so d1 rises from rank 3 to rank 2: nDCG@10 = (1/log2 3) / 1.
    "q1": {"dx": 3.0, "d3": 2.0, "d1": 1.0},
    # d9 (rel 2) at rank 2: DCG = 2/log2 3; IDCG = 2 + 1/log2 3.
    "q2": {"d0": 5.0, "d9": 4.0},
    "q3": {"d1": 1.0},
}


def _problem(domain, path):
    return "SVG payload" if path.endswith(".svg") else None


def test_results_table_by_hand():
    table = results_table([TASK], {"r": {"bio": RUN}}, image_problem=_problem)
    assert list(table.columns) == [
        "run", "task", "domain", "query_id", "nDCG@10", "n_images", "n_decodable_images",
        "query_chars", "n_judged", "n_relevant", "first_relevant_rank", "covered",
    ]  # fmt: skip
    rows = table.set_index("query_id")
    assert rows.loc["q1", "nDCG@10"] == pytest.approx(1 / math.log2(3))
    assert rows.loc["q2", "nDCG@10"] == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert math.isnan(rows.loc["q3", "nDCG@10"])  # no judgment: dropped
    assert math.isnan(rows.loc["q4", "nDCG@10"])  # absent from the run under "skip"
    assert list(rows["first_relevant_rank"].iloc[:2]) == [2.0, 2.0]
    assert list(rows["covered"]) == [True, True, True, False]
    assert list(rows["n_images"]) == [2, 0, 1, 0]
    assert list(rows["n_decodable_images"]) == [2, 0, 0, 0]
    assert list(rows["query_chars"]) == [4, 16, 12, 14]
    assert list(rows["n_judged"]) == [2, 2, 0, 1]
    assert list(rows["n_relevant"]) == [1, 2, 0, 1]


def test_missing_zero_and_unknown_decodability():
    measures = [parse_measure("nDCG@10"), "RR", "nDCG@10"]  # values, names, repeats
    table = results_table([TASK], {"r": {"bio": RUN}}, missing="zero", measures=measures)
    assert [c for c in table.columns if c in ("nDCG@10", "RR")] == ["nDCG@10", "RR"]
    rows = table.set_index("query_id")
    assert rows.loc["q4", "nDCG@10"] == 0.0 and rows.loc["q4", "RR"] == 0.0
    assert math.isnan(rows.loc["q4", "first_relevant_rank"])
    assert rows.loc["q1", "RR"] == pytest.approx(0.5)
    assert table["n_decodable_images"].isna().all()


def test_frame_and_dict_runs_give_the_same_table():
    as_dict = results_table([TASK], {"r": {"bio": RUN}}, measures=["nDCG@10", "AP", "P@5"])
    frame = run_to_frame(RUN)
    as_frame = results_table([TASK], {"r": {"bio": frame}}, measures=["nDCG@10", "AP", "P@5"])
    as_arrow = results_table(
        [TASK], {"r": {"bio": pa.Table.from_pandas(frame)}}, measures=["nDCG@10", "AP", "P@5"]
    )
    pd.testing.assert_frame_equal(as_dict, as_frame)
    pd.testing.assert_frame_equal(as_dict, as_arrow)


def test_several_runs_and_a_missing_domain():
    table = results_table([TASK], {"a": {"bio": RUN}, "b": {}})
    assert list(table["run"].unique()) == ["a", "b"]
    b = table[table["run"] == "b"]
    assert not b["covered"].any() and b["nDCG@10"].isna().all()


@pytest.mark.parametrize("seed", range(4))
def test_frames_get_the_benchmark_exclusions_and_cut_as_dicts_do(seed):
    # Queries around the top-1000 cut, few distinct scores (ties broken by doc id
    # descending), excluded ids, and a frame whose rows come in any order.
    rng = np.random.default_rng(seed)
    run = {}
    for q in range(6):
        n = int(rng.integers(990, 1_006)) if q % 2 else int(rng.integers(1, 12))
        docs = rng.choice(1_100, size=n, replace=False)
        run[f"q{q}"] = {f"d{d:04d}": float(rng.integers(0, 3)) for d in docs}
    excluded = {f"q{q}": frozenset(f"d{d:04d}" for d in rng.choice(20, 4)) for q in range(6)}
    qrels = {q: {f"d{d:04d}": int(rng.integers(0, 3)) for d in rng.choice(1_100, 30)} for q in run}
    queries = tuple(Query(q, "bio", "text", ()) for q in run)
    task = TaskData(2, "bio", "paper", queries, (), qrels, excluded)
    measures = ["nDCG@10", "AP", "R@1000", "Judged@1000"]
    as_dict = results_table([task], {"r": {"bio": run}}, measures=measures)
    frame = run_to_frame(run).sample(frac=1.0, random_state=seed)
    as_frame = results_table([task], {"r": {"bio": frame}}, measures=measures)
    pd.testing.assert_frame_equal(as_dict, as_frame)
    # The oracle breaks its top-100 ties by the run's order, which a cut leaves in ranking
    # order: a frame in the dict's order gives the same oracle.
    in_order = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    oracle = ["OracleNDCG@10", "OracleNDCG@100"]
    pd.testing.assert_frame_equal(
        results_table([task], {"r": {"bio": run}}, measures=oracle),
        results_table([task], {"r": {"bio": in_order}}, measures=oracle),
    )
    judged = as_dict.set_index("query_id")["Judged@1000"]
    cut = {q: apply_protocol(run, excluded)[q] for q in run if run[q]}
    assert {q: judged[q] for q in cut} == {
        q: sum(d in qrels[q] for d in docs) / 1000 for q, docs in cut.items()
    }


A1, A3 = "academia/a1b2c3d4_101.txt", "academia/e5f6a7b8_201.txt"
A_HARD, A_NEG = "academia/0123456789abcdef_301.txt", "academia/deadbeef_501.txt"
B1, B3 = "biology/fec40b40_1635_0.txt", "biology/abcdef12_77_0.txt"
FIXTURE_RUN = {
    "academia": {"a1": {A_HARD: 10.0, A_NEG: 9.0, A1: 8.0}, "a2": {A1: 2.0, A3: 1.0}},
    "biology": {"b1": {B3: 2.0, B1: 1.0}, "b2": {B3: 1.0}},
}


def test_source_table_agrees_with_score_task(source):
    table = source_results_table(
        TaskView(source, 2), {"run": FIXTURE_RUN}, measures=["nDCG@10", "AP"]
    )
    scores = score_task(TaskView(source, 2), FIXTURE_RUN, measures=["nDCG@10", "AP"])
    for domain, result in scores.per_domain.items():
        rows = table[table["domain"] == domain].set_index("query_id")
        for measure in ("nDCG@10", "AP"):
            for query_id, value in result.per_query[measure].items():
                assert rows.loc[query_id, measure] == pytest.approx(value, abs=1e-12)
    board = leaderboard(table)
    assert board.loc[(2, "run"), "Avg."] == round(scores.macro["nDCG@10"] * 100, 1)
    # a1's negatives are excluded, so its first relevant item (A1) is ranked first.
    assert table.set_index("query_id").loc["a1", "first_relevant_rank"] == 1.0


def test_source_table_counts_decodable_query_images(source):
    table = source_results_table(TaskView(source, 2), {"run": FIXTURE_RUN}, domains=["academia"])
    rows = table.set_index("query_id")
    # a1: two good images; a2: a corrupt one and a good one; a4: missing, SVG and a 1x1 (kept).
    assert rows.loc["a1", ["n_images", "n_decodable_images"]].tolist() == [2, 2]
    assert rows.loc["a2", ["n_images", "n_decodable_images"]].tolist() == [2, 1]
    assert rows.loc["a4", ["n_images", "n_decodable_images"]].tolist() == [3, 1]

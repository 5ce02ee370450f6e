from __future__ import annotations

import math

import pytest

from mmbright_core.benchmark import apply_protocol, score_task
from mmbright_core.data.sources import Source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError, InputWarning, UnknownNameError
from mmbright_core.task_runs import runs_by_domain

A1, A2, A3 = "academia/a1b2c3d4_101.txt", "academia/a1b2c3d4_102.txt", "academia/e5f6a7b8_201.txt"
A_HARD, A_EMPTY = "academia/0123456789abcdef_301.txt", "academia/c0ffee00_401.txt"
A_DUP, A_NEG = "academia/c0ffee00_402.txt", "academia/deadbeef_501.txt"
B1, B2 = "biology/fec40b40_1635_0.txt", "biology/fec40b40_1635_1.txt"
B3, B_HARD = "biology/abcdef12_77_0.txt", "biology/fedcba9876543210_5_0.txt"

RUNS = {
    "academia": {
        "a1": {A_HARD: 10.0, A_NEG: 9.0, A1: 8.0},  # both negatives excluded: A1 first
        "a2": {A3: 5.0, A_DUP: 4.0, A_EMPTY: 3.0},  # golds at ranks 1 and 3
        "a4": {A3: 1.0},  # "a3" has no ranking
    },
    "biology": {
        "b1": {B_HARD: 9.0, B2: 8.0, B1: 7.0},  # B1 second once B_HARD is excluded
        "b2": {B3: 1.0},
    },
}
A2_NDCG = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
ACADEMIA_SKIP = (1 + A2_NDCG + 1) / 3
ACADEMIA_ZERO = (1 + A2_NDCG + 0 + 1) / 4
BIOLOGY = (1 / math.log2(3) + 1) / 2


def test_macro_average_over_domains_with_exclusions(source: Source) -> None:
    scores = score_task(TaskView(source, 1), RUNS)
    academia = scores.per_domain["academia"]
    assert academia.per_query["nDCG@10"]["a1"] == pytest.approx(1.0, abs=1e-12)
    assert academia.aggregate["nDCG@10"] == pytest.approx(ACADEMIA_SKIP, abs=1e-12)
    assert scores.per_domain["biology"].aggregate["nDCG@10"] == pytest.approx(BIOLOGY, abs=1e-12)
    assert scores.macro["nDCG@10"] == pytest.approx((ACADEMIA_SKIP + BIOLOGY) / 2, abs=1e-12)
    assert scores.query_counts == {"academia": 3, "biology": 2}
    assert (scores.task, scores.protocol, scores.missing) == (1, "paper", "skip")
    assert scores.scored_domains == ("academia", "biology")


def test_missing_zero_counts_absent_queries(source: Source) -> None:
    scores = score_task(
        TaskView(source, 2), RUNS, missing="zero"
    )  # Task 2 has no "a3": same values
    assert scores.per_domain["academia"].aggregate["nDCG@10"] == pytest.approx(ACADEMIA_SKIP)
    zero = score_task(TaskView(source, 1), RUNS, missing="zero")
    assert zero.per_domain["academia"].aggregate["nDCG@10"] == pytest.approx(ACADEMIA_ZERO)
    assert zero.missing == "zero" and zero.query_counts["academia"] == 4


def test_exclusion_happens_before_the_top_1000_cut() -> None:
    fillers = {f"academia/ffffffff_{i}.txt": 1.0 - i / 10_000 for i in range(999)}
    run = {"a4": {A_HARD: 100.0, **fillers, A3: 0.0}}  # A3 is 1001st, 1000th without A_HARD
    cut = apply_protocol(run, {"a4": {A_HARD}})
    assert len(cut["a4"]) == 1000 and A3 in cut["a4"] and A_HARD not in cut["a4"]
    assert A3 not in apply_protocol(run, {})["a4"]


def test_top_1000_cut_changes_average_precision(source: Source) -> None:
    fillers = {f"academia/ffffffff_{i}.txt": 2.0 + i for i in range(1000)}
    runs = {"academia": {"a3": {**fillers, A2: 1.0}}}  # A2 ranked 1001st
    scores = score_task(TaskView(source, 1), runs, measures=("AP",))
    assert scores.per_domain["academia"].per_query["AP"]["a3"] == 0.0


def test_empty_qrels_queries_are_dropped(source: Source) -> None:
    runs = {
        "academia": {
            q: {"academia/academia_a1b2c3d4_0001/image_1.png": 1.0} for q in ("a1", "a2", "a4")
        }
    }
    scores = score_task(TaskView(source, 3), runs)
    result = scores.per_domain["academia"]
    assert "a4" not in result.per_query["nDCG@10"]
    assert result.counts.dropped_empty_qrels == 1 and scores.query_counts["academia"] == 2
    assert result.per_query["nDCG@10"]["a1"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_task4_protocol_is_recorded_and_unscored_domains_are_left_out(source: Source) -> None:
    pair = f"{B1}|||biology/biology_fec40b40_0001/image_1.png"
    scores = score_task(
        TaskView(source, 4), {"biology": {"b1": {pair: 1.0}}}, domains=["academia", "biology"]
    )
    assert scores.protocol == "paper"
    assert scores.scored_domains == ("biology",)
    # b1: the rel-2 pair first; ideal is 2 then 1 -> 2 / (2 + 1/log2(3)).
    assert scores.macro["nDCG@10"] == pytest.approx(2 / (2 + 1 / math.log2(3)))
    legacy = score_task(TaskView(source, 4, "legacy"), {"biology": {"b1": {pair: 1.0}}})
    assert legacy.protocol == "legacy" and legacy.macro["nDCG@10"] == 0.0
    with pytest.raises(UnknownNameError, match="domain"):
        score_task(TaskView(source, 1), {"gis": {}})


KNOWN = {"academia": {"a1", "a2"}, "biology": {"b1", "a2"}}


def test_runs_by_domain_prefixed_and_bare_ids():
    run = {"academia/a2": {"d": 1.0}, "b1": {"e": 2.0}, "zz": {"f": 3.0}}
    with pytest.warns(InputWarning, match=r"1 query id\(s\) belong to no domain .* 'zz'"):
        out = runs_by_domain(run, KNOWN, "r.trec")
    assert out == {"academia": {"a2": {"d": 1.0}}, "biology": {"b1": {"e": 2.0}}}


def test_runs_by_domain_rejects_ambiguous_ids():
    with pytest.raises(InputError, match="several domains"):
        runs_by_domain({"a2": {"d": 1.0}}, KNOWN, "r.trec")


def test_runs_by_domain_rejects_a_run_of_another_task():
    with pytest.raises(InputError, match="no query of the run belongs to this task"):
        runs_by_domain({"x9": {"d": 1.0}}, KNOWN, "r.trec")


def test_negatives_keep_leaves_negative_ids_in_the_ranking(source: Source) -> None:
    # a1's run puts both its negative_ids (A_HARD, A_NEG) above its gold A1; b1's puts
    # B_HARD above B2 and its gold B1.
    exclude = score_task(TaskView(source, 1), RUNS)
    keep = score_task(TaskView(source, 1), RUNS, negatives="keep")
    assert (exclude.negatives, keep.negatives) == ("exclude", "keep")
    academia, biology = keep.per_domain["academia"], keep.per_domain["biology"]
    assert exclude.per_domain["academia"].per_query["nDCG@10"]["a1"] == 1.0  # A1 first
    assert academia.per_query["nDCG@10"]["a1"] == pytest.approx(1 / math.log2(4))  # A1 third
    assert academia.per_query["nDCG@10"]["a4"] == 1.0  # a4's negative is not in its run
    assert academia.aggregate["nDCG@10"] == pytest.approx((0.5 + A2_NDCG + 1) / 3)  # 0.80
    assert biology.per_query["nDCG@10"]["b1"] == pytest.approx(1 / math.log2(4))  # B1 third
    assert biology.aggregate["nDCG@10"] == pytest.approx((0.5 + 1) / 2)
    assert exclude.macro["nDCG@10"] == pytest.approx((ACADEMIA_SKIP + BIOLOGY) / 2)
    assert keep.macro["nDCG@10"] == pytest.approx(((0.5 + A2_NDCG + 1) / 3 + 0.75) / 2)


def test_negatives_policy_is_recorded_only_where_it_applies(source: Source) -> None:
    task4 = {"academia": {"a1": {f"{A1}|||__NO_IMAGE__": 1.0}}}
    assert score_task(TaskView(source, 4), task4, negatives="keep").negatives == "exclude"
    with pytest.raises(UnknownNameError, match="negatives policy"):
        score_task(TaskView(source, 1), RUNS, negatives="drop")

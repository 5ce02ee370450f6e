"""Golden cases for ``evaluate``, with the arithmetic written out.

log2(2) = 1, log2(3) = 1.5849625, log2(4) = 2, log2(5) = 2.3219281.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import mmbright_core
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.measures import Measure
from mmbright_core.metrics import _ranks, evaluate

L3 = math.log2(3)
ALL = ("nDCG@3", "P@3", "R@3", "AP", "AP@2", "RR", "RR@1", "Judged@3", "OracleNDCG@3")


def as_frame(run: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def both_paths(qrels: dict, run: dict, measures=ALL, missing="skip") -> mmbright_core.EvalResult:
    """Evaluate from dicts and from a DataFrame; the two must agree exactly."""
    from_dict = evaluate(qrels, run, measures, missing)
    from_frame = evaluate(qrels, as_frame(run), measures, missing)
    assert from_frame.per_query == from_dict.per_query
    assert from_frame.counts == from_dict.counts
    return from_dict


def test_package_exports_the_core() -> None:
    assert mmbright_core.evaluate is evaluate
    assert mmbright_core.parse_measure("nDCG@10") == Measure("nDCG", 10)


def test_graded_labels_every_measure() -> None:
    # Ranking: b (1.0 -> label 1), x (unjudged), a (label 2); z (label 1) is not retrieved.
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "z": 1}}
    run = {"q": {"b": 3.0, "x": 2.0, "a": 1.0}}
    values = {m: v["q"] for m, v in both_paths(qrels, run).per_query.items()}
    ideal = 2 + 1 / L3 + 1 / 2  # all judged labels sorted: 2, 1, 1 (0 adds nothing)
    assert values["nDCG@3"] == pytest.approx((1 / 1 + 0 + 2 / 2) / ideal)  # 0.638787
    assert values["P@3"] == pytest.approx(2 / 3)  # b and a
    assert values["R@3"] == pytest.approx(2 / 3)  # of a, b, z
    assert values["AP"] == pytest.approx((1 / 1 + 2 / 3) / 3)  # precision at b and at a
    assert values["AP@2"] == pytest.approx((1 / 1) / 3)  # only b within the top 2
    assert values["RR"] == 1.0
    assert values["RR@1"] == 1.0
    assert values["Judged@3"] == pytest.approx(2 / 3)  # x has no judgment
    # Oracle: the top 100 (b, x, a) re-sorted by label gives a, b, x.
    assert values["OracleNDCG@3"] == pytest.approx((2 / 1 + 1 / L3) / ideal)  # 0.840297


def test_ties_break_by_doc_id_descending() -> None:
    # Equal scores: c, b, a in that order, so a is third.
    result = both_paths({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}})
    assert result.per_query["RR"]["q"] == pytest.approx(1 / 3)
    assert result.per_query["nDCG@3"]["q"] == pytest.approx((1 / 2) / 1)
    assert result.per_query["RR@1"]["q"] == 0.0


def test_numeric_looking_ids_compare_as_strings() -> None:
    # "9" > "10" as strings, so with equal scores "9" ranks first and "10" second.
    result = both_paths({"q": {"10": 1}}, {"q": {"10": 5.0, "9": 5.0, "100": 4.0}})
    assert result.per_query["RR"]["q"] == 0.5


def test_higher_score_beats_doc_id() -> None:
    result = both_paths({"q": {"a": 1}}, {"q": {"a": 2.0, "z": 1.0}})
    assert result.per_query["RR"]["q"] == 1.0


def test_missing_queries_skip_versus_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"x": 2.0, "a": 1.0}}  # q1: a at rank 2 -> RR 0.5; q2 absent
    skip = both_paths(qrels, run, ["RR"], "skip")
    assert skip.per_query["RR"] == {"q1": 0.5}
    assert skip.aggregate["RR"] == 0.5
    assert skip.counts == mmbright_core.EvalCounts(1, 0, 1, 0)
    zero = both_paths(qrels, run, ["RR"], "zero")
    assert zero.per_query["RR"] == {"q1": 0.5, "q2": 0.0}
    assert zero.aggregate["RR"] == 0.25  # (0.5 + 0) / 2
    assert zero.counts.evaluated == 2 and zero.counts.missing_from_run == 1
    assert (skip.missing, zero.missing) == ("skip", "zero")


def test_empty_qrels_are_dropped_and_counted_extras_counted() -> None:
    qrels = {"q1": {"a": 1}, "q2": {}}
    run = {"q1": {"a": 1.0}, "q2": {"a": 1.0}, "extra": {"a": 1.0}}
    for missing in ("skip", "zero"):
        result = both_paths(qrels, run, ["nDCG@10"], missing)
        assert result.per_query["nDCG@10"] == {"q1": 1.0}
        # q2 is dropped (no judgment), not "extra": the qrels know it.
        assert result.counts == mmbright_core.EvalCounts(1, 1, 0, 1)


def test_all_zero_judgments_are_kept_and_score_zero() -> None:
    result = both_paths({"q": {"a": 0, "b": 0}}, {"q": {"a": 2.0, "c": 1.0}})
    for measure in ALL:
        expected = 1 / 3 if measure == "Judged@3" else 0.0  # a is judged (label 0)
        assert result.per_query[measure]["q"] == pytest.approx(expected)
    assert result.counts.evaluated == 1


def test_negative_labels_count_as_not_relevant_like_pytrec_eval() -> None:
    # a (-1) at rank 1 adds no gain and is not relevant; b (1) at rank 2.
    result = both_paths({"q": {"a": -1, "b": 1}}, {"q": {"a": 2.0, "b": 1.0}})
    values = {m: v["q"] for m, v in result.per_query.items()}
    assert values["nDCG@3"] == pytest.approx(1 / L3)  # ideal: just b's 1 at rank 1
    assert values["AP"] == pytest.approx(1 / 2)
    assert values["RR"] == pytest.approx(1 / 2)
    assert values["Judged@3"] == pytest.approx(2 / 3)  # a negative label is a judgment
    assert values["OracleNDCG@3"] == 1.0  # b first, a last


def test_precision_divides_by_k_even_when_fewer_are_retrieved() -> None:
    result = both_paths({"q": {"a": 1, "b": 1}}, {"q": {"a": 1.0}}, ["P@10", "R@10", "Judged@10"])
    assert result.per_query["P@10"]["q"] == pytest.approx(0.1)
    assert result.per_query["R@10"]["q"] == pytest.approx(0.5)
    assert result.per_query["Judged@10"]["q"] == pytest.approx(0.1)


def test_cutoffs_of_ap_and_rr() -> None:
    # Relevant a at rank 3 (b, c above it, unjudged).
    run = {"q": {"b": 3.0, "c": 2.0, "a": 1.0}}
    result = both_paths({"q": {"a": 1}}, run, ["AP", "AP@2", "AP@3", "RR", "RR@2", "RR@3"])
    values = {m: v["q"] for m, v in result.per_query.items()}
    assert values == pytest.approx(
        {"AP": 1 / 3, "AP@2": 0.0, "AP@3": 1 / 3, "RR": 1 / 3, "RR@2": 0.0, "RR@3": 1 / 3}
    )


def test_ideal_comes_from_all_judgments_not_the_retrieved_list() -> None:
    # Only a (label 1) is retrieved; the unretrieved c (label 2) still sets the ideal.
    result = both_paths({"q": {"a": 1, "c": 2}}, {"q": {"a": 1.0}}, ["nDCG@10"])
    assert result.per_query["nDCG@10"]["q"] == pytest.approx(1 / (2 + 1 / L3))


def test_oracle_lets_a_relevant_doc_below_100_re_enter_by_doc_id() -> None:
    # The official oracle keeps the whole run: the top 100 get their labels as scores,
    # the rest 0, and trec_eval ranks the zeros by doc id descending.
    # Run: d000..d149 (unjudged but d050, label 2, and d001, judged 0) score 1000 - i, so
    # the top 100 is d000..d099; rel (label 1) is 151st, a_rel (label 1) 152nd.
    run = {"q": {f"d{i:03d}": 1000.0 - i for i in range(150)} | {"rel": 1.0, "a_rel": 0.5}}
    qrels = {"q": {"rel": 1, "a_rel": 1, "d050": 2, "d001": 0}}
    result = both_paths(qrels, run, ["OracleNDCG@10", "OracleNDCG@100", "nDCG@10"])
    # Oracle run: d050 -> 2 first; then 151 zeros by id: rel ("r" > "d") 2nd, d149..d000
    # (d001's judged 0 is a score like any other 0), and a_rel last, 152nd.
    ideal = 2 + 1 / L3 + 1 / 2  # labels 2, 1, 1 (and 0)
    assert result.per_query["OracleNDCG@10"]["q"] == pytest.approx((2 + 1 / L3) / ideal)  # 0.89...
    assert result.per_query["OracleNDCG@100"]["q"] == pytest.approx((2 + 1 / L3) / ideal)
    assert result.per_query["nDCG@10"]["q"] == 0.0  # d050 is 51st in the run itself


def test_oracle_zeros_hold_judged_zero_docs_and_push_re_entries_down() -> None:
    # "zy" (judged 0, score 20) and 99 unjudged u000..u098 (score 10) make the top 100;
    # zy gets its label 0 as score, a zero like the unjudged ones and "zz" (judged 0, 101st);
    # "m" (label 1) is 102nd. The 102 zeros by id descending: zz, zy, u098..u000, m.
    run = {"q": {"zy": 20.0} | {f"u{i:03d}": 10.0 for i in range(99)} | {"zz": 5.0, "m": 1.0}}
    qrels = {"q": {"zy": 0, "zz": 0, "m": 1}}
    result = both_paths(qrels, run, ["OracleNDCG@100", "OracleNDCG@101", "OracleNDCG@102"])
    # m is last of 102 documents: rank 102, nowhere near the top 100 or 101.
    assert result.per_query["OracleNDCG@101"]["q"] == 0.0
    assert result.per_query["OracleNDCG@102"]["q"] == pytest.approx(1 / math.log2(103))


def test_oracle_top_100_breaks_ties_in_run_order_like_the_official_sort() -> None:
    # 99 unjudged docs score 10; a (label 1) and b (label 2) tie at 5 for the 100th place.
    # The official code takes the top 100 with Python's stable sort on the score: of tied
    # documents, the one the run lists first gets in; the other is a zero below 99 u's.
    unjudged = {f"u{i:03d}": 10.0 for i in range(99)}
    qrels = {"q": {"a": 1, "b": 2}}
    ideal = 2 + 1 / L3
    a_first = both_paths(qrels, {"q": unjudged | {"a": 5.0, "b": 5.0}}, ["OracleNDCG@10"])
    assert a_first.per_query["OracleNDCG@10"]["q"] == pytest.approx(1 / ideal)  # a, then 0s
    b_first = both_paths(qrels, {"q": unjudged | {"b": 5.0, "a": 5.0}}, ["OracleNDCG@10"])
    assert b_first.per_query["OracleNDCG@10"]["q"] == pytest.approx(2 / ideal)  # b, then 0s


def test_oracle_picks_its_top_100_on_64_bit_scores() -> None:
    # 1.0 + 1e-9 beats 1.0 in the official sort (Python floats), though trec_eval ties them.
    run = {"q": {f"u{i:03d}": 10.0 for i in range(99)} | {"a": 1.0, "b": 1.0 + 1e-9}}
    result = both_paths({"q": {"a": 1, "b": 1}}, run, ["OracleNDCG@1", "nDCG@100"])
    assert result.per_query["OracleNDCG@1"]["q"] == 1.0  # b made the top 100, a did not
    # The ordinary ranking ties them and ranks b ("b" > "a") 100th, a 101st.
    assert result.per_query["nDCG@100"]["q"] == pytest.approx((1 / math.log2(101)) / (1 + 1 / L3))


def test_an_empty_ranking_scores_zero() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": {}}, ALL)
    assert all(v == {"q": 0.0} for v in result.per_query.values())
    assert result.counts.evaluated == 1


def test_nothing_to_average_gives_nan() -> None:
    result = evaluate({"q": {"a": 1}}, {}, ["nDCG@10", "RR"])
    assert result.per_query == {"nDCG@10": {}, "RR": {}}
    assert math.isnan(result.aggregate["nDCG@10"])
    assert result.counts == mmbright_core.EvalCounts(0, 0, 1, 0)


def test_result_records_measures_in_order_and_accepts_measure_values() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, [Measure("RR"), "nDCG@5", "RR"])
    assert result.measures == ("RR", "nDCG@5")
    assert list(result.aggregate) == ["RR", "nDCG@5"]
    assert evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "P@1").aggregate == {"P@1": 1.0}


def test_inputs_are_never_mutated() -> None:
    qrels = {"q": {"a": 2, "b": 0}, "e": {}}
    run = {"q": {"b": 1.0, "a": 1.0, "c": 0.5}, "x": {"a": 1.0}}
    frame = as_frame(run)
    before = (copy.deepcopy(qrels), copy.deepcopy(run), frame.copy())
    evaluate(qrels, run, ALL, "zero")
    evaluate(qrels, frame, ALL, "zero")
    assert (qrels, run) == before[:2]
    pd.testing.assert_frame_equal(frame, before[2])


def test_scores_compare_at_float32_precision() -> None:
    # float32(0.1) > 0.1 as float64, but both are the same float32: a tie, so the doc id
    # decides ("b" > "a"), as trec_eval decides.
    run = {"q": {"a": np.float32(0.1), "b": 0.1}}
    result = evaluate({"q": {"a": 1}}, run, ["RR"])
    assert result.per_query["RR"]["q"] == 0.5


def test_columnar_inputs_agree_with_dicts() -> None:
    qrels = {"q1": {"é": 1, "10": 2}, "q2": {"9": 1}, "q3": {"a": 1}}
    run = {
        "q1": {"é": 0.5, "e": 0.5, "10": 0.5, "1": 0.2},
        "q2": {"10": 1.0, "9": 1.0, "": 1.0, "日本語の文書": 3.0},
        "q4": {"a": 1.0},
    }
    expected = evaluate(qrels, run, ALL, "zero")
    frame = as_frame(run)
    shuffled = frame.sample(frac=1.0, random_state=3)  # queries' rows scattered
    table = pa.Table.from_pandas(shuffled, preserve_index=False)
    as_objects = shuffled.astype({"query_id": object, "doc_id": object})
    for columns in (frame, shuffled, table, as_objects):
        assert evaluate(qrels, columns, ALL, "zero").per_query == expected.per_query


def test_integer_id_columns_read_as_decimal_strings() -> None:
    frame = pd.DataFrame({"query_id": [7, 7], "doc_id": [10, 9], "score": [1.0, 1.0]})
    result = evaluate({"7": {"10": 1}}, frame, ["RR"])
    assert result.per_query["RR"] == {"7": 0.5}  # "9" > "10"


def test_many_blocks_give_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    run = {
        f"q{q}": {f"doc/{d:05d}": float(rng.integers(0, 4)) for d in rng.choice(500, 40)}
        for q in range(30)
    }
    qrels = {q: {d: int(rng.integers(0, 3)) for d in list(docs)[:5]} for q, docs in run.items()}
    expected = both_paths(qrels, run)
    monkeypatch.setattr(_ranks, "BLOCK_ROWS", 7)  # many small blocks
    assert both_paths(qrels, run).per_query == expected.per_query


def test_ids_sharing_a_fingerprint_are_still_told_apart() -> None:
    # Long ids that differ only in their first bytes, which the fingerprint does not read.
    tail = "_same_middle_and_same_tail_bytes"
    ids = [f"{c}{tail}" for c in "abcdefgh"]
    run = {"q": {d: 1.0 for d in ids}}
    result = both_paths({"q": {ids[0]: 1}}, run, ["RR"])
    assert result.per_query["RR"]["q"] == pytest.approx(1 / 8)  # "a..." sorts last
    duplicated = pd.concat([as_frame(run), as_frame({"q": {ids[3]: 0.5}})])
    with pytest.raises(InputError, match=r"duplicate row.*'d_same"):
        evaluate({"q": {ids[0]: 1}}, duplicated)


# --- bad input ---------------------------------------------------------------------------


# 1j: sum() takes it, packing it as a double does not; a Decimal: packing takes it, sum() not.
@pytest.mark.parametrize(
    "score", [math.nan, math.inf, -math.inf, "1.5", None, "high", [1.0], 1j, Decimal("1.5")]
)
def test_bad_scores_in_dicts_name_query_and_doc(score: object) -> None:
    with pytest.raises(InputError, match=r"query 'q'.*doc 'bad'"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "bad": score}})


@pytest.mark.parametrize("query_id", ["q", "unjudged"])
@pytest.mark.parametrize("doc_id", [7, ("d", 1), None])
def test_a_doc_id_that_is_not_a_string_in_dicts_is_refused_naming_its_query(
    query_id: str, doc_id: object
) -> None:
    run = {"q": {"a": 1.0}, query_id: {"a": 2.0, doc_id: 1.0}}
    with pytest.raises(
        InputError, match=rf"bad doc id for query '{query_id}'.*{type(doc_id).__name__}"
    ):
        evaluate({"q": {"a": 1}}, run)


@pytest.mark.parametrize("score", [math.nan, math.inf, None])
def test_bad_scores_in_frames_name_row_query_and_doc(score: object) -> None:
    frame = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "bad"], "score": [1.0, score]})
    with pytest.raises(InputError, match=r"row 2: bad score for query 'q', doc 'bad'"):
        evaluate({"q": {"a": 1}}, frame)


def test_non_numeric_score_column() -> None:
    frame = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": ["1.0"]})
    with pytest.raises(InputError, match="score is not numeric"):
        evaluate({"q": {"a": 1}}, frame)


def test_duplicate_rows_are_rejected_with_both_rows() -> None:
    frame = pd.DataFrame(
        {"query_id": ["q", "q", "r", "q"], "doc_id": ["a", "b", "a", "a"], "score": [3, 2, 1, 1]}
    )
    with pytest.raises(
        InputError, match=r"row 4: duplicate row for query 'q', doc 'a'.*rows 1 and 4"
    ):
        evaluate({"q": {"a": 1}}, frame)
    # The same doc under two queries is fine.
    assert evaluate({"q": {"a": 1}}, frame.iloc[:3]).per_query["nDCG@10"] == {"q": 1.0}


@pytest.mark.parametrize("label", [1.5, 1.0, "1", None, True])
def test_labels_must_be_integers(label: object) -> None:
    with pytest.raises(InputError, match=r"query 'q', doc 'a'"):
        evaluate({"q": {"a": label}}, {"q": {"a": 1.0}})


def test_numpy_integer_labels_are_fine() -> None:
    result = evaluate({"q": {"a": np.int64(2)}}, {"q": {"a": 1.0}}, ["nDCG@1"])
    assert result.per_query["nDCG@1"]["q"] == 1.0


@pytest.mark.parametrize(
    ("qrels", "run"),
    [
        ([("q", "a", 1)], {"q": {"a": 1.0}}),
        ({"q": [("a", 1)]}, {"q": {"a": 1.0}}),
        ({1: {"a": 1}}, {"q": {"a": 1.0}}),
        ({"q": {"a": 1}}, {1: {"a": 1.0}}),
        ({"q": {"a": 1}}, {"q": [("a", 1.0)]}),
        ({"q": {"a": 1}}, [("q", "a", 1.0)]),
        ({"q": {"a": 1}}, pd.DataFrame({"qid": ["q"], "doc_id": ["a"], "score": [1.0]})),
        ({"q": {"a": 1}}, pd.DataFrame({"query_id": [1.5], "doc_id": ["a"], "score": [1.0]})),
        ({"q": {"a": 1}}, pd.DataFrame({"query_id": [None], "doc_id": ["a"], "score": [1.0]})),
    ],
)
def test_malformed_inputs_are_input_errors(qrels: object, run: object) -> None:
    with pytest.raises(InputError):
        evaluate(qrels, run)  # type: ignore[arg-type]


def test_bad_options() -> None:
    with pytest.raises(InputError, match="'skip' or 'zero'"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, missing="drop")  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError, match="nDCG@10"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@10"])

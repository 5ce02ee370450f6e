"""Every measure, every query, against pytrec_eval (trec_eval) on random qrels and runs.

pytrec_eval gives nondeterministic output for a query with empty qrels (docs/protocol.md, Scoring),
so such queries are kept out of what it sees; ``evaluate`` drops them itself.
"""

from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mmbright_core.errors import InputError
from mmbright_core.io import _columns
from mmbright_core.metrics import evaluate
from mmbright_core.ranking import top_k

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10)
# Ids that stress the doc-id tie-break: numeric-looking ("9" > "10" > "010" as strings),
# accented, composed versus decomposed, CJK, empty, and long ids that share fingerprints.
IDS = st.sampled_from(
    ["1", "9", "10", "010", "100", "a", "b", "é", "é", "日本", "", "x" * 30 + "1", "y" * 30 + "1"]
) | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)
PYTREC_NAMES = {
    **{f"nDCG@{k}": f"ndcg_cut_{k}" for k in KS},
    **{f"P@{k}": f"P_{k}" for k in KS},
    **{f"R@{k}": f"recall_{k}" for k in KS},
    **{f"AP@{k}": f"map_cut_{k}" for k in KS},
    "AP": "map",
    "RR": "recip_rank",
}
PYTREC_MEASURES = {
    *(f"{name}.{','.join(map(str, KS))}" for name in ("ndcg_cut", "P", "recall", "map_cut")),
    "map",
    "recip_rank",
}
OURS = (*PYTREC_NAMES, *(f"RR@{k}" for k in KS), *(f"Judged@{k}" for k in KS))
OURS_ORACLE = tuple(f"OracleNDCG@{k}" for k in KS)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Random qrels and a run over a few queries, some on one side only."""
    graded = draw(st.booleans())
    labels = st.integers(-1, 3) if graded else st.integers(0, 1)
    # Few distinct scores make heavy ties; the floats add the ordinary case, and the 64-bit
    # near-ties (1.0 + 1e-9) the case where trec_eval's 32-bit comparison decides.
    scores = (
        st.sampled_from([0.0, 0.5, 1.0, 2.0, 1.0 + 1e-9, 0.5 - 1e-12])
        | st.floats(-1e6, 1e6, width=32)
        | st.floats(-1e6, 1e6)
    )
    query_ids = draw(st.lists(st.sampled_from(["q1", "q2", "10", "9", "é"]), unique=True))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query_id in query_ids:
        side = draw(st.sampled_from(["both", "both", "both", "qrels", "run", "empty qrels"]))
        if side in ("both", "qrels"):
            qrels[query_id] = draw(st.dictionaries(IDS, labels, min_size=1, max_size=6))
        if side == "empty qrels":
            qrels[query_id] = {}
        if side in ("both", "run", "empty qrels"):
            ranking = draw(st.dictionaries(IDS, scores, max_size=14))
            # Retrieve some judged documents, so that matches are common.
            for doc_id in draw(st.lists(st.sampled_from(sorted(qrels.get(query_id) or {"a": 0})))):
                ranking.setdefault(doc_id, draw(scores))
            run[query_id] = ranking
    return qrels, run


def pytrec(qrels: dict, run: dict, measures: set[str]) -> dict[str, dict[str, float]]:
    judged = {q: docs for q, docs in qrels.items() if docs}  # never empty qrels (its bug)
    return pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(run)


def official_oracle_run(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    """The oracle run as the official ``calculate_retrieval_metrics`` builds it.

    Top 100 by Python's stable sort on the raw score (ties in run order); each of them
    with a judgment scores its label, every other document of the run scores 0.
    """
    oracle: dict[str, dict[str, float]] = {}
    for query_id, docs in run.items():
        top = set(sorted(docs, key=lambda d: docs[d], reverse=True)[:100])
        judged = qrels.get(query_id, {})
        oracle[query_id] = {d: float(judged[d]) if d in top and d in judged else 0.0 for d in docs}
    return oracle


def frame_of(run: dict[str, dict[str, float]], reverse: bool) -> pd.DataFrame:
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    if reverse:  # scatters each query's rows
        rows = rows[::2] + rows[1::2]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans())
def test_every_measure_matches_pytrec_eval(case: tuple[dict, dict], reverse: bool) -> None:
    qrels, run = case
    expected = pytrec(qrels, run, PYTREC_MEASURES)
    ours = evaluate(qrels, run, OURS + OURS_ORACLE, missing="skip")
    assert set(ours.per_query["AP"]) == set(expected)
    for query_id, values in expected.items():
        for name, theirs in PYTREC_NAMES.items():
            assert ours.per_query[name][query_id] == pytest.approx(values[theirs], abs=1e-9)

    for query_id in expected:
        for k in KS:
            # RR@k: pytrec_eval's recip_rank on the run cut to its top k.
            cut = {query_id: top_k(run[query_id], k)}
            rr = pytrec(qrels, cut, {"recip_rank"})[query_id]["recip_rank"]
            assert ours.per_query[f"RR@{k}"][query_id] == pytest.approx(rr, abs=1e-9)
            # Judged@k: the share of the top k with a judgment, any label.
            judged = sum(d in qrels[query_id] for d in cut[query_id]) / k
            assert ours.per_query[f"Judged@{k}"][query_id] == pytest.approx(judged, abs=1e-9)

    # OracleNDCG@k: the official harness's construction (official_oracle_run), scored by
    # pytrec_eval (these runs are shorter than 100; test_oracle_matches... goes deeper).
    oracle = pytrec(qrels, official_oracle_run(qrels, run), {"ndcg_cut.1,3,5,10"})
    for query_id, values in oracle.items():
        for k in KS:
            theirs = values[f"ndcg_cut_{k}"]
            assert ours.per_query[f"OracleNDCG@{k}"][query_id] == pytest.approx(theirs, abs=1e-9)

    # The columnar path gives exactly the dict path's numbers, whatever the row order,
    # for every query that has at least one row (a DataFrame cannot hold an empty ranking).
    from_frame = evaluate(qrels, frame_of(run, reverse), OURS + OURS_ORACLE, missing="skip")
    for name, values in ours.per_query.items():
        assert {q: v for q, v in values.items() if run.get(q)} == from_frame.per_query[name]


@st.composite
def deep_cases(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Runs around 100 deep, so that the oracle's top-100 boundary falls inside them.

    Few distinct scores put ties across rank 100 (where the run's own order decides);
    short ids from a small alphabet make the doc-id order of the zeros matter.
    """
    labels = st.integers(-1, 3)
    scores = st.sampled_from([0.0, 1.0, 2.0, 3.0, 1.0 + 1e-9]) | st.floats(-10, 10, width=32)
    ids = st.text("abcxyz019", min_size=1, max_size=3)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query_id in draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, unique=True)):
        docs = draw(st.lists(ids, min_size=80, max_size=130, unique=True))
        values = draw(st.lists(scores, min_size=len(docs), max_size=len(docs)))
        run[query_id] = dict(zip(docs, values, strict=True))
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=12, unique=True))
        qrels[query_id] = {d: draw(labels) for d in judged}
        qrels[query_id].update(draw(st.dictionaries(ids, labels, max_size=3)))
    return qrels, run


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deep_cases(), st.booleans())
def test_oracle_matches_the_official_construction_scored_by_pytrec_eval(
    case: tuple[dict, dict], reverse: bool
) -> None:
    qrels, run = case
    names = [f"OracleNDCG@{k}" for k in (1, 5, 10, 100, 120)]
    frame = frame_of(run, reverse)
    # The run's own order breaks ties for the top 100: a frame's is its row order.
    frame_run: dict[str, dict[str, float]] = {}
    for query_id, doc_id, score in frame.itertuples(index=False):
        frame_run.setdefault(query_id, {})[doc_id] = score
    for given_run, as_dict in ((run, run), (frame, frame_run)):
        pytrec_names = {"ndcg_cut.1,5,10,100,120"}
        expected = pytrec(qrels, official_oracle_run(qrels, as_dict), pytrec_names)
        ours = evaluate(qrels, given_run, names)
        assert set(ours.per_query[names[0]]) == set(expected)
        for query_id, values in expected.items():
            for name in names:
                theirs = values[f"ndcg_cut_{name.partition('@')[2]}"]
                assert ours.per_query[name][query_id] == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(cases())
def test_averages_and_counts(case: tuple[dict, dict]) -> None:
    qrels, run = case
    expected = pytrec(qrels, run, {"ndcg_cut.10"})
    judged = [q for q, docs in qrels.items() if docs]
    skip = evaluate(qrels, run, ["nDCG@10"], missing="skip")
    zero = evaluate(qrels, run, ["nDCG@10"], missing="zero")
    total = sum(v["ndcg_cut_10"] for v in expected.values())
    if expected:
        assert skip.aggregate["nDCG@10"] == pytest.approx(total / len(expected), abs=1e-9)
    else:
        assert math.isnan(skip.aggregate["nDCG@10"])
    if judged:
        assert zero.aggregate["nDCG@10"] == pytest.approx(total / len(judged), abs=1e-9)
    assert set(zero.per_query["nDCG@10"]) == set(judged)
    assert skip.counts.evaluated == len(expected)
    assert zero.counts.evaluated == len(judged)
    assert skip.counts.dropped_empty_qrels == len(qrels) - len(judged)
    assert skip.counts.missing_from_run == len([q for q in judged if q not in run])
    assert skip.counts.extra_in_run == len([q for q in run if q not in qrels])


def test_scores_compare_at_32_bits_like_trec_eval() -> None:
    """Scores that only 64-bit floats tell apart tie, as in trec_eval.

    1.0 + 1e-9 and 1.0 are the same 32-bit float, so trec_eval ties them and ranks "b"
    first (doc id descending); evaluate does the same, from dicts and from columns.
    """
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0 + 1e-9, "b": 1.0}}
    assert pytrec(qrels, run, {"recip_rank"})["q"]["recip_rank"] == 0.5
    assert evaluate(qrels, run, ["RR"]).per_query["RR"]["q"] == 0.5
    frame = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0 + 1e-9, 1.0]})
    assert evaluate(qrels, frame, ["RR"]).per_query["RR"]["q"] == 0.5
    # A difference float32 keeps still counts.
    assert evaluate(qrels, {"q": {"a": 1.0 + 1e-7, "b": 1.0}}, ["RR"]).per_query["RR"]["q"] == 1


def table_of(run: dict[str, dict[str, float]], layout: str) -> object:
    """The run as a table of one of the layouts users hand in."""
    frame = frame_of(run, reverse=layout == "scattered")
    if layout == "arrow":
        return pa.Table.from_pandas(frame, preserve_index=False)
    if layout == "objects":
        return frame.astype({"query_id": object, "doc_id": object})
    if layout == "categorical":
        return frame.astype({"query_id": "category", "doc_id": "category"})
    return frame


LAYOUTS = st.sampled_from(["grouped", "scattered", "arrow", "objects", "categorical"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), LAYOUTS)
def test_tables_are_scored_on_their_columns_as_pytrec_eval_scores_them(
    case: tuple[dict, dict], layout: str
) -> None:
    qrels, run = case
    ranked = {q: docs for q, docs in run.items() if docs}  # a table holds no empty ranking
    expected = pytrec(qrels, ranked, PYTREC_MEASURES)
    ours = evaluate(qrels, table_of(ranked, layout), OURS, missing="skip")
    assert set(ours.per_query["AP"]) == set(expected)
    for query_id, values in expected.items():
        for name, theirs in PYTREC_NAMES.items():
            assert ours.per_query[name][query_id] == pytest.approx(values[theirs], abs=1e-9)
    zero = evaluate(qrels, table_of(ranked, layout), ["nDCG@10"], missing="zero")
    assert zero.counts == evaluate(qrels, ranked, ["nDCG@10"], missing="zero").counts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.data(), st.integers(1, 8))
def test_a_repeated_row_is_refused_by_its_first_repeat_wherever_it_falls(
    case: tuple[dict, dict], data: st.DataObject, block: int
) -> None:
    _, run = case
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    assume(rows)
    again = data.draw(st.sampled_from(rows))
    at = data.draw(st.integers(0, len(rows)))
    rows.insert(at, (again[0], again[1], 0.25))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    seen: dict[tuple[str, str], int] = {}
    first, repeat = next(
        (seen[(q, d)], row)
        for row, (q, d, _) in enumerate(rows, start=1)
        if seen.setdefault((q, d), row) != row
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_columns, "_DUPLICATE_BLOCK", block)  # queries split over many blocks
        with pytest.raises(InputError, match=rf"row {repeat}: duplicate row.*rows {first} and"):
            evaluate({}, frame)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.data(), st.sampled_from([math.nan, math.inf, -math.inf, None]))
def test_a_score_with_no_rank_is_refused_by_its_row(
    case: tuple[dict, dict], data: st.DataObject, bad: float | None
) -> None:
    _, run = case
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    assume(len(rows) > 1 or (rows and bad is not None))  # a lone None makes a column of nulls
    at = data.draw(st.integers(0, len(rows) - 1))
    query_id, doc_id, _ = rows[at]
    rows[at] = (query_id, doc_id, bad)
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    with pytest.raises(InputError, match=rf"row {at + 1}: bad score for query"):
        evaluate({}, frame)


def test_queries_split_over_duplicate_blocks_share_docs_without_repeating_one() -> None:
    # Three queries retrieve the same documents; with blocks of 4 rows a block holds parts
    # of two queries, whose shared ids are no repeat.
    run = {q: {d: float(i) for i, d in enumerate("abcde")} for q in ("q1", "q2", "q3")}
    qrels = {"q1": {"e": 1}, "q2": {"a": 1}, "q3": {"c": 2}}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_columns, "_DUPLICATE_BLOCK", 4)
        result = evaluate(qrels, frame_of(run, reverse=True), ["RR"])
    assert result.per_query["RR"] == {"q1": 1.0, "q2": 0.2, "q3": 1 / 3}

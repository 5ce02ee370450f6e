import pytrec_eval

from mmbright_core.metrics import evaluate
from mmbright_core.metrics.id_check import id_warnings, normalised

QRELS = {"biology/q1": {"d1": 1, "d2": 0}, "biology/q2": {"d3": 2}, "biology/q3": {"d4": 1}}
# q1 ends in a zero-width space, q2's judged document starts with U+202E, q3's domain is
# written in fullwidth letters.
RUN = {
    "biology/q1\u200b": {"d1": 3.0},
    "biology/q2": {"\u202ed3": 2.0, "d9": 1.0},
    "\uff42\uff49\uff4f\uff4c\uff4f\uff47\uff59/q3": {"d4": 1.0},
}


def test_the_scores_stay_trec_evals_and_the_ids_that_match_nothing_are_reported() -> None:
    result = evaluate(QRELS, RUN, measures=["nDCG@10"])
    expected = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut_10"}).evaluate(RUN)
    assert result.per_query["nDCG@10"] == {q: v["ndcg_cut_10"] for q, v in expected.items()}
    ids = result.ids
    assert ids.unknown_queries == result.counts.extra_in_run == 2
    assert ids.near_query_count == 2
    assert set(ids.near_queries) == {
        ("biology/q1\u200b", "biology/q1"),
        ("\uff42\uff49\uff4f\uff4c\uff4f\uff47\uff59/q3", "biology/q3"),
    }
    assert (ids.blind_queries, ids.blind_query_examples) == (1, ("biology/q2",))
    assert (ids.near_doc_count, ids.near_docs) == (1, (("biology/q2", "\u202ed3", "d3"),))


def test_the_report_escapes_invisible_characters() -> None:
    lines = id_warnings(evaluate(QRELS, RUN).ids)
    text = "\n".join(lines)
    assert len(lines) == 4
    assert "\\u202ed3" in text and "\\u200b" in text
    assert "\u202e" not in text and "\u200b" not in text


def test_a_clean_run_reports_nothing() -> None:
    run = {"biology/q1": {"d1": 1.0}, "biology/q2": {"d3": 1.0}, "biology/q3": {"d4": 1.0}}
    assert id_warnings(evaluate(QRELS, run).ids) == []


def test_normalised_removes_format_characters_and_folds_compatibility_forms() -> None:
    assert normalised("\u202e\uff44\u200b1\x00") == "d1"
    assert normalised("plain id") == "plain id"


def test_a_table_run_gets_the_same_report_as_its_mapping() -> None:
    import pandas as pd

    rows = [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()]
    table = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    from_table = evaluate(QRELS, table, measures=["nDCG@10"])
    assert from_table.ids == evaluate(QRELS, RUN, measures=["nDCG@10"]).ids
    plain = table[table.doc_id.str.isascii()]  # printable ASCII doc ids: nothing to normalise
    assert evaluate(QRELS, plain, measures=["nDCG@10"]).ids.near_doc_count == 0

import pandas as pd
import pyarrow as pa
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from mmbright_core.io._columns import frame_to_run
from mmbright_core.metrics import evaluate
from mmbright_core.metrics.id_check import EXAMPLES, id_warnings, normalised
from mmbright_core.types import IdCheck

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
    rows = [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()]
    table = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    from_table = evaluate(QRELS, table, measures=["nDCG@10"])
    assert from_table.ids == evaluate(QRELS, RUN, measures=["nDCG@10"]).ids
    plain = table[table.doc_id.str.isascii()]  # printable ASCII doc ids: nothing to normalise
    assert evaluate(QRELS, plain, measures=["nDCG@10"]).ids.near_doc_count == 0


def test_a_judged_id_whose_form_a_table_retrieves_as_is_is_reported() -> None:
    # Every doc id of the run is printable ASCII; the judged one is not ("\u202ed3").
    qrels = {"q1": {"\u202ed3": 1}}
    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d3", "d9"], "score": [2.0, 1.0]})
    expected = (1, (("q1", "d3", "\u202ed3"),))
    for run in (frame, frame_to_run(frame, "run")):
        ids = evaluate(qrels, run).ids
        assert (ids.near_doc_count, ids.near_docs) == expected


# Ids equal once normalised (NFKC, control and format characters removed) and ids that are
# not: invisible prefixes and suffixes, a control character, fullwidth letters, a composed
# and a decomposed accent, a ligature, and plain ids; an arbitrary text now and then.
VARIANTS = st.sampled_from(
    [
        "d1", "d2", "\u202ed1", "d1\u200b", "\x07d1", "\uff44\uff11", "d2\t", "\ufeffd2",
        "é", "e\u0301", "\ufb01", "fi", "x", "",
    ]
)  # fmt: skip
IDS = VARIANTS | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=3)
QUERY_IDS = st.sampled_from(["q1", "q1\u200b", "\uff51\uff11", "q2", "q\u00a02", "q 2"])


@st.composite
def id_cases(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels and a run over ids that are often equal only once normalised."""
    qrels = draw(st.dictionaries(QUERY_IDS, st.dictionaries(IDS, st.integers(0, 2), max_size=4)))
    run = draw(st.dictionaries(QUERY_IDS, st.dictionaries(IDS, st.floats(0, 3), max_size=6)))
    return qrels, run


def reference_check(qrels: dict, run: dict) -> IdCheck:
    """The check's rule written plainly: every id normalised, every pair compared."""
    unknown = sorted(set(run) - qrels.keys())
    qrels_forms = {normalised(q): q for q in qrels}
    near_queries = [
        (q, qrels_forms[normalised(q)]) for q in unknown if normalised(q) in qrels_forms
    ]
    near_docs = []
    for query_id, docs in run.items():
        judged = qrels.get(query_id)
        if not judged:
            continue
        forms = {normalised(j): j for j in judged}
        near_docs += [
            (query_id, d, forms[normalised(d)])
            for d in sorted(docs)
            if d not in judged and normalised(d) in forms
        ]
    blind = sorted(
        q for q, docs in run.items() if qrels.get(q) and docs.keys().isdisjoint(qrels[q])
    )
    return IdCheck(*counted(unknown), *counted(blind), *counted(near_queries), *counted(near_docs))


def counted(found: list) -> tuple[int, tuple]:
    return len(found), tuple(found[:EXAMPLES])


def tables(run: dict[str, dict[str, float]]) -> dict[str, pa.Table | pd.DataFrame]:
    """The run as a DataFrame, a large_string Arrow table and a table sliced off a bigger one."""
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    large = pa.schema([("query_id", pa.large_string()), ("doc_id", pa.large_string())])
    # A leading row whose ids are not printable ASCII, sliced off: its bytes stay in the buffer.
    ahead = pd.concat([pd.DataFrame([["\u202eq", "\u202ed", 0.0]], columns=frame.columns), frame])
    return {
        "DataFrame": frame,
        "large_string": pa.Table.from_pandas(frame, preserve_index=False).cast(
            large.append(pa.field("score", pa.float64()))
        ),
        "sliced": pa.Table.from_pandas(ahead, preserve_index=False).slice(1),
    }


@settings(max_examples=300, deadline=None)
@given(id_cases())
def test_the_fast_check_finds_what_the_plain_rule_finds(case: tuple[dict, dict]) -> None:
    qrels, run = case
    assert evaluate(qrels, run).ids == reference_check(qrels, run)
    ranked = {q: docs for q, docs in run.items() if docs}  # a table holds no empty ranking
    expected = reference_check(qrels, ranked)
    for layout, table in tables(ranked).items():
        assert evaluate(qrels, table).ids == expected, layout

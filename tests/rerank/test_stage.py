"""``mmbright rerank`` on the demo: each reranker kind against its model called directly."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from locations import ROOT, SUPPORT

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.io.official import read_outputs
from mmbright_core.ranking import ranked
from mmbright_core.rerank.answers import checked_order, reranked_run
from mmbright_core.rerank.base import Reranked
from mmbright_core.rerank.first_stage import load_first_stage
from mmbright_core.rerank.registry import build
from mmbright_core.rerank.stage import rerank_task
from mmbright_core.ui.common.workspace import DEMO_RUNS

FIRST = DEMO_RUNS / "run_it2t_bm25"
DOMAIN = "gis"
DEPTH = 10


@pytest.fixture(autouse=True)
def _plugins_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SUPPORT))


def rerank(tmp_path: Path, reranker: str, *extra: str, run: Path = FIRST, task: str = "2") -> Path:
    """Rerank ``run`` on the demo's gis domain and return the reranked run's folder."""
    out = tmp_path / "out"
    args = [str(run), "--source", "demo", "--task", task, "--domain", DOMAIN]
    args += ["--reranker", reranker, "--depth", str(DEPTH), "--out", str(out)]
    assert main(["rerank", *args, "--cache-dir", str(tmp_path / "cache"), *extra]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def order(docs: dict[str, float]) -> list[str]:
    return [doc_id for doc_id, _ in ranked(docs)]


def first_stage(run: Path = FIRST) -> dict[str, dict[str, float]]:
    return read_outputs(run).runs[DOMAIN]


def test_an_answer_is_checked_before_it_reorders_anything():
    assert checked_order(Reranked.from_order([2, 0, 1]), 3) == ((2, 0, 1), None)
    # Ties keep the first-stage order: positions 0 and 2 tie, 0 stays first.
    assert checked_order(Reranked.from_scores([0.5, 0.1, 0.5]), 3) == ((0, 2, 1), None)
    # Scores of some candidates: they lead by score, the others follow in first-stage order.
    assert checked_order(Reranked.from_ranked({2: 3.0, 0: 4.0}), 4) == ((0, 2, 1, 3), None)
    for bad, said in [
        (Reranked(ranked=((0, 1.0), (0, 2.0))), "not distinct candidates"),
        (Reranked(ranked=((3, 1.0),)), "not distinct candidates"),
        (Reranked(ranked=((1, float("inf")),)), "not finite"),
        (Reranked.from_order([0, 0, 1]), "not a permutation"),
        (Reranked.from_order([0, 1]), "not a permutation"),
        (Reranked.from_scores([1.0, 2.0]), "2 scores for 3 candidates"),
        (Reranked.from_scores([1.0, float("nan"), 2.0]), "not finite"),
        (Reranked.failed("the model answered 'no idea'"), "no idea"),
    ]:
        kept, problem = checked_order(bad, 3)
        assert kept == (0, 1, 2) and problem is not None and said in problem
    assert checked_order(Reranked(), 3) == ((0, 1, 2), None)


def test_documents_below_the_depth_keep_their_order_beneath():
    run = reranked_run(["a", "b", "c", "d", "e"], (2, 0, 1))
    assert order(run) == ["c", "a", "b", "d", "e"]
    assert run == {"c": 5.0, "a": 4.0, "b": 3.0, "d": 2.0, "e": 1.0}


def test_a_listwise_plugin_reorders_the_top_depth_only(tmp_path: Path):
    folder = rerank(tmp_path, "rerank_plugins:reverse")
    assert folder.name == "run_it2t_bm25+reverse"
    reranked, first = read_outputs(folder).runs[DOMAIN], first_stage()
    assert reranked.keys() == first.keys() and len(first) > 3
    for query_id, docs in first.items():
        before = order(docs)
        assert order(reranked[query_id]) == [*before[:DEPTH][::-1], *before[DEPTH:]]


def official_candidates(scores: dict[str, float], input_k: int) -> list[str]:
    # xlang-ai/BRIGHT rerank.py __main__, as written there: the score file's dict, sorted
    # stably by score, so tied documents keep the file's order.
    sorted_scores = sorted(scores.items(), key=lambda x: x[1], reverse=True)[:input_k]
    return [did for did, _ in sorted_scores]


def test_tied_candidates_reach_the_reranker_in_the_runs_own_order(tmp_path: Path):
    # The first stage's scores rounded to whole numbers (many ties), each query's documents
    # listed in a shuffled order: the reranker must see them as rerank.py hands them over.
    shuffled = random.Random(7)
    tied: dict[str, dict[str, float]] = {}
    for query_id, docs in first_stage().items():
        listed = [(d, float(round(s))) for d, s in docs.items()]
        shuffled.shuffle(listed)
        tied[query_id] = dict(listed)
    path = tmp_path / "tied.json"
    path.write_text(json.dumps(tied))
    reranked = read_outputs(rerank(tmp_path, "rerank_plugins:reverse", run=path)).runs[DOMAIN]
    differs = 0
    for query_id, docs in tied.items():
        official = official_candidates(docs, DEPTH)
        differs += official != order(docs)[:DEPTH]  # doc id order among ties differs
        assert order(reranked[query_id])[:DEPTH] == official[::-1]
    assert differs  # the ties decide the candidates' order somewhere


def test_the_configuration_records_first_stage_depth_and_reranker(tmp_path: Path):
    folder = rerank(tmp_path, "rerank_plugins:reverse")
    options = json.loads((folder / "config.json").read_text())["config"]["options"]
    stage = load_first_stage(TaskView(open_source("demo"), 2), FIRST, domains=[DOMAIN])
    recorded = json.loads((FIRST / "config.json").read_text())["config"]
    assert options["first_stage"] == {
        "path": str(FIRST),
        "label": "bm25",
        "fingerprint": stage.fingerprint,
        "config": recorded,
    }
    assert options["depth"] == DEPTH and options["reranker"] == "rerank_plugins:reverse"
    assert options["reranker_settings"]["plugin"] == "rerank_plugins:reverse"
    assert main(["eval", "--source", "demo", "--task", "2", "--run", str(folder)]) == 0


def test_a_malformed_answer_is_recorded_and_keeps_the_first_stage_order(tmp_path: Path):
    folder = rerank(tmp_path, "rerank_plugins:broken")
    reranked, first = read_outputs(folder).runs[DOMAIN], first_stage()
    assert all(order(reranked[q]) == order(docs) for q, docs in first.items())
    recorded = json.loads((folder / DOMAIN / "rerank.json").read_text())["queries"]
    assert recorded.keys() == first.keys()
    assert all("not a permutation" in answer["problem"] for answer in recorded.values())
    assert not list((tmp_path / "cache" / "rerank").rglob("*.json"))  # a rerun asks again


def test_cross_encoder_scores_are_the_models_own(tmp_path: Path, tiny_cross_encoder: Path):
    from sentence_transformers import CrossEncoder

    folder = rerank(tmp_path, f"cross-encoder:{tiny_cross_encoder}", "--batch-size", "4")
    reranked, first = read_outputs(folder).runs[DOMAIN], first_stage()
    recorded = json.loads((folder / DOMAIN / "rerank.json").read_text())["queries"]
    data = open_source("demo").task(2, DOMAIN)
    texts = {doc.doc_id: doc.text for doc in data.corpus}
    model = CrossEncoder(str(tiny_cross_encoder))
    for query in data.queries:
        top = order(first[query.query_id])[:DEPTH]
        direct = model.predict([[query.text, texts[d]] for d in top])
        assert [recorded[query.query_id]["scores"][d] for d in top] == pytest.approx(
            direct.tolist(), abs=1e-6
        )
        best = sorted(range(len(top)), key=lambda i: -direct[i])
        assert order(reranked[query.query_id])[:DEPTH] == [top[i] for i in best]
    assert (
        "checkpoint_sha256"
        in json.loads((folder / "config.json").read_text())["config"]["options"][
            "reranker_settings"
        ]
    )


def batch_sizes(reranker: Any) -> list[int]:
    """The size of every batch the reranker's loaded model is given from now on."""
    sizes: list[int] = []
    model = reranker.load()
    model.register_forward_pre_hook(lambda module, args: sizes.append(len(args[0]["input_ids"])))
    return sizes


def rerank_gis(reranker: Any, out: Path, cache: Path, depth: int = DEPTH) -> Path:
    """Rerank the demo's gis domain in process; return the domain's output folder."""
    source = open_source("demo")
    first = load_first_stage(TaskView(source, 2), FIRST)
    done = rerank_task(
        TaskView(source, 2), first, reranker, out, depth=depth, domains=[DOMAIN], cache_dir=cache
    )
    return done.task_dir / DOMAIN


def test_the_queries_of_a_domain_share_full_model_batches(tmp_path: Path, tiny_cross_encoder):
    reranker = build(f"cross-encoder:{tiny_cross_encoder}", batch_size=4, device="cpu")
    sizes = batch_sizes(reranker)
    rerank_gis(reranker, tmp_path / "out", tmp_path / "cache")
    pairs = sum(min(DEPTH, len(docs)) for docs in first_stage().values())
    assert sum(sizes) == pairs > 4 * len(first_stage())  # more than one batch a query
    assert sizes == [4] * (pairs // 4) + [pairs % 4] * (pairs % 4 > 0)  # one part-filled


def test_an_answer_is_the_same_whichever_queries_were_cached(tmp_path: Path, tiny_cross_encoder):
    # Scores depend in their last bits on how the model's inputs are batched: a query asked
    # again is scored in the same slice of pairs as before, whole, so it gets the same bits.
    reranker = build(f"cross-encoder:{tiny_cross_encoder}", batch_size=2, device="cpu")
    sizes = batch_sizes(reranker)
    cache = tmp_path / "cache"
    whole = rerank_gis(reranker, tmp_path / "whole", cache)
    answers = {p: p.read_bytes() for p in sorted((cache / "rerank").rglob("*.json"))}
    assert len(answers) == len(first_stage()) and sum(sizes) == 10 * len(answers)
    forgotten = sorted(answers)[3]  # one answer lost: its query is asked again
    forgotten.unlink()
    sizes.clear()
    again = rerank_gis(reranker, tmp_path / "again", cache)
    assert sum(sizes) in (32, 28, 60)  # its slices of 32 pairs (60 in all), whole
    assert {p: p.read_bytes() for p in sorted((cache / "rerank").rglob("*.json"))} == answers
    assert (again / "rerank.json").read_bytes() == (whole / "rerank.json").read_bytes()
    assert (again / "scores.json").read_bytes() == (whole / "scores.json").read_bytes()


def test_passages_are_capped_at_the_models_own_truncation(tiny_cross_encoder: Path):
    from sentence_transformers import CrossEncoder

    from mmbright_core.rerank.base import Candidate, RerankQuery
    from mmbright_core.rerank.cross_encoder import CrossEncoderReranker

    reranker = CrossEncoderReranker(str(tiny_cross_encoder), device="cpu")
    data = open_source("demo").task(2, DOMAIN)
    passage = " ".join(doc.text for doc in data.corpus)  # thousands of words
    query = RerankQuery("q", data.queries[0].text, (), 2, DOMAIN)
    ((_, capped),) = reranker.pairs(query, [Candidate("d", passage)])
    tokens = reranker.load().max_seq_length  # the tokenizer's truncation: no --max-length given
    assert passage.startswith(capped) and len(capped.split()) == 2 * tokens < len(passage.split())
    whole = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict([[query.text, passage]])
    assert reranker.rerank(query, [Candidate("d", passage)], None).scores == (float(whole[0]),)


@pytest.fixture(scope="module")
def task1_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bm25-t1")
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--retriever", "bm25"]
    assert main([*args, "--out", str(out)]) == 0
    return out / "run_t2t_bm25"


def test_mteb_random_cross_encoder_through_mtebs_protocol(tmp_path: Path, task1_run: Path):
    pytest.importorskip("mteb")
    import mteb
    from mteb_direct import predict_directly

    folder = rerank(tmp_path, "mteb:mteb/baseline-random-cross-encoder", run=task1_run, task="1")
    reranked, first = read_outputs(folder).runs[DOMAIN], first_stage(task1_run)
    data = open_source("demo").task(1, DOMAIN)
    texts = {doc.doc_id: doc.text for doc in data.corpus}
    model = mteb.get_model("mteb/baseline-random-cross-encoder")
    for query in data.queries:
        top = order(first[query.query_id])[:DEPTH]
        direct = predict_directly(model, [query.text] * len(top), [texts[d] for d in top])
        best = sorted(range(len(top)), key=lambda i: -direct[i])
        assert order(reranked[query.query_id])[:DEPTH] == [top[i] for i in best]


@pytest.mark.parametrize(
    ("reranker", "extra", "said"),
    [
        ("nocolon", (), "malformed reranker spec"),
        ("rerank_plugins:not_a_reranker", (), "returned object"),
        ("rerank_plugins:reverse", ("--option", "size=3"), "does not take option(s) size"),
        ("rerank_plugins:nothing_here", (), "has no callable 'nothing_here'"),
        ("mteb:mteb/baseline-random-encoder", (), "is not a cross-encoder"),
        ("rerank_plugins:reverse", ("--depth", "0"), "invalid rerank depth"),
        ("rerank_plugins:reverse", ("--negatives", "keep"), "first stage ran with --negatives"),
    ],
)
def test_bad_input_says_what_was_wrong(tmp_path: Path, capsys, reranker, extra, said):
    args = [str(FIRST), "--source", "demo", "--task", "2", "--domain", DOMAIN]
    args += ["--reranker", reranker, "--out", str(tmp_path), *extra]
    assert main(["rerank", *args]) == 2
    assert said in capsys.readouterr().err


def _plugin_error(tmp_path: Path, capsys, factory: str) -> str:
    """Rerank the first stage with plugin ``factory``: exit 2 and one error line, returned."""
    args = [str(FIRST), "--source", "demo", "--task", "2", "--domain", DOMAIN]
    args += ["--reranker", f"rerank_plugins:{factory}", "--out", str(tmp_path / "out")]
    assert main(["rerank", *args, "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("factory", "found"),
    [
        ("answers_none", "found None"),
        ("answers_a_list", "found a list: [1, 0]"),
        ("answers_text", "found a str: '[2] > [1]'"),
        ("answers_string_scores", "found scores holding a str: '0.5'"),
        ("answers_string_order", "found an order holding a str: 'd2'"),
    ],
)
def test_a_plugin_answering_no_reranked_is_one_line_naming_it(
    tmp_path: Path, capsys, factory: str, found: str
):
    err = _plugin_error(tmp_path, capsys, factory)
    assert err.startswith(
        f"mmbright rerank: error: the reranker plugin 'rerank_plugins:{factory}' answered query '"
    )
    assert "expected a Reranked (Reranked.from_order, from_scores, from_ranked or failed)" in err
    assert found in err
    assert not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize(
    ("factory", "doing", "code"),
    [("exits_making", "making its reranker", 0), ("exits_answering", "reranking query '", 1)],
)
def test_a_plugin_ending_the_program_is_one_line_naming_it(
    tmp_path: Path, capsys, factory: str, doing: str, code: int
):
    err = _plugin_error(tmp_path, capsys, factory)
    assert err.startswith(
        f"mmbright rerank: error: the plugin 'rerank_plugins:{factory}' tried to end the "
        f"program while {doing}"
    )
    assert f"found SystemExit({code})" in err and "must not call sys.exit()" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.json"))


def test_a_text_reranker_refuses_image_documents(tmp_path: Path, tiny_cross_encoder: Path, capsys):
    args = [str(FIRST), "--source", "demo", "--task", "3", "--reranker"]
    args += [f"cross-encoder:{tiny_cross_encoder}", "--out", str(tmp_path)]
    assert main(["rerank", *args]) == 2
    assert "cannot rerank task 3; expected one of tasks 1, 2, 4" in capsys.readouterr().err


def test_the_documented_reranker_plugin_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    doc = (ROOT / "docs" / "plugins.md").read_text()
    section = doc.split("## Your own reranker", 1)[1]
    (tmp_path / "shortest_plugin.py").write_text(section.split("```python\n")[1].split("```")[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = rerank(tmp_path, "shortest_plugin:make")
    reranked, first = read_outputs(folder).runs[DOMAIN], first_stage()
    texts = {d.doc_id: d.text for d in open_source("demo").task(2, DOMAIN).corpus}
    for query_id, docs in first.items():
        top = order(docs)[:DEPTH]
        assert order(reranked[query_id])[:DEPTH] == sorted(top, key=lambda d: len(texts[d]))


def test_mteb_reranker_gives_a_task_2_query_its_first_image(tmp_path: Path):
    pytest.importorskip("mteb")
    import mteb
    from mteb_direct import predict_directly

    folder = rerank(tmp_path, "mteb:mteb/baseline-random-cross-encoder")
    reranked, first = read_outputs(folder).runs[DOMAIN], first_stage()
    source = open_source("demo")
    data = source.task(2, DOMAIN)
    texts = {doc.doc_id: doc.text for doc in data.corpus}
    model = mteb.get_model("mteb/baseline-random-cross-encoder")
    with_image = 0
    for query in data.queries:
        top = order(first[query.query_id])[:DEPTH]
        path = query.images[0].path  # the demo's first query images all decode
        image = source.query_image_bytes(DOMAIN, path)
        queries, docs = [query.text] * len(top), [texts[d] for d in top]
        direct = predict_directly(model, queries, docs, [image] * len(top))
        best = [top[i] for i in sorted(range(len(top)), key=lambda i: -direct[i])]
        assert order(reranked[query.query_id])[:DEPTH] == best
        alone = predict_directly(model, queries, docs)
        with_image += [top[i] for i in sorted(range(len(top)), key=lambda i: -alone[i])] != best
    assert with_image  # the image changed some query's order: it was given


def test_answers_are_reused_only_for_the_same_reranker_query_and_candidates(tmp_path: Path):
    import rerank_plugins

    def asked(depth: int, out: str) -> int:
        before = rerank_plugins.Counting.asked
        args = [str(FIRST), "--source", "demo", "--task", "2", "--domain", DOMAIN]
        args += ["--reranker", "rerank_plugins:counting", "--depth", str(depth)]
        args += ["--out", str(tmp_path / out), "--cache-dir", str(tmp_path / "cache")]
        assert main(["rerank", *args]) == 0
        return rerank_plugins.Counting.asked - before

    queries = len(first_stage())
    assert asked(DEPTH, "a") == queries
    assert asked(DEPTH, "b") == 0  # another folder, the same answers: all from the cache
    assert asked(DEPTH - 1, "c") == queries  # other candidates: asked again
    answers = list((tmp_path / "cache" / "rerank").rglob("*.json"))
    assert len(answers) == 2 * queries


def test_the_answer_key_covers_settings_query_images_and_candidates():
    from mmbright_core.rerank.cache import answer_key

    query = {"task": 2, "domain": DOMAIN, "text": "why", "images": ["aa"]}
    docs = [["d1", "text one", []], ["d2", "text two", ["bb"]]]
    key = answer_key({"model": "m", "prompt": "p"}, query, docs)
    assert key == answer_key({"prompt": "p", "model": "m"}, dict(query), list(docs))
    assert key != answer_key({"model": "m", "prompt": "q"}, query, docs)  # another prompt
    assert key != answer_key({"model": "m", "prompt": "p"}, {**query, "images": ["ab"]}, docs)
    assert key != answer_key({"model": "m", "prompt": "p"}, query, docs[::-1])  # the order

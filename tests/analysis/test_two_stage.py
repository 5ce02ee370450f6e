"""A reranked run beside its first stage: the Compare page and the HTML report."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from apptest import add_folder, fresh, goto, table_with
from locations import SUPPORT

from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.table import source_results_table
from mmbright_core.analysis.two_stage import ALL_DOMAINS, headroom, oracle_run
from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.io.official import read_outputs
from mmbright_core.metrics import evaluate
from mmbright_core.ui.common import workspace
from mmbright_core.ui.compare import reports
from mmbright_core.ui.compare.two_stage_view import find_two_stage

FIRST = workspace.DEMO_RUNS / "run_it2t_bm25"
DEPTH = 10
RERANKED = "bm25+reverse"


@pytest.fixture(scope="module")
def reranked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's Task 2 BM25 run, its top 10 turned upside down: worse, below the oracle."""
    out = tmp_path_factory.mktemp("reranked")
    args = [str(FIRST), "--source", "demo", "--task", "2", "--depth", str(DEPTH)]
    args += ["--reranker", "rerank_plugins:reverse", "--out", str(out / "runs")]
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SUPPORT))
        assert main(["rerank", *args, "--cache-dir", str(out / "cache")]) == 0
    return out / "runs"


def _ndcg(run: dict, qrels: dict) -> float:
    judged = {q: r for q, r in qrels.items() if r and q in run}
    return evaluate(judged, run, measures=("nDCG@10",)).aggregate["nDCG@10"]


@pytest.mark.parametrize("seed", range(20))
def test_the_oracle_at_depth_100_is_the_official_one(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i:03d}" for i in range(160)]
    run = {f"q{q}": {d: float(rng.randint(0, 40)) for d in docs} for q in range(4)}  # ties
    qrels = {q: {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, 30)} for q in run}
    official = evaluate(qrels, run, measures=("OracleNDCG@10",)).aggregate["OracleNDCG@10"]
    mine = evaluate(qrels, oracle_run(run, qrels, 100), measures=("nDCG@10",))
    assert mine.aggregate["nDCG@10"] == pytest.approx(official, abs=1e-12)


def test_headroom_per_domain_against_each_run_scored_alone(reranked: Path):
    source = open_source("demo")
    first, second = read_outputs(FIRST).runs, read_outputs(reranked / f"run_it2t_{RERANKED}").runs
    judgments = {d: source.judgments(2, d).qrels for d in first}
    table = headroom(judgments, first, second, DEPTH).set_index("domain")
    for domain in first:
        qrels = judgments[domain]
        row = table.loc[domain]
        assert row["first_stage"] == pytest.approx(_ndcg(first[domain], qrels))
        assert row["reranked"] == pytest.approx(_ndcg(second[domain], qrels))
        assert row["oracle"] == pytest.approx(_ndcg(oracle_run(first[domain], qrels, DEPTH), qrels))
        gap = row["oracle"] - row["first_stage"]
        assert gap > 0
        assert row["taken"] == pytest.approx((row["reranked"] - row["first_stage"]) / gap)
    assert table.loc[ALL_DOMAINS, "reranked"] == pytest.approx(table["reranked"][:-1].mean())
    assert (table["reranked"][:-1] < table["first_stage"][:-1]).all()  # the top turned over


def test_compare_shows_the_first_stage_the_reranked_run_and_the_oracle(reranked: Path):
    at = fresh()
    add_folder(at, reranked)
    goto(at, "compare")
    at.selectbox(key="cmp_a").set_value("bm25").run()
    at.selectbox(key="cmp_b").set_value(RERANKED).run()
    assert not at.exception
    assert "Two stages" in [s.value for s in at.subheader]
    assert any(f"reranks the top {DEPTH} of bm25" in c.value for c in at.caption)
    shown = table_with(at, "first stage", "reranked", "oracle").set_index("domain")
    source = open_source("demo")
    first = read_outputs(FIRST).runs
    for domain, run in first.items():
        assert float(shown.loc[domain, "first stage"]) == pytest.approx(
            _ndcg(run, source.judgments(2, domain).qrels), abs=5e-4
        )
    metrics = {m.label: m.value for m in at.metric}
    assert f"Oracle@{DEPTH} nDCG@10" in metrics
    # "taken" reads as its metric does: a percentage, the last row covering every domain.
    assert shown["taken"].iloc[-1] == metrics["Headroom taken"]
    assert shown["taken"].str.fullmatch(r"-?\d+%|–").all()


def test_the_report_carries_the_two_stages_and_says_when_the_first_is_missing(reranked: Path):
    source = open_source("demo")
    entries = {e.name: e for e in workspace.demo_entries(2)}
    entries |= {
        e.name: e
        for e in workspace.entries_from_folder(str(reranked), TaskView(source, 2, "paper")).entries
    }
    table = source_results_table(TaskView(source, 2), {n: e.runs for n, e in entries.items()})
    comparison = compare_runs(table, "bm25", RERANKED, "nDCG@10")
    html = reports.comparison_html(TaskView(source, 2, "paper"), entries, comparison)
    assert "Two stages: first stage, reranked, oracle" in html
    found = find_two_stage(TaskView(source, 2, "paper"), entries, "bm25", RERANKED)
    assert found is not None and found.first == "bm25" and found.table is not None
    assert f"{found.table.iloc[-1]['oracle']:.3f}" in html

    alone = {n: e for n, e in entries.items() if n != "bm25"}
    missing = find_two_stage(TaskView(source, 2, "paper"), alone, "ocr-bm25", RERANKED)
    assert missing is not None and missing.first is None and missing.table is None
    assert "bm25 (" in missing.first_label


def test_the_runs_list_says_what_a_reranked_run_reranks(reranked: Path):
    source = open_source("demo")
    (entry,) = workspace.entries_from_folder(str(reranked), TaskView(source, 2, "paper")).entries
    assert entry.provenance.endswith(f"· negatives exclude · reranks the top {DEPTH} of bm25")
    (first,) = [e for e in workspace.demo_entries(2) if e.name == "bm25"]
    assert "reranks" not in first.provenance


def test_compare_report_from_the_command_line_carries_the_two_stages(
    reranked: Path, tmp_path: Path
):
    report = tmp_path / "r.html"
    args = ["compare", "--source", "demo", "--task", "2", str(FIRST)]
    args += [str(reranked / f"run_it2t_{RERANKED}"), "--report", str(report)]
    assert main(args) == 0
    html = report.read_text()
    assert "Two stages: first stage, reranked, oracle" in html
    assert f"reranks the top {DEPTH} of run_it2t_bm25 with rerank_plugins:reverse" in html

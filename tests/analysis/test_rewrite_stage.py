"""A run on rewritten queries beside its plain run: the rule, the Compare page, the reports."""

from __future__ import annotations

import json
from pathlib import Path

import openai_server
import pandas as pd
import pytest
from apptest import add_folder, dataframe_with, fresh, goto
from locations import SUPPORT

from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.rewrite_stage import is_plain_run_of, plain_config, rewrite_table
from mmbright_core.analysis.table import source_results_table
from mmbright_core.analysis.two_stage import ALL_DOMAINS
from mmbright_core.benchmark import apply_protocol
from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.io.official import read_outputs
from mmbright_core.metrics import evaluate
from mmbright_core.ui.common import workspace
from mmbright_core.ui.compare import reports
from mmbright_core.ui.compare.two_stage_view import find_rewrite_stage, find_two_stage

PLAIN = workspace.DEMO_RUNS / "run_it2t_bm25"
ANSWER = "raster projection coordinate system elevation gene cell voltage kernel"
DEPTH = 10


def _run(queries: Path, out: Path, *extra: str) -> Path:
    args = ["run", "--source", "demo", "--task", "2", "--retriever", "bm25", *extra]
    args += ["--queries", str(queries), "--cache-dir", str(out / "cache")]
    assert main([*args, "--out", str(out / "runs")]) == 0
    (folder,) = (out / "runs").iterdir()
    return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A caption rewrite of the demo's Task 2, run by BM25 as the demo's own (and at k 20),
    and that rewritten run's top 10 reranked upside down."""
    out = tmp_path_factory.mktemp("rewritten")
    queries = out / "q.jsonl"
    with pytest.MonkeyPatch.context() as patch, openai_server.serving() as server:
        patch.setenv("OPENAI_API_KEY", openai_server.KEY)
        server.reply = lambda body: ANSWER
        command = ["rewrite", "--source", "demo", "--task", "2", "--prompt", "caption"]
        command += ["--llm", openai_server.CHAT_MODEL, "--endpoint", server.url]
        assert main([*command, "--cache-dir", str(out / "cache"), "--out", str(queries)]) == 0
    rewritten = _run(queries, out / "same")
    other = _run(queries, out / "k20", "--k", "20")
    args = [str(rewritten), "--source", "demo", "--task", "2", "--depth", str(DEPTH)]
    args += ["--reranker", "rerank_plugins:reverse", "--out", str(out / "reranked")]
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SUPPORT))
        assert main(["rerank", *args, "--cache-dir", str(out / "cache")]) == 0
    (reranked,) = (out / "reranked").iterdir()
    return {"rewritten": rewritten, "k20": other, "reranked": reranked}


def _name(folder: Path) -> str:
    return folder.name.removeprefix("run_it2t_")


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text("utf-8"))["config"]


def _ndcg10(folder: Path, domain: str) -> float:
    # As `mmbright run` scored the domain itself (metrics.json, five decimals).
    return json.loads((folder / domain / "metrics.json").read_text("utf-8"))["NDCG@10"]


def _per_query(folder: Path, domain: str) -> dict[str, float]:
    data = open_source("demo").judgments(2, domain)
    run = apply_protocol(read_outputs(folder).runs[domain], data.excluded)
    judged = {q: r for q, r in data.qrels.items() if r and q in run}
    return evaluate(judged, run, measures=("nDCG@10",)).per_query["nDCG@10"]


def _check_table(table: pd.DataFrame, rewritten: Path) -> None:
    shown = table.set_index("domain")
    domains = [d for d in shown.index if d != ALL_DOMAINS]
    assert domains == sorted(read_outputs(PLAIN).runs)
    for domain in domains:
        row = shown.loc[domain]
        assert row["plain"] == pytest.approx(_ndcg10(PLAIN, domain), abs=1e-5)
        assert row["rewritten"] == pytest.approx(_ndcg10(rewritten, domain), abs=1e-5)
        assert row["gain"] == pytest.approx(row["rewritten"] - row["plain"])
        before, after = _per_query(PLAIN, domain), _per_query(rewritten, domain)
        assert row["queries"] == len(before)
        assert row["helped"] == sum(after[q] > before[q] for q in before)
        assert row["hurt"] == sum(after[q] < before[q] for q in before)
    every = shown.loc[ALL_DOMAINS]
    assert every["plain"] == pytest.approx(shown["plain"][domains].mean())
    assert every["hurt"] == shown["hurt"][domains].sum()
    assert shown["helped"].sum() + shown["hurt"].sum() > 0  # the rewrite changed something


def test_the_plain_run_is_the_same_configuration_less_the_query_set(made: dict[str, Path]):
    rewritten, plain = _config(made["rewritten"]), _config(PLAIN)
    assert is_plain_run_of(plain, rewritten)
    assert not is_plain_run_of(rewritten, rewritten)  # a rewritten run is no plain run
    assert "queries_sha256" not in plain_config(rewritten)["options"]
    options = plain["options"]
    for other in (
        {**plain, "k": 20},
        {**plain, "negatives": "keep"},
        {**plain, "task": 1},
        {**plain, "options": {**options, "k1": 1.2}},
        {**plain, "options": {k: v for k, v in options.items() if k != "analyzer"}},
        _config(workspace.DEMO_RUNS / "run_it2t_ocr-bm25"),
        _config(made["reranked"]),
        None,
        {},
    ):
        assert not is_plain_run_of(other, rewritten), other
    assert is_plain_run_of({**plain, "package_version": "9.9"}, rewritten)


def test_the_table_pairs_queries_and_counts_who_won():
    rows = [
        ("plain", "a", "1", 0.5),
        ("plain", "a", "2", 1.0),
        ("plain", "a", "3", 0.2),
        ("plain", "b", "1", 0.0),
        ("rw", "a", "1", 1.0),  # helped
        ("rw", "a", "2", 0.5),  # hurt
        ("rw", "a", "3", 0.2),  # tie
        ("rw", "b", "1", 0.3),  # helped
        ("rw", "b", "9", 1.0),  # the plain run has no such query: left out
    ]
    scores = pd.DataFrame(rows, columns=["run", "domain", "query_id", "nDCG@10"])
    table = rewrite_table(scores, "plain", "rw").set_index("domain")
    assert table.loc["a"].tolist() == pytest.approx([3, 1.7 / 3, 1.7 / 3, 0.0, 1, 1])
    assert table.loc["b"].tolist() == pytest.approx([1, 0.0, 0.3, 0.3, 1, 0])
    every = table.loc[ALL_DOMAINS]
    assert every.tolist() == pytest.approx([4, 1.7 / 6, 2.6 / 6, 0.3 / 2, 2, 1])


def test_compare_shows_the_plain_run_beside_the_rewritten_one(made: dict[str, Path]):
    at = fresh()
    add_folder(at, made["rewritten"])
    goto(at, "compare")
    at.selectbox(key="cmp_a").set_value("ocr-bm25").run()
    at.selectbox(key="cmp_b").set_value(_name(made["rewritten"])).run()
    assert not at.exception, at.exception
    assert "Rewritten queries" in [s.value for s in at.subheader]
    assert "Two stages" not in [s.value for s in at.subheader]
    caption = f"runs bm25 on queries rewritten by {openai_server.CHAT_MODEL} (caption, set "
    assert any(caption in c.value and "its plain run is bm25" in c.value for c in at.caption)
    _check_table(dataframe_with(at, "plain", "rewritten", "helped", "hurt"), made["rewritten"])
    labels = [m.label for m in at.metric]
    assert {"Plain nDCG@10", "Rewritten nDCG@10", "Queries helped", "Queries hurt"} <= set(labels)


def test_compare_says_in_one_line_when_the_plain_run_is_not_loaded(made: dict[str, Path]):
    at = fresh()
    add_folder(at, made["k20"])  # bm25 at k 20: the demo's bm25 (k 1000) is not its plain run
    goto(at, "compare")
    at.selectbox(key="cmp_a").set_value("bm25").run()
    at.selectbox(key="cmp_b").set_value(_name(made["k20"])).run()
    assert not at.exception, at.exception
    assert "Rewritten queries" in [s.value for s in at.subheader]
    (info,) = [i.value for i in at.info if "plain run" in i.value]
    assert "is not among the loaded runs" in info and "bm25" in info
    assert not [f for f in at.dataframe if "helped" in f.value.columns]


def test_a_reranked_rewritten_run_shows_the_chain(made: dict[str, Path]):
    at = fresh()
    add_folder(at, made["rewritten"])
    add_folder(at, made["reranked"])
    goto(at, "compare")
    at.selectbox(key="cmp_a").set_value("bm25").run()
    at.selectbox(key="cmp_b").set_value(_name(made["reranked"])).run()
    assert not at.exception, at.exception
    assert {"Two stages", "Rewritten queries"} <= {s.value for s in at.subheader}
    chain = f"Chain: bm25 → {_name(made['rewritten'])} → {_name(made['reranked'])}"
    assert chain in [c.value.replace("\\", "") for c in at.caption]
    _check_table(dataframe_with(at, "plain", "rewritten", "helped"), made["rewritten"])


def _entries(folder: Path) -> dict:
    # The demo's runs and the run of ``folder``.
    found = workspace.entries_from_folder(
        str(folder.parent), TaskView(open_source("demo"), 2, "paper")
    ).entries
    return {e.name: e for e in (*workspace.demo_entries(2), *found)}


def test_the_report_carries_the_plain_and_the_rewritten_run(made: dict[str, Path]):
    source = open_source("demo")
    entries = _entries(made["rewritten"])
    name = _name(made["rewritten"])
    table = source_results_table(TaskView(source, 2), {n: entries[n].runs for n in ("bm25", name)})
    html = reports.comparison_html(
        TaskView(source, 2, "paper"), entries, compare_runs(table, "bm25", name, "nDCG@10")
    )
    assert "Rewritten queries: plain, rewritten" in html
    found = find_rewrite_stage(TaskView(source, 2, "paper"), entries, ("bm25", name))
    assert found is not None and found.plain == "bm25" and found.table is not None
    _check_table(found.table, made["rewritten"])
    assert f'<td class="num">{found.table.iloc[-1]["rewritten"]:.3f}</td>' in html

    other = _name(made["k20"])  # the same name: its k is not in it
    apart = _entries(made["k20"])
    missing = find_rewrite_stage(TaskView(source, 2, "paper"), apart, ("ocr-bm25", other))
    assert missing is not None and missing.plain is None and missing.table is None
    assert find_two_stage(TaskView(source, 2, "paper"), apart, "ocr-bm25", other) is None


def test_compare_report_from_the_command_line_carries_the_plain_run(
    made: dict[str, Path], tmp_path: Path
):
    report = tmp_path / "r.html"
    args = ["compare", "--source", "demo", "--task", "2", str(PLAIN), str(made["rewritten"])]
    assert main([*args, "--report", str(report)]) == 0
    html = report.read_text("utf-8")
    assert "Rewritten queries: plain, rewritten" in html
    assert f"its plain run is {PLAIN.name}." in html
    args = ["compare", "--source", "demo", "--task", "2", str(PLAIN), str(made["k20"])]
    assert main([*args, "--report", str(report)]) == 0
    html = report.read_text("utf-8")
    assert "Its plain run (bm25) is not loaded." in html

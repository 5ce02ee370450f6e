"""The dashboard driven through Streamlit's AppTest: every page, and behaviour by widget key.

The data is the tiny fixture copy of MM-BRIGHT (two domains, dirty images included); two
Task 2 runs are made from its judgments: ``text`` ranks the relevant passages first, ``multi``
pushes them below rank 10 on every other query, so the comparison has losses to find.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import mmbright_core.data
from mmbright_core.analysis.compare import POOLED, compare_runs, most_hurt
from mmbright_core.analysis.table import source_results_table
from mmbright_core.benchmark import score_task
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs, write_domain_outputs, write_summary
from mmbright_core.io.runs import read_run, write_trec_run
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner import run_task

APP = Path(__file__).resolve().parent.parent / "mmbright_core" / "ui" / "app.py"
PAGES = ("per_query", "compare", "inspector", "run")
TASK = 2


def _make_runs(dataset: Path, out: Path) -> Path:
    source = open_source(str(dataset))
    text: dict[str, dict[str, float]] = {}
    multi: dict[str, dict[str, float]] = {}
    for domain in source.domains():
        data = source.task(TASK, domain)
        corpus = [doc.doc_id for doc in data.corpus]
        for i, query in enumerate(data.queries):
            relevant = sorted(d for d, r in data.qrels.get(query.query_id, {}).items() if r > 0)
            others = [d for d in corpus if d not in relevant] * 3  # enough to fill 10 places
            others = [f"{d}#{n}" if n else d for n, d in enumerate(dict.fromkeys(others))]
            others += [f"{domain}/filler{n:02d}_1.txt" for n in range(12)]
            qid = f"{domain}/{query.query_id}"
            text[qid] = {d: 100.0 - n for n, d in enumerate(relevant + others)}
            order = others[:10] + relevant + others[10:] if i % 2 == 0 else relevant + others
            multi[qid] = {d: 50.0 - n for n, d in enumerate(order)}
    out.mkdir()
    write_trec_run(out / "text.trec", text, tag="text")
    write_trec_run(out / "multi.trec", multi, tag="multi")
    return out


@pytest.fixture(scope="module")
def runs_dir(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make_runs(fixture_dir, tmp_path_factory.mktemp("app-runs") / "runs")


def _fresh() -> AppTest:
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    return at


def _use_folder(at: AppTest, dataset: Path) -> None:
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(dataset)).run()
    at.selectbox(key="task").set_value(TASK).run()


def _add_folder(at: AppTest, folder: Path) -> None:
    at.text_input(key="runs_folder").input(str(folder)).run()
    at.button(key="add_folder").click().run()


@pytest.fixture
def app(fixture_dir: Path, runs_dir: Path) -> AppTest:
    at = _fresh()
    _use_folder(at, fixture_dir)
    _add_folder(at, runs_dir)
    assert not at.exception
    return at


def _goto(at: AppTest, page: str) -> AppTest:
    return at.switch_page(f"app_pages/{page}.py").run()


def _stay(at: AppTest, page: str) -> None:
    # AppTest re-requests the page last given to switch_page() on every run; after the
    # app itself switched pages, point it at the page the app is now on.
    at.switch_page(f"app_pages/{page}.py")


def _traces(at: AppTest, key: str) -> list[dict]:
    for chart in at.get("plotly_chart"):
        if chart.proto.id.endswith(key) or key in chart.proto.id:
            return json.loads(chart.proto.spec)["data"]
    raise AssertionError(f"no plotly chart {key!r}")


def _frame(at: AppTest, *columns: str):
    # Dataframes carry no key in the element tree: find one by its columns.
    for frame in at.dataframe:
        if set(columns) <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no dataframe with columns {columns}")


def _values(data: object) -> list:
    # Plotly writes numpy arrays as {"dtype": ..., "bdata": base64}; lists stay lists.
    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).tolist()
    return list(data)  # type: ignore[call-overload]


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def _no_html_from_data(at: AppTest) -> None:
    # Every Markdown element must escape: none may allow raw HTML.
    assert not any(m.proto.allow_html for m in at.markdown)


def test_every_page_runs_without_runs_or_data():
    at = _fresh()
    assert not at.exception
    for page in PAGES:
        _goto(at, page)
        assert not at.exception, page


def test_every_page_runs_with_runs(app: AppTest):
    for page in (*PAGES, "home"):
        _goto(app, page)
        assert not app.exception, page
        _no_html_from_data(app)


def test_home_headlines_match_the_core(app: AppTest, fixture_dir: Path, runs_dir: Path):
    source = open_source(str(fixture_dir))
    metrics = {}
    for m in app.metric:
        metrics.setdefault(m.label, []).append(m.value)
    for index, name in enumerate(("multi", "text")):
        by_domain = _by_domain(read_run(runs_dir / f"{name}.trec"))
        expected = score_task(source, TASK, by_domain).macro["nDCG@10"]
        assert metrics["nDCG@10 ×100"][index] == f"{100 * expected:.1f}"
    assert metrics["Coverage"] == ["100.0%", "100.0%"]
    heatmap = _traces(app, "leaderboard_heatmap")[0]
    assert heatmap["type"] == "heatmap"
    assert sorted(heatmap["y"]) == ["T2 · multi", "T2 · text"]
    assert heatmap["x"][-1] == "Avg."


def test_home_shows_and_scores_each_run_by_its_negatives_policy(
    app: AppTest, fixture_dir: Path, tmp_path: Path
):
    source = open_source(str(fixture_dir))
    keep = run_task(source, TASK, get_retriever("random"), tmp_path, negatives="keep")
    _add_folder(app, keep.task_dir)
    assert not app.exception and not _errors(app)
    lines = [m.value for m in app.markdown if m.value.startswith("**")]
    assert any(line.startswith("**random**") and "negatives keep" in line for line in lines)
    assert any(line.startswith("**text**") and "negatives exclude" in line for line in lines)
    runs = {o.domain: o.run for o in keep.domains}
    expected = score_task(source, TASK, runs, negatives="keep").macro["nDCG@10"]
    index = [line.split("**")[1] for line in lines].index("random")
    shown = [m.value for m in app.metric if m.label == "nDCG@10 ×100"][index]
    assert shown == f"{100 * expected:.1f}"


def test_malformed_run_shows_error_and_keeps_runs(app: AppTest, tmp_path: Path):
    (tmp_path / "broken.trec").write_text("q1 Q0 doc1 1\n", encoding="utf-8")
    _add_folder(app, tmp_path)
    assert any("wrong number of columns" in e for e in _errors(app))
    assert any("broken.trec" in e for e in _errors(app))
    assert sorted(app.multiselect(key="selected_runs_2").value) == ["multi", "text"]


def test_wrong_task_outputs_are_refused(app: AppTest, tmp_path: Path, runs_dir: Path):
    task_dir = tmp_path / "multimodal_it2i_clip"
    run = read_run(runs_dir / "text.trec")
    write_domain_outputs(task_dir, "biology", {"b1": run["biology/b1"]}, {"NDCG@10": 0.5})
    write_summary(task_dir, "clip", "text_image", {"biology": {"NDCG@10": 0.5}})
    _add_folder(app, task_dir)
    assert any("task 3, not task 2" in e for e in _errors(app))
    assert sorted(app.multiselect(key="selected_runs_2").value) == ["multi", "text"]


def test_per_query_filters_and_histogram(app: AppTest, fixture_dir: Path):
    _goto(app, "per_query")
    app.selectbox(key="pq_run").set_value("text").run()
    table = _frame(app, "query_id", "nDCG@10")
    assert set(table["domain"]) == {"academia", "biology"}
    assert len(_values(_traces(app, "pq_hist")[0]["x"])) == len(table)
    app.multiselect(key="pq_domains").set_value(["biology"]).run()
    table = _frame(app, "query_id", "nDCG@10")
    assert set(table["domain"]) == {"biology"}
    assert len(_values(_traces(app, "pq_hist")[0]["x"])) == len(table)
    app.slider(key="pq_scores").set_value((0.0, 0.5)).run()
    assert (_frame(app, "query_id", "nDCG@10")["nDCG@10"] <= 0.5).all()
    assert not app.exception


def test_per_query_click_through_opens_inspector(app: AppTest):
    _goto(app, "per_query")
    app.selectbox(key="pq_run").set_value("multi").run()
    app.selectbox(key="pq_query").set_value("biology / b2").run()
    app.button(key="pq_open").click().run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    assert app.session_state["inspect_query"].query_id == "b2"
    assert app.selectbox(key="insp_query").value == "b2"
    _stay(app, "inspector")
    app.run()
    assert app.selectbox(key="insp_query").value == "b2"


def test_compare_numbers_come_from_the_core(app: AppTest, fixture_dir: Path, runs_dir: Path):
    _goto(app, "compare")
    app.selectbox(key="cmp_a").set_value("text").run()
    app.selectbox(key="cmp_b").set_value("multi").run()
    assert not app.exception
    table = source_results_table(
        open_source(str(fixture_dir)),
        TASK,
        {name: _by_domain(read_run(runs_dir / f"{name}.trec")) for name in ("text", "multi")},
    )
    expected = compare_runs(table, "text", "multi")
    pooled = expected.summary.set_index("scope").loc[POOLED]
    shown = {m.label: m.value for m in app.metric}
    assert shown["B wins"] == str(int(pooled["wins"]))
    assert shown["B loses"] == str(int(pooled["losses"]))
    assert int(pooled["losses"]) > 0
    scatter = _traces(app, "cmp_scatter")[0]
    assert len(_values(scatter["x"])) == len(expected.per_query)
    hurt = _frame(app, "query_id", "delta")
    assert len(hurt) == int(pooled["losses"])
    assert (hurt["delta"] < 0).all()
    assert [b.proto.label for b in app.get("download_button")][-1].endswith("(HTML)")


def _by_domain(run: dict) -> dict:
    out: dict[str, dict] = {}
    for qid, docs in run.items():
        domain, _, bare = qid.partition("/")
        out.setdefault(domain, {})[bare] = docs
    return out


def test_inspector_shows_images_rankings_and_walks_hurt_queries(app: AppTest, fixture_dir: Path):
    _goto(app, "compare")
    app.selectbox(key="cmp_a").set_value("text").run()
    app.selectbox(key="cmp_b").set_value("multi").run()
    app.button(key="cmp_inspect").click().run()
    assert app.title[0].value == "Query inspector"
    _stay(app, "inspector")
    first = app.session_state["inspect_query"]
    query = next(
        q
        for q in open_source(str(fixture_dir)).judgments(TASK, first.domain).queries
        if q.query_id == first.query_id
    )
    captions = {c for image in app.get("image") for c in image.captions}
    decodable = {ref.path for ref in query.images} - {w.value for w in app.warning}
    assert decodable and decodable <= captions  # every decodable query image is shown
    badges = " ".join(m.value for m in app.markdown)
    assert "relevant" in badges and "#1" in badges
    assert _frame(app, "change")["change"].notna().all()
    app.button(key="insp_next").click().run()
    assert app.session_state["inspect_query"] != first
    app.button(key="insp_prev").click().run()
    assert app.session_state["inspect_query"] == first
    assert not app.exception


def test_inspector_warns_about_undecodable_query_images(app: AppTest):
    _goto(app, "inspector")
    app.selectbox(key="insp_domain").set_value("academia").run()
    app.selectbox(key="insp_query").set_value("a4").run()
    warnings = " ".join(w.value for w in app.warning)
    assert "SVG" in warnings and ".svg" in warnings
    assert "missing" in warnings
    assert not app.exception


def test_run_page_adds_a_run(app: AppTest, tmp_path: Path):
    _goto(app, "run")
    app.selectbox(key="run_retriever").set_value("random").run()
    app.text_input(key="run_out").input(str(tmp_path / "outputs")).run()
    app.button(key="run_start").click().run()
    assert not app.exception
    assert not _errors(app)
    assert any("Added run" in s.value for s in app.success)
    names = app.multiselect(key="selected_runs_2").value
    assert len(names) == 3
    assert (tmp_path / "outputs" / "run_random" / "summary.json").is_file()


def test_run_page_error_keeps_the_app_running(app: AppTest, tmp_path: Path):
    (tmp_path / "outputs").write_text("a file where the output folder should be\n")
    _goto(app, "run")
    app.selectbox(key="run_retriever").set_value("random").run()
    app.text_input(key="run_out").input(str(tmp_path / "outputs")).run()
    app.button(key="run_start").click().run()
    assert not app.exception
    assert any("outputs" in e for e in _errors(app))
    assert not app.get("progress")  # the bar is gone, the error stays
    _goto(app, "home")
    assert not app.exception


def test_the_demo_opens_with_its_shipped_runs_of_every_task():
    # The demo ships bm25 and ocr-bm25 for tasks 2 and 4: the same names in two tasks must
    # not replace each other.
    at = _fresh()
    assert not at.exception and not _errors(at)
    shipped = Path(mmbright_core.data.__file__).parent / "demo" / "runs"
    source = open_source("demo")
    for task, prefix in ((2, "run_"), (4, "it2it_")):
        at.selectbox(key="task").set_value(task).run()
        shown = [m.value for m in at.metric if m.label == "nDCG@10 ×100"]
        runs = [read_outputs(shipped / f"{prefix}{name}").runs for name in ("bm25", "ocr-bm25")]
        macros = [score_task(source, task, run).macro["nDCG@10"] for run in runs]
        expected = [f"{100 * macro:.1f}" for macro in macros]
        assert shown == expected, task


def _compare(at: AppTest) -> None:
    _goto(at, "compare")
    at.selectbox(key="cmp_a").set_value("text").run()
    at.selectbox(key="cmp_b").set_value("multi").run()


def _hurt(fixture_dir: Path, runs_dir: Path):  # type: ignore[no-untyped-def]
    table = source_results_table(
        open_source(str(fixture_dir)),
        TASK,
        {name: _by_domain(read_run(runs_dir / f"{name}.trec")) for name in ("text", "multi")},
    )
    return compare_runs(table, "text", "multi")


def test_a_partial_run_is_counted_against_the_task(
    app: AppTest, runs_dir: Path, tmp_path: Path
) -> None:
    # One domain of two: coverage, the domain count and the leaderboard must say so.
    run = read_run(runs_dir / "text.trec")
    write_trec_run(
        tmp_path / "half.trec", {q: d for q, d in run.items() if q.startswith("biology/")}
    )
    _add_folder(app, tmp_path)
    assert not app.exception and not _errors(app)
    lines = [m.value for m in app.markdown if m.value.startswith("**half**")]
    assert lines and "partial: 1 of 2 domains" in lines[0]
    metrics: dict[str, list[str]] = {}
    for m in app.metric:
        metrics.setdefault(m.label, []).append(m.value)
    names = [m.value.split("**")[1] for m in app.markdown if m.value.startswith("**")]
    half = names.index("half")
    assert metrics["Domains"][half] == "1 of 2"
    assert metrics["Domains"][names.index("text")] == "2 of 2"
    assert float(metrics["Coverage"][half].rstrip("%")) < 100
    heatmap = _traces(app, "leaderboard_heatmap")[0]
    assert heatmap["y"][-1] == "T2 · half · partial 1/2"  # after the full runs
    assert heatmap["zmin"] == 0 and heatmap["zmax"] == 100
    cells = [cell for row in heatmap["text"] for cell in row]
    assert "—" in cells and not any("nan" in cell.lower() for cell in cells)
    assert "not run" in [c for row in heatmap["customdata"] for c in row]


def test_home_reference_table_has_the_task_as_heading(app: AppTest) -> None:
    reference = _frame(app, "model", "reported")
    assert list(reference.columns) == ["model", "reported", "source"]
    assert any("Published: Task 2" in m.value for m in app.markdown)


def test_compare_bars_keep_every_image_group(app: AppTest, fixture_dir: Path, runs_dir: Path):
    _compare(app)
    bars = _traces(app, "cmp_images")
    groups = list(_frame(app, "group", "queries")["group"])
    assert list(bars[0]["x"]) == groups
    chart = next(c for c in app.get("plotly_chart") if "cmp_images" in c.proto.id)
    axis = json.loads(chart.proto.spec)["layout"]["xaxis"]
    assert axis["type"] == "category" and axis["categoryarray"] == groups


def test_compare_hurt_row_opens_the_inspector(app: AppTest, fixture_dir: Path, runs_dir: Path):
    _compare(app)
    assert any("Where multi (B) loses most against text (A)" in s.value for s in app.subheader)
    table = _frame(app, "query_id", "query", "delta")
    assert table["query"].str.len().gt(0).all()  # the query text, not only its id
    hurt = most_hurt(_hurt(fixture_dir, runs_dir), top=20)
    app.session_state["cmp_hurt"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    app.run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    target = app.session_state["inspect_query"]
    assert (target.domain, target.query_id) == (hurt.iloc[1]["domain"], hurt.iloc[1]["query_id"])


def test_compare_scatter_point_opens_the_inspector(app: AppTest, fixture_dir: Path, runs_dir: Path):
    _compare(app)
    per_query = _hurt(fixture_dir, runs_dir).per_query
    app.session_state["cmp_scatter"] = {
        "selection": {"points": [{"point_index": 3}], "point_indices": [3], "box": [], "lasso": []}
    }
    app.run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    target = app.session_state["inspect_query"]
    row = per_query.iloc[3]
    assert (target.domain, target.query_id) == (row["domain"], row["query_id"])


def test_per_query_shows_b_minus_a_text_and_b_loses_filter(
    app: AppTest, fixture_dir: Path, runs_dir: Path
):
    _goto(app, "per_query")
    app.selectbox(key="pq_run").set_value("text").run()
    app.selectbox(key="pq_run_b").set_value("multi").run()
    table = _frame(app, "query_id", "query", "nDCG@10", "nDCG@10 (B)", "delta")
    expected = _hurt(fixture_dir, runs_dir).per_query.set_index(["domain", "query_id"])
    for row in table.itertuples(index=False):
        assert row.delta == pytest.approx(expected.loc[(row.domain, row.query_id), "delta"])
    assert table["query"].str.len().gt(0).all()
    app.toggle(key="pq_loses").set_value(True).run()
    losing = _frame(app, "query_id", "delta")
    assert len(losing) == int((expected["delta"] < 0).sum()) and (losing["delta"] < 0).all()
    # A handful of queries: one dot each rather than a mostly empty histogram.
    trace = _traces(app, "pq_hist")[0]
    assert trace["type"] == "scatter" and len(_values(trace["x"])) == len(losing)

"""The dashboard driven through Streamlit's AppTest: every page, and behaviour by widget key.

The data is the tiny fixture copy of MM-BRIGHT (two domains, dirty images included); two
Task 2 runs are made from its judgments: ``text`` ranks the relevant passages first, ``multi``
pushes them below rank 10 on every other query, so the comparison has losses to find.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from apptest import (
    TASK,
    add_folder,
    chart_traces,
    dataframe_with,
    error_messages,
    fresh,
    goto,
    image_captions,
    make_runs,
    no_html_from_data,
    open_tab,
    plotly_values,
    stay,
    table_with,
    use_folder,
)
from streamlit.testing.v1 import AppTest

import mmbright_core.data
from mmbright_core.analysis.compare import POOLED, compare_runs, most_hurt
from mmbright_core.analysis.table import source_results_table
from mmbright_core.benchmark import score_task
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.io.official import read_outputs, write_domain_outputs, write_summary
from mmbright_core.io.runs import read_run, write_trec_run
from mmbright_core.present import comparison_figures
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner.task_run import run_task
from mmbright_core.ui.common import state, views
from mmbright_core.ui.home.headlines import HEADLINE

PAGES = ("per_query", "compare", "inspector", "run")


@pytest.fixture(scope="module")
def runs_dir(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(fixture_dir, tmp_path_factory.mktemp("app-runs") / "runs")


@pytest.fixture
def app(fixture_dir: Path, runs_dir: Path) -> AppTest:
    at = fresh()
    use_folder(at, fixture_dir)
    add_folder(at, runs_dir)
    assert not at.exception
    return at


def test_every_page_runs_without_runs_or_data():
    at = fresh()
    assert not at.exception
    for page in PAGES:
        goto(at, page)
        assert not at.exception, page


def test_every_page_runs_with_runs(app: AppTest):
    for page in (*PAGES, "home"):
        goto(app, page)
        assert not app.exception, page
        no_html_from_data(app)


def test_home_headlines_match_the_core(app: AppTest, fixture_dir: Path, runs_dir: Path):
    source = open_source(str(fixture_dir))
    lines = headline_rows(app)
    for name in ("multi", "text"):
        by_domain = _by_domain(read_run(runs_dir / f"{name}.trec"))
        expected = score_task(TaskView(source, TASK), by_domain).macro["nDCG@10"]
        assert lines.loc[name, HEADLINE] == round(100 * expected, 1)
    assert list(lines["coverage"]) == [100.0, 100.0]
    heatmap = chart_traces(app, "leaderboard_heatmap")[0]
    assert heatmap["type"] == "heatmap"
    assert sorted(heatmap["y"]) == ["T2 · multi", "T2 · text"]
    assert heatmap["x"][-1] == "Avg."


def test_home_shows_and_scores_each_run_by_its_negatives_policy(
    app: AppTest, fixture_dir: Path, tmp_path: Path
):
    source = open_source(str(fixture_dir))
    keep = run_task(TaskView(source, TASK), get_retriever("random"), tmp_path, negatives="keep")
    add_folder(app, keep.task_dir)
    assert not app.exception and not error_messages(app)
    lines = headline_rows(app)
    assert lines.loc["random", "negatives"] == "keep"
    assert lines.loc["text", "negatives"] == "exclude"
    runs = {o.domain: o.run for o in keep.domains}
    expected = score_task(TaskView(source, TASK), runs, negatives="keep").macro["nDCG@10"]
    assert lines.loc["random", HEADLINE] == round(100 * expected, 1)


def test_malformed_run_shows_error_and_keeps_runs(app: AppTest, tmp_path: Path):
    (tmp_path / "broken.trec").write_text("q1 Q0 doc1 1\n", encoding="utf-8")
    add_folder(app, tmp_path)
    assert any("wrong number of columns" in e for e in error_messages(app))
    assert any("broken.trec" in e for e in error_messages(app))
    assert sorted(app.multiselect(key="selected_runs_2").value) == ["multi", "text"]


def test_wrong_task_outputs_are_refused(app: AppTest, tmp_path: Path, runs_dir: Path):
    task_dir = tmp_path / "multimodal_it2i_clip"
    run = read_run(runs_dir / "text.trec")
    write_domain_outputs(task_dir, "biology", {"b1": run["biology/b1"]}, {"NDCG@10": 0.5})
    write_summary(task_dir, "clip", "text_image", {"biology": {"NDCG@10": 0.5}})
    add_folder(app, task_dir)
    assert any("task 3, not task 2" in e for e in error_messages(app))
    assert sorted(app.multiselect(key="selected_runs_2").value) == ["multi", "text"]


def test_per_query_filters_and_histogram(app: AppTest, fixture_dir: Path):
    goto(app, "per_query")
    app.selectbox(key="pq_run").set_value("text").run()
    table = dataframe_with(app, "query_id", "nDCG@10")
    assert set(table["domain"]) == {"academia", "biology"}
    assert len(plotly_values(chart_traces(app, "pq_hist")[0]["x"])) == len(table)
    app.multiselect(key="pq_domains").set_value(["biology"]).run()
    table = dataframe_with(app, "query_id", "nDCG@10")
    assert set(table["domain"]) == {"biology"}
    assert len(plotly_values(chart_traces(app, "pq_hist")[0]["x"])) == len(table)
    app.slider(key="pq_scores").set_value((0.0, 0.5)).run()
    assert (dataframe_with(app, "query_id", "nDCG@10")["nDCG@10"] <= 0.5).all()
    assert not app.exception


def test_per_query_click_through_opens_inspector(app: AppTest):
    goto(app, "per_query")
    app.selectbox(key="pq_run").set_value("multi").run()
    app.selectbox(key="pq_query").set_value("biology / b2").run()
    app.button(key="pq_open").click().run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    assert app.session_state["inspect_query"].query_id == "b2"
    assert app.selectbox(key="insp_query").value == "b2"
    stay(app, "inspector")
    app.run()
    assert app.selectbox(key="insp_query").value == "b2"


def test_compare_numbers_come_from_the_core(app: AppTest, fixture_dir: Path, runs_dir: Path):
    goto(app, "compare")
    app.selectbox(key="cmp_a").set_value("text").run()
    app.selectbox(key="cmp_b").set_value("multi").run()
    assert not app.exception
    table = source_results_table(
        TaskView(open_source(str(fixture_dir)), TASK),
        {name: _by_domain(read_run(runs_dir / f"{name}.trec")) for name in ("text", "multi")},
    )
    expected = compare_runs(table, "text", "multi")
    pooled = expected.summary.set_index("scope").loc[POOLED]
    shown = {m.label: m.value for m in app.metric}
    assert shown["B wins"] == str(int(pooled["wins"]))
    assert shown["B loses"] == str(int(pooled["losses"]))
    assert int(pooled["losses"]) > 0
    # A closed tab is not run: the scatter is built only once its tab is opened.
    assert not any("cmp_scatter" in c.proto.id for c in app.get("plotly_chart"))
    open_tab(app, state.COMPARE_SECTION_KEY, "Query by query")
    scatter = chart_traces(app, "cmp_scatter")[0]
    assert len(plotly_values(scatter["x"])) == len(expected.per_query)
    open_tab(app, state.COMPARE_SECTION_KEY, "Where B loses most")
    hurt = dataframe_with(app, "query_id", "delta")
    assert len(hurt) == int(pooled["losses"])
    assert (hurt["delta"] < 0).all()


def test_compare_tables_read_as_the_report_writes_them(app: AppTest):
    _compare(app)
    # The report's two tables: the runs named, three decimals, p-values of four or "< 1e-4".
    deltas = table_with(app, "scope", "text (A)", "multi (B)", "B − A", "95% CI low")
    tests = table_with(app, "scope", "p (t)", "p (t) Holm", "p (perm.) Holm")
    for frame in (deltas, tests):
        assert not {"mean_a", "mean_b", "ci_low", "p_t_holm"} & set(frame.columns)
    assert deltas["text (A)"].str.fullmatch(r"\d\.\d{3}").all()
    assert deltas["B − A"].str.fullmatch(r"[+-]\d\.\d{3}").all()
    for column in ("p (t)", "p (t) Holm", "p (perm.)", "p (perm.) Holm"):
        assert tests[column].str.fullmatch(r"< 1e-4|[01]\.\d{4}|–").all(), column
    open_tab(app, state.COMPARE_SECTION_KEY, "Image effect by slice")
    sliced = table_with(app, "group", "queries", "text (A)", "multi (B)", "95% CI low")
    assert sliced["queries"].str.fullmatch(r"\d+").all()
    open_tab(app, state.COMPARE_SECTION_KEY, "Export")
    assert [b.proto.label for b in app.get("download_button")][-1].endswith("(HTML)")


def headline_rows(at: AppTest) -> pd.DataFrame:
    """Home's headline table, indexed by run."""
    return dataframe_with(at, "run", HEADLINE, "domains", "coverage").set_index("run")


def _by_domain(run: dict) -> dict:
    out: dict[str, dict] = {}
    for qid, docs in run.items():
        domain, _, bare = qid.partition("/")
        out.setdefault(domain, {})[bare] = docs
    return out


def test_inspector_shows_images_rankings_and_walks_hurt_queries(app: AppTest, fixture_dir: Path):
    goto(app, "compare")
    app.selectbox(key="cmp_a").set_value("text").run()
    app.selectbox(key="cmp_b").set_value("multi").run()
    open_tab(app, state.COMPARE_SECTION_KEY, "Where B loses most")
    app.button(key="cmp_inspect").click().run()
    assert app.title[0].value == "Query inspector"
    stay(app, "inspector")
    first = app.session_state["inspect_query"]
    query = next(
        q
        for q in open_source(str(fixture_dir)).judgments(TASK, first.domain).queries
        if q.query_id == first.query_id
    )
    captions = image_captions(app)
    decodable = {ref.path for ref in query.images} - {w.value for w in app.warning}
    assert decodable and decodable <= captions  # every decodable query image is shown
    badges = " ".join(m.value for m in app.markdown)
    assert "relevant" in badges and "#1" in badges
    app.session_state[state.INSPECT_SECTION_KEY] = state.INSPECT_SECTIONS[2]  # the two runs aligned
    app.run()
    assert dataframe_with(app, "move")["move"].notna().all()
    app.button(key="insp_next").click().run()
    assert app.session_state["inspect_query"] != first
    app.button(key="insp_prev").click().run()
    assert app.session_state["inspect_query"] == first
    assert not app.exception


def test_inspector_warns_about_undecodable_query_images(app: AppTest):
    goto(app, "inspector")
    app.selectbox(key="insp_domain").set_value("academia").run()
    app.selectbox(key="insp_query").set_value("a4").run()
    warnings = " ".join(w.value for w in app.warning)
    assert "SVG" in warnings and ".svg" in warnings
    assert "missing" in warnings
    assert not app.exception


def test_run_page_adds_a_run(app: AppTest, tmp_path: Path):
    goto(app, "run")
    app.selectbox(key="run_retriever").set_value("random").run()
    app.text_input(key="run_out").input(str(tmp_path / "outputs")).run()
    app.button(key="run_start").click().run()
    assert not app.exception
    assert not error_messages(app)
    assert any("Added run" in s.value for s in app.success)
    names = app.multiselect(key="selected_runs_2").value
    assert len(names) == 3
    assert (tmp_path / "outputs" / "run_it2t_random" / "summary.json").is_file()


def test_run_page_error_keeps_the_app_running(app: AppTest, tmp_path: Path):
    (tmp_path / "outputs").write_text("a file where the output folder should be\n")
    goto(app, "run")
    app.selectbox(key="run_retriever").set_value("random").run()
    app.text_input(key="run_out").input(str(tmp_path / "outputs")).run()
    app.button(key="run_start").click().run()
    assert not app.exception
    assert any("outputs" in e for e in error_messages(app))
    assert not app.get("progress")  # the bar is gone, the error stays
    goto(app, "home")
    assert not app.exception


def test_the_demo_opens_with_its_shipped_runs_of_every_task():
    # The demo ships bm25 and ocr-bm25 for tasks 2 and 4: the same names in two tasks must
    # not replace each other.
    at = fresh()
    assert not at.exception and not error_messages(at)
    shipped = Path(mmbright_core.data.__file__).parent / "demo" / "runs"
    source = open_source("demo")
    for task, prefix in ((2, "run_it2t_"), (4, "it2it_")):
        at.selectbox(key="task").set_value(task).run()
        shown = list(headline_rows(at)[HEADLINE])
        runs = [read_outputs(shipped / f"{prefix}{name}").runs for name in ("bm25", "ocr-bm25")]
        macros = [score_task(TaskView(source, task), run).macro["nDCG@10"] for run in runs]
        expected = [round(100 * macro, 1) for macro in macros]
        assert shown == expected, task


def _compare(at: AppTest) -> None:
    goto(at, "compare")
    at.selectbox(key="cmp_a").set_value("text").run()
    at.selectbox(key="cmp_b").set_value("multi").run()


def _hurt(fixture_dir: Path, runs_dir: Path):  # type: ignore[no-untyped-def]
    table = source_results_table(
        TaskView(open_source(str(fixture_dir)), TASK),
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
    add_folder(app, tmp_path)
    assert not app.exception and not error_messages(app)
    lines = headline_rows(app)
    assert lines.loc["half", "domains"] == "1 of 2 · partial"
    assert lines.loc["text", "domains"] == "2 of 2"
    assert lines.loc["half", "coverage"] < 100
    assert any("not comparable" in c.value for c in app.caption)
    heatmap = chart_traces(app, "leaderboard_heatmap")[0]
    assert heatmap["y"][-1] == "T2 · half · partial 1/2"  # after the full runs
    assert heatmap["zmin"] == 0 and heatmap["zmax"] == 100
    cells = [cell for row in heatmap["text"] for cell in row]
    assert "—" in cells and not any("nan" in cell.lower() for cell in cells)
    assert "not run" in [c for row in heatmap["customdata"] for c in row]


def test_home_reference_table_has_the_task_as_heading(app: AppTest) -> None:
    reference = dataframe_with(app, "model", "reported")
    assert list(reference.columns)[:3] == ["model", "reported", "source"]
    labels = [tab.label for tab in app.tabs]  # the runs panel's tabs come first
    assert labels[-2:] == ["Your runs", "Published: Task 2: text+image → text"]


def test_compare_bars_keep_every_image_group(app: AppTest, fixture_dir: Path, runs_dir: Path):
    _compare(app)
    open_tab(app, state.COMPARE_SECTION_KEY, "Image effect by slice")
    bars = chart_traces(app, "cmp_images")
    groups = list(table_with(app, "group", "queries")["group"])
    assert list(bars[0]["x"]) == groups
    chart = next(c for c in app.get("plotly_chart") if "cmp_images" in c.proto.id)
    axis = json.loads(chart.proto.spec)["layout"]["xaxis"]
    assert axis["type"] == "category" and axis["categoryarray"] == groups


def test_compare_hurt_row_opens_the_inspector(app: AppTest, fixture_dir: Path, runs_dir: Path):
    _compare(app)
    open_tab(app, state.COMPARE_SECTION_KEY, "Where B loses most")
    assert any("Where multi (B) loses most against text (A)" in s.value for s in app.subheader)
    table = dataframe_with(app, "query_id", "query", "delta")
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
    open_tab(app, state.COMPARE_SECTION_KEY, "Query by query")
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


# Clicks that leave a page go at once: the page they leave is not rebuilt on the way out
# (on the full benchmark that work is most of the click's time, drawn only to be replaced).


def counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (the real function still runs)."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def test_open_in_inspector_skips_the_per_query_table(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    goto(app, "per_query")
    labels = app.selectbox(key="pq_query").options
    app.selectbox(key="pq_query").set_value(labels[2]).run()
    rows = counted(monkeypatch, views, "run_rows")
    app.button(key="pq_open").click().run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    target = app.session_state["inspect_query"]
    assert f"{target.domain} / {target.query_id}" == labels[2]
    assert rows == []  # the per-query table was not rebuilt on the way out


def test_scatter_point_skips_the_scatter(app: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(app)
    open_tab(app, state.COMPARE_SECTION_KEY, "Query by query")
    scatters = counted(monkeypatch, comparison_figures, "pair_scatter")
    app.session_state["cmp_scatter"] = {
        "selection": {"points": [{"point_index": 1}], "point_indices": [1], "box": [], "lasso": []}
    }
    app.run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    assert scatters == []  # the 1-point-per-query figure was not built on the way out


def test_csv_is_written_on_click_not_on_every_rerun(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    goto(app, "per_query")
    written = counted(monkeypatch, pd.DataFrame, "to_csv")
    app.selectbox(key="pq_run").set_value("multi").run()
    assert not app.exception
    assert [b.proto.label for b in app.get("download_button")] == ["Download CSV"]
    assert written == []  # tests/browser/test_download.py downloads it


def test_per_query_shows_b_minus_a_text_and_b_loses_filter(
    app: AppTest, fixture_dir: Path, runs_dir: Path
):
    goto(app, "per_query")
    app.selectbox(key="pq_run").set_value("text").run()
    app.selectbox(key="pq_run_b").set_value("multi").run()
    table = dataframe_with(app, "query_id", "query", "nDCG@10", "nDCG@10 (B)", "delta")
    expected = _hurt(fixture_dir, runs_dir).per_query.set_index(["domain", "query_id"])
    for row in table.itertuples(index=False):
        assert row.delta == pytest.approx(expected.loc[(row.domain, row.query_id), "delta"])
    assert table["query"].str.len().gt(0).all()
    app.toggle(key="pq_loses").set_value(True).run()
    losing = dataframe_with(app, "query_id", "delta")
    assert len(losing) == int((expected["delta"] < 0).sum()) and (losing["delta"] < 0).all()
    # A handful of queries: one dot each rather than a mostly empty histogram.
    trace = chart_traces(app, "pq_hist")[0]
    assert trace["type"] == "scatter" and len(plotly_values(trace["x"])) == len(losing)


def test_runs_panel_stays_open_to_show_what_a_load_added(fixture_dir: Path, runs_dir: Path):
    at = fresh()
    use_folder(at, fixture_dir)
    add_folder(at, runs_dir)
    panel = next(e for e in at.expander if e.label == "Add or remove runs")
    assert panel.proto.expanded  # the task has runs now, and the message shows
    assert any("Added run 'text'" in s.value for s in at.success)
    at.run()  # the next action: the message is gone, the panel stays where it was
    panel = next(e for e in at.expander if e.label == "Add or remove runs")
    assert panel.proto.expanded and not at.success

"""What every page shows of runs and items: runs A and B named and kept, Task 4 pairs read.

AppTest on the demo, which ships ``bm25`` and ``ocr-bm25`` runs of tasks 2 and 4 (and none of
Task 3): the pair of runs and the filters chosen on one page are those of every page, a task
switch keeps the inspector's runs, no view shows a Task 4 pair id as the file writes it, and the
sidebar's Task 4 protocol is the one every score is judged by.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest import chart_traces, fresh, goto, open_tab
from streamlit.testing.v1 import AppTest

import mmbright_core.data
from mmbright_core.benchmark import score_task
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.present import palette
from mmbright_core.task_runs import Scope, load_task_runs
from mmbright_core.ui.common import render, state
from mmbright_core.ui.common.state import InspectTarget

A, B = "bm25", "ocr-bm25"
RAW = ("|||", "__NO_IMAGE__")
"""What a Task 4 pair id holds that no person should have to read."""

pytestmark = pytest.mark.slow  # BM25 indexes and OCR of the demo, AppTest runs


def _demo(task: int, page: str) -> AppTest:
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(task).run()
    goto(at, page)
    assert not at.exception, at.exception
    return at


def _page_text(at: AppTest) -> str:
    """Every text on the page: Markdown, captions, headers and the cells of every table."""
    texts = [e.value for kind in ("markdown", "caption", "subheader") for e in at.get(kind)]
    for frame in at.dataframe:
        texts += [str(v) for v in frame.value.astype(str).to_numpy().ravel()]
    return " ".join(texts).replace("\\", "")  # as read: Markdown's escapes dropped


def _pair(at: AppTest) -> tuple[str, str]:
    return at.session_state["pq_run"], at.session_state["pq_run_b"]


def test_task4_views_show_pairs_by_passage_and_image_and_each_grade_in_its_colour():
    # On physics_0, ocr-bm25 ranks both pairs of two relevant passages lower than bm25 did.
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(4).run()
    at.session_state["inspect_query"] = InspectTarget("physics", "physics_0")
    goto(at, "inspector")
    assert any("What pushed relevant items down" in s.value for s in at.subheader)
    shown = _page_text(at)
    assert "(text only)" in shown and "+ image_" in shown
    assert not any(raw in shown for raw in RAW)

    open_tab(at, state.INSPECT_SECTION_KEY, state.INSPECT_SECTIONS[0])
    assert not any(raw in _page_text(at) for raw in RAW)

    open_tab(at, state.INSPECT_SECTION_KEY, state.INSPECT_SECTIONS[2])
    assert not any(raw in _page_text(at) for raw in RAW)
    lines = chart_traces(at, "insp_slope")
    names = " ".join(f"{line['name']} {line['hovertemplate']}" for line in lines)
    assert not any(raw in names for raw in RAW)
    colours = {line["name"].rsplit("grade ", 1)[1]: line["line"]["color"] for line in lines}
    assert colours == {"2": palette.GRADES[2].hex, "1": palette.GRADES[1].hex}


def test_a_task_switch_keeps_the_inspectors_runs():
    at = _demo(3, "inspector")  # the demo has no Task 3 run
    assert at.multiselect(key="insp_runs").value == []
    at.selectbox(key="task").set_value(4).run()
    assert at.multiselect(key="insp_runs").value == [A, B]
    at.multiselect(key="insp_runs").set_value([B]).run()
    at.selectbox(key="task").set_value(2).run()
    assert at.multiselect(key="insp_runs").value == [B]  # the choice, on a task that has it
    assert not at.exception


def test_runs_a_and_b_and_the_filters_are_the_same_on_every_page():
    at = _demo(2, "per_query")
    assert _pair(at) == (A, B)  # the same default as Compare's
    goto(at, "compare")
    assert (at.session_state["cmp_a"], at.session_state["cmp_b"]) == (A, B)
    at.selectbox(key="cmp_a").set_value(B)
    at.selectbox(key="cmp_b").set_value(A).run()
    goto(at, "per_query")
    assert _pair(at) == (B, A)
    at.toggle(key="pq_loses").set_value(True).run()
    at.multiselect(key="pq_domains").set_value(["biology"]).run()
    goto(at, "inspector")
    assert at.multiselect(key="insp_runs").value == [B, A]
    goto(at, "per_query")
    assert _pair(at) == (B, A)
    assert at.toggle(key="pq_loses").value is True
    assert at.multiselect(key="pq_domains").value == ["biology"]
    at.selectbox(key="pq_run_b").set_value(state.NO_RUN).run()
    goto(at, "compare")
    assert (at.session_state["cmp_a"], at.session_state["cmp_b"]) == (B, A)  # B is needed here
    goto(at, "per_query")
    assert _pair(at) == (B, state.NO_RUN)  # chosen where it is offered, kept
    assert not at.exception


def test_per_query_names_each_runs_columns():
    at = _demo(2, "per_query")
    (frame,) = at.dataframe
    config = json.loads(frame.proto.columns)
    for column, run in (
        ("nDCG@10", A),
        ("nDCG@10 (B)", B),
        ("Judged@10", A),
        ("Judged@10 (B)", B),
    ):
        assert render.escape_md(run) in config[column]["help"], column
        assert config[column]["label"].endswith("A" if run == A else "B")
    assert render.escape_md(A) in config["delta"]["help"]
    assert render.escape_md(B) in config["delta"]["help"]

    # The CSV is written when its button is clicked, which only a server can follow:
    # tests/browser/test_download.py downloads it and checks its name, columns and texts.


def test_picking_a_per_query_row_opens_it_in_the_inspector():
    at = _demo(2, "per_query")
    table = at.dataframe[0].value
    at.session_state["pq_table"] = {"selection": {"rows": [2], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.title[0].value == "Query inspector"
    target = at.session_state["inspect_query"]
    assert (target.domain, target.query_id) == tuple(table.iloc[2][["domain", "query_id"]])


def test_the_sidebars_release_protocol_scores_task4_as_the_release_code():
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(4).run()
    assert "release" in at.selectbox(key="protocol").options
    at.selectbox(key="protocol").set_value("release").run()
    goto(at, "per_query")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    keys = zip(table["domain"], table["query_id"], strict=True)
    shown = dict(zip(keys, table["nDCG@10"], strict=True))
    demo = open_source("demo")
    folder = Path(mmbright_core.data.__file__).parent / "demo" / "runs" / f"it2it_{A}"
    for protocol in ("release", "paper"):
        runs = load_task_runs(demo, Scope(4, None, protocol, "exclude"), str(folder))
        scores = score_task(TaskView(demo, 4, protocol), runs)
        expected = {
            (domain, query): value
            for domain, result in scores.per_domain.items()
            for query, value in result.per_query["nDCG@10"].items()
        }
        if protocol == "release":
            assert shown == pytest.approx(expected, abs=1e-9)
        else:
            assert shown != pytest.approx(expected, abs=1e-9)  # the choice changes the scores

"""The demo's shipped runs are what ``make demo-runs`` makes from the shipped demo data."""

from __future__ import annotations

from pathlib import Path

import pytest

import mmbright_core.data
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner.task_run import run_task

SHIPPED = Path(mmbright_core.data.__file__).parent / "demo" / "runs"


@pytest.mark.parametrize("task", [2, 4])
def test_shipped_bm25_runs_equal_a_fresh_run(task: int, tmp_path: Path) -> None:
    outcome = run_task(TaskView(open_source("demo"), task), get_retriever("bm25"), tmp_path)
    fresh = read_outputs(outcome.task_dir)
    shipped = read_outputs(SHIPPED / outcome.task_dir.name)
    assert fresh.runs == shipped.runs
    assert fresh.metrics == shipped.metrics


def test_shipped_runs_show_images_helping_and_hurting() -> None:
    # The demo is built so that OCR text of the query images helps some queries and hurts
    # others; the shipped runs must show both, or the dashboard has nothing to explain.
    from mmbright_core.analysis.compare import compare_runs
    from mmbright_core.analysis.table import source_results_table

    source = open_source("demo")
    runs = {name: read_outputs(SHIPPED / f"run_it2t_{name}").runs for name in ("bm25", "ocr-bm25")}
    table = source_results_table(TaskView(source, 2), runs, measures=["nDCG@10"])
    deltas = compare_runs(table, "bm25", "ocr-bm25", "nDCG@10").per_query["delta"]
    assert (deltas > 0).sum() >= 3 and (deltas < 0).sum() >= 3

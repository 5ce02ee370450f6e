"""A fused run through the runner: each input's excluded documents dropped, its lineage kept."""

from __future__ import annotations

import json
from pathlib import Path

from mmbright_core.analysis.fused_run import fuse_task
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.fusion import fuse
from mmbright_core.io.official import read_outputs
from mmbright_core.rerank.first_stage import load_first_stage
from mmbright_core.ui.common.workspace import DEMO_RUNS

DOMAIN = "gis"


def test_a_weighted_sum_keeps_no_excluded_document_and_records_each_input(tmp_path: Path):
    source = open_source("demo")
    inputs = [
        load_first_stage(TaskView(source, 2), DEMO_RUNS / name, domains=[DOMAIN])
        for name in ("run_it2t_bm25", "run_it2t_ocr-bm25")
    ]
    # An excluded document planted at the top of one input must not reach the fused run.
    excluded = source.task(2, DOMAIN).excluded
    query, banned = next((q, sorted(ids)[0]) for q, ids in excluded.items() if ids)
    planted = {q: dict(docs) for q, docs in inputs[0].runs[DOMAIN].items()}
    planted[query][banned] = 1e9
    inputs[0] = type(inputs[0])(
        inputs[0].path, inputs[0].label, {DOMAIN: planted}, inputs[0].config
    )
    outcome = fuse_task(
        TaskView(source, 2), inputs, tmp_path, method="wsum", weights=[0.7, 0.3], norm="min-max"
    )
    fused = read_outputs(outcome.task_dir).runs[DOMAIN]
    assert banned not in fused[query]
    clean = {
        q: {d: s for d, s in docs.items() if d != banned or q != query}
        for q, docs in planted.items()
    }
    assert (
        fused[query].keys()
        == fuse([clean, inputs[1].runs[DOMAIN]], "wsum", weights=[0.7, 0.3])[query].keys()
    )
    options = json.loads((outcome.task_dir / "config.json").read_text())["config"]["options"]
    assert [i["fingerprint"] for i in options["lineage"]] == [i.fingerprint for i in inputs]
    assert options["weights"] == [0.7, 0.3]

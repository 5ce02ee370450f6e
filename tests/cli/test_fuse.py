"""``mmbright fuse`` end to end on the demo: the official folder, its lineage, its refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmbright_core.fusion import fuse
from mmbright_core.io.official import read_outputs
from mmbright_core.ui.common.workspace import DEMO_RUNS

RETRIEVERS = ("bm25", "ocr-bm25")


def mmbright(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the command line in a process of its own."""
    command = [sys.executable, "-m", "mmbright_core", *args]
    return subprocess.run(command, capture_output=True, text=True, env=os.environ, check=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The demo's Task 2 runs of bm25 and ocr-bm25, made by ``mmbright run``."""
    out = tmp_path_factory.mktemp("runs")
    for retriever in RETRIEVERS:
        done = mmbright(
            "run", "--source", "demo", "--task", "2", "--retriever", retriever, "--out", str(out)
        )
        assert done.returncode == 0, done.stderr
    return [out / f"run_it2t_{r}" for r in RETRIEVERS]


def fuse_demo(inputs: list[Path], out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return mmbright(
        "fuse", *map(str, inputs), "--source", "demo", "--task", "2", "--out", str(out), *extra
    )


@pytest.mark.slow
def test_a_fused_run_is_official_scored_by_eval_and_records_its_lineage(tmp_path: Path, inputs):
    done = fuse_demo(inputs, tmp_path, "--method", "combmnz", "--norm", "zscore")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "run_it2t_combmnz_bm25+ocr-bm25"
    config = json.loads((folder / "config.json").read_text())["config"]
    assert config["retriever"] == "fusion"
    options = config["options"]
    assert (options["method"], options["norm"]) == ("combmnz", "zscore")
    lineage = options["lineage"]
    assert [(i["path"], i["retriever"], i["model"]) for i in lineage] == [
        (str(inputs[0]), "bm25", "bm25"),
        (str(inputs[1]), "ocr-bm25", "bm25"),
    ]
    # The scores are fusion's of the inputs, domain by domain.
    fused, runs = read_outputs(folder).runs, [read_outputs(i).runs for i in inputs]
    for domain in runs[0]:
        expected = fuse([r[domain] for r in runs], "combmnz", norm="zscore", depth=1000)
        assert fused[domain].keys() == expected.keys()
        for query, docs in expected.items():
            assert fused[domain][query] == pytest.approx(docs, rel=1e-6)
    scored = mmbright("eval", "--run", str(folder), "--source", "demo", "--task", "2")
    assert scored.returncode == 0, scored.stderr
    assert "nDCG@10" in scored.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--method", "borda"), "unknown fusion method"),
        (("--k", "0"), "invalid RRF k"),
        (("--method", "wsum", "--weights", "0.7"), "one weight per run"),
        (("--norm", "max", "--method", "combsum"), "unknown normalisation"),
    ],
)
def test_bad_parameters_are_one_line_and_exit_2(tmp_path: Path, inputs, extra, said):
    done = fuse_demo(inputs, tmp_path / "out", *extra)
    assert done.returncode == 2
    assert done.stderr.startswith("mmbright fuse: error: ") and said in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_runs_of_another_task_are_refused(tmp_path: Path, inputs):
    done = fuse_demo([inputs[0], DEMO_RUNS / "it2it_bm25"], tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.startswith("mmbright fuse: error: ") and "not task 2" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()

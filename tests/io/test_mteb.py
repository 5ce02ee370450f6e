"""MTEB prediction files: read as runs by ``eval`` and ``compare``, written by ``run``."""

from __future__ import annotations

import json

import pytest
from locations import ROOT

from mmbright_core.cli import main
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io import read_outputs
from mmbright_core.io.mteb import (
    looks_like_mteb,
    mteb_file_name,
    read_mteb_predictions,
    write_mteb_predictions,
)

DEMO_RUNS = ROOT / "mmbright_core" / "data" / "demo" / "runs"


def _predictions(runs, meta=None, split="test"):
    data = {"mteb_model_meta": meta or {"name": "bm25", "revision": None}}
    data.update({domain: {split: run} for domain, run in runs.items()})
    return json.dumps(data)


def test_file_name_and_content_tell_the_task():
    text = _predictions({"physics": {"q1": {"physics/abcd0123_1.txt": 1.5}}})
    found = read_mteb_predictions(text, task_name="MMBrightIT2TRetrieval")
    assert (found.task, found.split, found.model["name"]) == (2, "test", "bm25")
    assert found.runs == {"physics": {"q1": {"physics/abcd0123_1.txt": 1.5}}}
    assert mteb_file_name(3) == "MMBrightIT2IRetrieval_predictions.json"


def test_write_then_read_round_trips(tmp_path):
    runs = {"gis": {"q1": {"gis/0a0b0c0d_1.txt": 2.0, "gis/0a0b0c0d_2.txt": 1.0}}}
    path = write_mteb_predictions(tmp_path, 4, runs, {"name": "clip"})
    assert path.name == "MMBrightIT2ITRetrieval_predictions.json" and looks_like_mteb(path)
    again = read_mteb_predictions(path, domains=("gis", "physics"))
    assert (again.task, again.runs, again.model) == (4, runs, {"name": "clip"})


def test_eval_scores_an_mteb_file_as_the_same_run_in_official_outputs(tmp_path, capsys):
    outputs = read_outputs(DEMO_RUNS / "run_it2t_ocr-bm25")
    path = tmp_path / "MMBrightIT2TRetrieval_predictions.json"
    path.write_text(_predictions({d: dict(r) for d, r in outputs.runs.items()}))
    argv = ["eval", "--source", "demo", "--task", "2", "--format", "json", "--run"]
    assert main([*argv, str(DEMO_RUNS / "run_it2t_ocr-bm25")]) == 0
    official = json.loads(capsys.readouterr().out)
    assert main([*argv, str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == official


def test_compare_reads_mteb_files(tmp_path, capsys):
    for name in ("run_it2t_bm25", "run_it2t_ocr-bm25"):
        runs = {d: dict(r) for d, r in read_outputs(DEMO_RUNS / name).runs.items()}
        folder = tmp_path / name
        folder.mkdir()
        write_mteb_predictions(folder, 2, runs)
    argv = ["compare", "--source", "demo", "--task", "2"]
    files = [
        str(tmp_path / n / "MMBrightIT2TRetrieval_predictions.json")
        for n in ("run_it2t_bm25", "run_it2t_ocr-bm25")
    ]
    assert main([*argv, *files]) == 0
    from_files = capsys.readouterr().out
    pair = [str(DEMO_RUNS / "run_it2t_bm25"), str(DEMO_RUNS / "run_it2t_ocr-bm25")]
    assert main([*argv, *pair]) == 0
    numbers = capsys.readouterr().out
    assert from_files.split("\n")[2:] == numbers.split("\n")[2:]  # same deltas and tests


@pytest.mark.parametrize(
    ("name", "body", "error", "message"),
    [
        ("MMBrightT2XRetrieval_predictions.json", {}, UnknownNameError, "MMBrightT2TRetrieval"),
        (
            "MMBrightIT2TRetrieval_predictions.json",
            {"physix": {"test": {}}},
            UnknownNameError,
            "did you mean 'physics'",
        ),
        (
            "MMBrightIT2TRetrieval_predictions.json",
            {"physics": {"dev": {}, "train": {}}},
            InputError,
            "several splits",
        ),
        (
            "MMBrightIT2TRetrieval_predictions.json",
            {"physics": {"test": {"q1": {"d": "high"}}}},
            InputError,
            "bad score",
        ),
    ],
)
def test_bad_files_are_named_errors(tmp_path, name, body, error, message):
    path = tmp_path / name
    path.write_text(json.dumps({"mteb_model_meta": {}, **body}))
    with pytest.raises(error, match=message):
        read_mteb_predictions(path, domains=("askubuntu", "biology", "gis", "physics"))


def test_eval_refuses_predictions_of_another_task(tmp_path, capsys):
    path = tmp_path / "MMBrightIT2IRetrieval_predictions.json"
    path.write_text(_predictions({"physics": {"q1": {"physics/x.png": 1.0}}}))
    assert main(["eval", "--source", "demo", "--task", "2", "--run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "answer task 3" in err and "\n" not in err


def test_the_dashboard_takes_an_mteb_upload():
    from mmbright_core.data.sources import open_source
    from mmbright_core.ui.common.workspace import entry_from_bytes

    source = open_source("demo")
    runs = {d: dict(r) for d, r in read_outputs(DEMO_RUNS / "run_it2t_bm25").runs.items()}
    data = _predictions(runs).encode()
    entry = entry_from_bytes(
        "MMBrightIT2TRetrieval_predictions.json", data, TaskView(source, 2, "paper")
    )
    assert entry.runs == runs and entry.name == "MMBrightIT2TRetrieval_predictions"
    with pytest.raises(InputError, match="answer task 2"):
        entry_from_bytes(
            "MMBrightIT2TRetrieval_predictions.json", data, TaskView(source, 4, "paper")
        )


def test_run_writes_mteb_predictions_that_score_as_its_outputs(tmp_path, capsys):
    argv = ["--source", "demo", "--task", "2", "--domain", "gis"]
    assert main(["run", *argv, "--retriever", "bm25", "--out", str(tmp_path), "--mteb"]) == 0
    path = tmp_path / "run_it2t_bm25" / "MMBrightIT2TRetrieval_predictions.json"
    found = read_mteb_predictions(path)
    assert found.task == 2 and found.model["retriever"] == "bm25"
    assert found.runs == {"gis": dict(read_outputs(tmp_path / "run_it2t_bm25").runs["gis"])}

"""A stored domain is reused only when its record equals the run's and all its files exist."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from mmbright_core.cli import main
from mmbright_core.data.layout import CONFIGS
from mmbright_core.data.view import TaskView
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner.stored import DOMAIN_FILES, reuse_domain
from mmbright_core.retrieval.runner.task_run import run_task


def test_a_domain_is_reused_under_its_own_config_only(source, tmp_path: Path):
    outcome = run_task(TaskView(source, 2), get_retriever("bm25"), tmp_path)
    first = outcome.domains[0]
    stored = reuse_domain(outcome.task_dir, first.domain, outcome.config, DOMAIN_FILES)
    assert stored is not None and stored.reused
    assert (stored.run, stored.metrics) == (first.run, first.metrics)
    other = dataclasses.replace(outcome.config, k=outcome.config.k - 1)
    assert reuse_domain(outcome.task_dir, first.domain, other, DOMAIN_FILES) is None


def test_a_domain_missing_a_file_it_should_hold_is_run_again(source, tmp_path: Path):
    outcome = run_task(TaskView(source, 2), get_retriever("bm25"), tmp_path)
    domain = outcome.domains[0].domain
    names = (*DOMAIN_FILES, "ocr.json")  # a retriever that records OCR words writes it too
    assert reuse_domain(outcome.task_dir, domain, outcome.config, names) is None


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_dataset_refused_for_a_domain_file_leaves_the_output_folder_as_it_was(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # documents/...parquet names the domain "..": its outputs would go to <out>/run_t2t_bm25/..
    dataset = tmp_path / "data"
    shutil.copytree(fixture_dir, dataset)
    for config in CONFIGS:
        shutil.copy(dataset / config / "academia.parquet", dataset / config / "...parquet")
    out = tmp_path / "out"
    (out / "run_t2t_bm25").mkdir(parents=True)
    (out / "config.json").write_text("the user's own file\n")
    before = _tree(out)
    args = ["run", "--source", str(dataset), "--task", "1", "--retriever", "bm25"]
    assert main([*args, "--out", str(out), "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{dataset / 'documents' / '...parquet'}: invalid domain name" in err
    assert _tree(out) == before and sorted(p.name for p in out.rglob("*")) == [
        "config.json",
        "run_t2t_bm25",
    ]

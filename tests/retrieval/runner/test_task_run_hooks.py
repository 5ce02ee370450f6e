"""The runner's two hooks: progress within a domain, and a guard over every path it touches."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner import task_run
from mmbright_core.retrieval.runner.task_run import Progress, run_task


@pytest.mark.parametrize("name", ["bm25", "random"])
def test_batched_queries_give_the_same_run(
    source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
):
    retriever = get_retriever(name)
    whole = run_task(TaskView(source, 2), retriever, tmp_path / "whole")
    monkeypatch.setattr(task_run, "MIN_BATCH", 1)  # one query per batch
    steps: list[Progress] = []
    batched = run_task(TaskView(source, 2), retriever, tmp_path / "batched", progress=steps.append)
    assert [o.run for o in batched.domains] == [o.run for o in whole.domains]
    queries = sum(len(source.task(2, d).queries) for d in source.domains())
    retrieving = [s for s in steps if s.step.startswith("retrieving queries")]
    assert len(retrieving) == queries  # a step per batch, within each domain
    assert all(0 < s.done < 1 for s in retrieving)
    overall = [s.overall for s in steps]
    assert overall == sorted(overall) and overall[-1] == 1.0


def test_progress_says_reused(source, tmp_path: Path):
    retriever = get_retriever("random")
    run_task(TaskView(source, 1), retriever, tmp_path)
    steps: list[Progress] = []
    run_task(TaskView(source, 1), retriever, tmp_path, progress=steps.append)
    assert [s.step for s in steps] == ["reused from disk"] * len(source.domains())


def test_the_guard_sees_every_folder_before_it_is_written(source, tmp_path: Path):
    seen: list[Path] = []
    outcome = run_task(TaskView(source, 1), get_retriever("random"), tmp_path, guard=seen.append)
    task_dir = outcome.task_dir
    assert tmp_path in seen and task_dir in seen
    for domain in source.domains():
        assert task_dir / domain in seen and task_dir / domain / "scores.json" in seen
    assert task_dir / "summary.json" in seen


def test_a_refusing_guard_stops_before_anything_is_written(source, tmp_path: Path):
    def refuse(path: Path) -> None:
        if path.name == source.domains()[0]:
            raise InputError("refused", found=str(path))

    with pytest.raises(InputError, match="refused"):
        run_task(TaskView(source, 1), get_retriever("random"), tmp_path, guard=refuse)
    assert not any(tmp_path.rglob("*.json"))


def test_ocr_progress_moves_image_by_image(source, tmp_path: Path):
    pytest.importorskip("rapidocr_onnxruntime")
    steps: list[Progress] = []
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path / "cache"))
    run_task(TaskView(source, 2), ocr, tmp_path / "out", progress=steps.append)
    for domain in source.domains():
        queries = len(source.task(2, domain).queries)
        reading = [s for s in steps if s.domain == domain and s.step.startswith("OCR: ")]
        # One step per query read (with its images counted), before the ranking: the bar
        # moves while the images are read, not once the whole domain is done.
        assert [s.step.rpartition("query ")[2] for s in reading] == [
            f"{n} of {queries}" for n in range(1, queries + 1)
        ]
        assert all(0 < s.done < 1 for s in reading)
    overall = [s.overall for s in steps]
    assert overall == sorted(overall) and overall[-1] == 1.0

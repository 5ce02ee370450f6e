"""A run whose doc ids do not fit the task is an error naming the mismatch, never a silent 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.benchmark import check_doc_ids, doc_id_shape, score_task
from mmbright_core.cli import main
from mmbright_core.data.sources import Source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.runs import write_trec_run
from mmbright_core.metrics import evaluate
from mmbright_core.ui.common import workspace

A1 = "academia/a1b2c3d4_101.txt"
A3 = "academia/e5f6a7b8_201.txt"
AI1 = "academia/academia_a1b2c3d4_0001/image_1.png"
AI3 = "academia/academia_e5f6a7b8_0002/image_1.png"
PAIR_TEXT = f"{A1}|||__NO_IMAGE__"
PAIR_IMAGE = f"{A1}|||{AI1}"


@pytest.mark.parametrize(
    ("doc_id", "shape"),
    [
        (A1, "passage"),
        ("biology/fec40b40_1635_0.txt", "passage"),
        (AI1, "image"),
        ("academia/academia_a1b2c3d4_0001/image_2.JPG", "image"),
        (PAIR_TEXT, "pair"),
        (PAIR_IMAGE, "pair"),
        ("12345", "other"),
        ("image.png", "other"),  # an image path always has its domain folder
    ],
)
def test_doc_id_shapes(doc_id: str, shape: str) -> None:
    assert doc_id_shape(doc_id) == shape


def test_the_silent_zero_this_prevents(source: Source) -> None:
    # What the official harness does with a Task 4 run on Task 1: every score is 0.
    qrels = source.judgments(1, "academia").qrels
    result = evaluate(qrels, {"a1": {PAIR_TEXT: 2.0, PAIR_IMAGE: 1.0}})
    assert result.aggregate["nDCG@10"] == 0.0


@pytest.mark.parametrize(
    ("task", "run", "found", "hint"),
    [
        (1, {"a1": {PAIR_TEXT: 2.0, PAIR_IMAGE: 1.0}}, "Task 4 pair ids such as", "task 4 run"),
        (2, {"a1": {PAIR_IMAGE: 1.0}}, "Task 4 pair ids such as", "task 4 run"),
        (3, {"a1": {A1: 2.0, A3: 1.0}}, "passage ids such as", "task 1 or 2 run"),
        (4, {"a1": {A1: 2.0, A3: 1.0}}, "passage ids such as", "task 1 or 2 run"),
        (1, {"a1": {AI1: 2.0}}, "image paths such as", "task 3 run"),
        (4, {"a1": {AI1: 2.0}, "a2": {"7": 1.0}}, "image paths such as", "task 3 run"),
    ],
)
def test_a_run_of_another_task_is_refused(
    source: Source, task: int, run: dict, found: str, hint: str
) -> None:
    with pytest.raises(InputError, match="do not fit task") as caught:
        score_task(TaskView(source, task), {"academia": run}, run_name="mine.trec")
    err = caught.value
    assert err.source == "mine.trec"
    assert f"task {task} (domain 'academia')" in err.problem
    assert found in (err.found or "")
    first_id = next(iter(next(iter(run.values()))))
    assert repr(first_id) in (err.found or "")  # a sample of the run's ids
    assert "academia/" in (err.expected or "")  # a sample of the judged ids
    assert hint in (err.hint or "")


def test_ids_of_no_known_shape_are_refused_too(source: Source) -> None:
    with pytest.raises(InputError, match="ids of no MM-BRIGHT shape such as '1', '2'"):
        score_task(TaskView(source, 1), {"academia": {"a1": {"1": 2.0, "2": 1.0}}})


def test_a_weak_but_honest_run_still_scores(source: Source) -> None:
    # One passage id among junk is enough: the run is scored (0 here), not refused.
    run = {"a1": {"junk": 3.0, PAIR_TEXT: 2.0, "academia/deadbeef_501.txt": 1.0}}
    scores = score_task(TaskView(source, 1), {"academia": run})
    assert scores.macro["nDCG@10"] == 0.0
    # Task 4: text-only and image pairs both count as pairs.
    scores = score_task(TaskView(source, 4), {"academia": {"a1": {PAIR_TEXT: 2.0, A1: 1.0}}})
    assert scores.macro["nDCG@10"] > 0


def test_empty_runs_and_unknown_conventions_are_not_judged() -> None:
    check_doc_ids({"q": {A1: 1}}, {}, task=1, domain="d")
    check_doc_ids({"q": {A1: 1}}, {"q": {}}, task=1, domain="d")
    check_doc_ids({}, {"q": {PAIR_TEXT: 1.0}}, task=1, domain="d")
    # Another dataset's ids (no MM-BRIGHT shape in the qrels): nothing to compare with.
    check_doc_ids({"q": {"doc-7": 1}}, {"q": {PAIR_TEXT: 1.0}}, task=1, domain="d")


def test_each_domain_is_checked(source: Source) -> None:
    runs = {"academia": {"a1": {A1: 1.0}}, "biology": {"b1": {AI1: 1.0}}}
    with pytest.raises(InputError, match="domain 'biology'"):
        score_task(TaskView(source, 1), runs)


def test_command_line_says_so_with_exit_status_2(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "task1.trec"
    write_trec_run(run, {"academia/a1": {A1: 2.0, A3: 1.0}, "academia/a2": {A3: 1.0}})
    argv = ["eval", "--source", str(fixture_dir), "--task", "3", "--run", str(run)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "do not fit task 3" in err and repr(A1) in err and "task 1 or 2 run" in err


def test_upload_of_a_run_for_another_task(source: Source) -> None:
    data = f"academia/a1 Q0 {PAIR_IMAGE} 1 2.0 t\nacademia/a1 Q0 {PAIR_TEXT} 2 1.0 t\n".encode()
    with pytest.raises(InputError, match=r"^pairs\.trec: the run's doc ids do not fit task 2"):
        workspace.entry_from_bytes("pairs.trec", data, TaskView(source, 2, "paper"))
    entry = workspace.entry_from_bytes("pairs.trec", data, TaskView(source, 4, "paper"))
    assert entry.runs["academia"]["a1"][PAIR_TEXT] == 1.0

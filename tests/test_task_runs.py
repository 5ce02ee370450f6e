"""Loading a run for a task (``task_runs``): the command line and the dashboard alike.

An outputs folder of another task is refused with one message by every reader; the
judgments that file a run's queries are the ones scoring reads; a reader's warning about
an upload reaches the page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apptest import fresh, use_folder
from streamlit.testing.v1 import AppTest

from mmbright_core.cli import main
from mmbright_core.data import sources
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.rerank.first_stage import load_first_stage
from mmbright_core.ui.common import workspace
from mmbright_core.ui.common.workspace import DEMO_RUNS

TASK4_OUTPUTS = DEMO_RUNS / "it2it_bm25"  # the demo's Task 4 run, summary.json says text_pair
MISMATCH = "these outputs answer task 4, not task 2; expected task_type 'multimodal_text'"
A1 = "academia/a1b2c3d4_101.txt"  # a passage of the fixture's corpus, judged for query a1


def _dashboard_message() -> str:
    with pytest.raises(InputError) as err:
        workspace.entries_from_folder(str(TASK4_OUTPUTS), TaskView(open_source("demo"), 2, "paper"))
    return str(err.value)


def test_the_dashboard_refuses_another_tasks_outputs() -> None:
    assert f"{TASK4_OUTPUTS}: {MISMATCH}" in _dashboard_message()


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--source", "demo", "--task", "2", "--run", str(TASK4_OUTPUTS)],
        ["compare", "--source", "demo", "--task", "2", str(TASK4_OUTPUTS), str(TASK4_OUTPUTS)],
    ],
    ids=["eval", "compare"],
)
def test_the_command_line_refuses_another_tasks_outputs_as_the_dashboard_does(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == f"mmbright {argv[0]}: error: {_dashboard_message()}\n"


def test_a_first_stage_of_another_task_is_refused_as_the_dashboard_does() -> None:
    with pytest.raises(InputError) as err:
        load_first_stage(TaskView(open_source("demo"), 2), TASK4_OUTPUTS)
    assert str(err.value) == _dashboard_message()


def test_eval_builds_each_domains_judgments_once(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[str, str]] = []
    real = sources.build_task

    def counted(source, task, domain, *args, **kwargs):  # type: ignore[no-untyped-def]
        built.append((domain, kwargs.get("negatives", "")))
        return real(source, task, domain, *args, **kwargs)

    monkeypatch.setattr(sources, "build_task", counted)
    run = tmp_path / "run.trec"
    run.write_text(f"a1 Q0 {A1} 1 1.0 t\nb1 Q0 biology/fec40b40_1635_0.txt 1 1.0 t\n")
    argv = ["eval", "--source", str(fixture_dir), "--task", "1", "--run", str(run)]
    assert main([*argv, "--negatives", "keep"]) == 0
    assert sorted(built) == [("academia", "keep"), ("biology", "keep")]


def test_eval_prints_a_runs_trailing_text_warning(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "tail.trec"
    run.write_text(f"a1 Q0 {A1} 1 1.0 t more junk\n")
    assert main(["eval", "--source", str(fixture_dir), "--task", "1", "--run", str(run)]) == 0
    assert capsys.readouterr().err == (
        f"mmbright eval: warning: {run}: 1 line has text after the run tag (line 1); "
        "ignored, as trec_eval ignores it\n"
    )


def _add_upload(fixture_dir: Path, name: str, text: str) -> AppTest:
    at = fresh()
    use_folder(at, fixture_dir)  # Task 2, where a1 is a query and A1 a passage
    at.file_uploader(key="upload_files").set_value([(name, text.encode(), "text/plain")])
    at.run()
    at.button(key="add_uploads").click().run()
    assert not at.exception
    return at


def test_an_uploads_trailing_text_warning_is_shown_on_the_page(fixture_dir: Path) -> None:
    at = _add_upload(fixture_dir, "tail.trec", f"a1 Q0 {A1} 1 1.0 t more junk\n")
    assert list(at.multiselect(key="selected_runs_2").value) == ["tail"]
    warned = [w.value.replace("\\", "") for w in at.main.warning]
    assert warned == [
        "tail: tail.trec: 1 line has text after the run tag (line 1); "
        "ignored, as trec_eval ignores it"
    ]


def test_eval_warns_of_query_ids_that_match_a_domain_only_once_normalised(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "odd.trec"
    # a fullwidth domain and a trailing zero-width space: neither files under a domain.
    run.write_text(
        f"academia/a1 Q0 {A1} 1 1.0 t\n"
        f"\uff41\uff43\uff41\uff44\uff45\uff4d\uff49\uff41/a2 Q0 {A1} 1 1.0 t\n"
        f"a4\u200b Q0 {A1} 1 1.0 t\n",
        encoding="utf-8",
    )
    assert main(["eval", "--source", str(fixture_dir), "--task", "1", "--run", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"{run}: 2 query id(s) belong to no domain of the task and are left out" in err
    assert "2 of them match a query only once normalised" in err
    assert "'a4\\u200b' ~ 'a4'" in err
    assert "\u200b" not in err


def test_an_uploads_query_ids_that_match_nothing_are_warned_on_the_page(
    fixture_dir: Path,
) -> None:
    at = _add_upload(fixture_dir, "odd.trec", f"a1 Q0 {A1} 1 1.0 t\na1\u200b Q0 {A1} 1 1.0 t\n")
    warned = " ".join(w.value for w in at.main.warning)  # Markdown: the page shows it literally
    assert "1 query id(s) belong to no domain of the task and are left out" in warned
    assert "1 of them match a query only once normalised" in warned
    assert "a1\\\\u200b" in warned and "\u200b" not in warned


A2 = "academia/e5f6a7b8_201.txt"  # judged for query a2


def _warned(at: AppTest) -> str:
    """The page's warnings as the user reads them: Markdown escapes undone (``\\_`` is ``_``)."""
    return " ".join(re.sub(r"\\(.)", r"\1", w.value) for w in at.main.warning)


def test_an_uploads_doc_ids_that_match_only_once_normalised_are_warned_on_the_page(
    fixture_dir: Path,
) -> None:
    # a1 ranks its judged passage behind U+202E: it scores 0 with no other word.
    at = _add_upload(fixture_dir, "bidi.trec", f"a1 Q0 \u202e{A1} 1 1.0 t\na2 Q0 {A2} 1 1.0 t\n")
    assert list(at.multiselect(key="selected_runs_2").value) == ["bidi"]
    warned = _warned(at)
    assert "\u202e" not in warned  # written out, never the character itself
    assert (
        "bidi: academia: 1 retrieved doc id(s) match a judged doc only once normalised (NFKC, "
        f"invisible characters removed), e.g. '\\u202e{A1}' ~ '{A1}' (query 'a1'): they score "
        "as unjudged"
    ) in warned
    assert "bidi: academia: 1 scored queries retrieve no judged document, e.g. 'a1'" in warned


def test_a_run_folders_ids_that_match_nothing_are_warned_on_the_page(
    fixture_dir: Path, tmp_path: Path
) -> None:
    assert main(["run", "--source", str(fixture_dir), "--task", "2", "--retriever", "bm25",
                 "--out", str(tmp_path)]) == 0  # fmt: skip
    scores = tmp_path / "run_it2t_bm25" / "academia" / "scores.json"
    ranked = json.loads(scores.read_text())
    ranked["a1"] = {f"\u202e{doc}": score for doc, score in ranked["a1"].items()}
    ranked["a9"] = ranked["a2"]  # a query of no domain
    scores.write_text(json.dumps(ranked))
    at = fresh()
    use_folder(at, fixture_dir)
    at.text_input(key="runs_folder").input(str(tmp_path / "run_it2t_bm25")).run()
    at.button(key="add_folder").click().run()
    assert not at.exception
    warned = _warned(at)
    assert "academia: 1 query id(s) of the run match no query of the qrels, e.g. 'a9'" in warned
    assert f"e.g. '\\u202e{A1}' ~ '{A1}' (query 'a1')" in warned and "\u202e" not in warned


@pytest.fixture(scope="module")
def standard_outputs(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mmbright run --out outputs`` for tasks 1, 2 and 4: one folder per task side by side."""
    out = tmp_path_factory.mktemp("standard") / "outputs"
    for task in (1, 2, 4):
        argv = ["run", "--source", str(fixture_dir), "--task", str(task), "--retriever", "bm25"]
        assert main([*argv, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    ("task", "kept", "others"),
    [(1, "run_t2t_bm25", (2, 4)), (2, "run_it2t_bm25", (1, 4)), (4, "it2it_bm25", (1, 2))],
)
def test_the_standard_outputs_folder_gives_each_task_its_run(
    standard_outputs: Path, fixture_dir: Path, task: int, kept: str, others: tuple[int, ...]
) -> None:
    found = workspace.entries_from_folder(
        str(standard_outputs), TaskView(open_source(str(fixture_dir)), task, "paper")
    )
    assert [e.origin for e in found.entries] == [f"folder: {standard_outputs / kept}"]
    names = {1: "run_t2t_bm25", 2: "run_it2t_bm25", 4: "it2it_bm25"}
    assert sorted(found.skipped) == sorted(
        f"{names[other]}: these outputs answer task {other}, not task {task}" for other in others
    )


def test_the_shipped_demo_runs_folder_gives_task_2_its_runs() -> None:
    found = workspace.entries_from_folder(str(DEMO_RUNS), TaskView(open_source("demo"), 2, "paper"))
    assert sorted(e.name for e in found.entries) == ["bm25", "ocr-bm25"]
    assert found.skipped == tuple(
        f"{name}: these outputs answer task 4, not task 2"
        for name in ("it2it_bm25", "it2it_ocr-bm25")
    )


def test_a_folder_with_no_outputs_of_the_task_says_what_it_holds(
    standard_outputs: Path, fixture_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError) as err:
        workspace.entries_from_folder(str(DEMO_RUNS), TaskView(open_source("demo"), 1, "paper"))
    assert str(err.value).startswith(f"{DEMO_RUNS}: no outputs of task 1 in the folder")
    assert "run_it2t_bm25: these outputs answer task 2, not task 1" in str(err.value)
    argv = ["eval", "--source", "demo", "--task", "1", "--run", str(DEMO_RUNS)]
    assert main(argv) == 2
    assert f"{DEMO_RUNS}: no outputs of task 1 here" in capsys.readouterr().err


def test_the_command_line_reads_the_tasks_folder_of_the_standard_outputs(
    standard_outputs: Path, fixture_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ["--source", str(fixture_dir), "--task", "2"]
    assert main(["eval", *source, "--run", str(standard_outputs / "run_it2t_bm25")]) == 0
    alone = capsys.readouterr().out
    assert main(["eval", *source, "--run", str(standard_outputs)]) == 0
    said = capsys.readouterr()
    assert said.out == alone
    assert said.err == (
        "mmbright eval: warning: skipped it2it_bm25: these outputs answer task 4, not task 2\n"
        "mmbright eval: warning: skipped run_t2t_bm25: these outputs answer task 1, not task 2\n"
    )

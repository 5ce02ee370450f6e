"""Home under AppTest: a dataset folder it cannot use says why on the page itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from apptest import APP, add_folder, fresh
from streamlit.testing.v1 import AppTest

from mmbright_core.cli import main
from mmbright_core.ui.common.confine import ROOT_ENV


def _home_on(folder: str) -> AppTest:
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(folder).run()
    assert not at.exception
    return at


def _page_errors(at: AppTest) -> list[str]:
    # The page's own messages, not the sidebar's (Home is where the user looks), as the
    # user reads them: the page escapes their Markdown.
    return [e.value.replace("\\", "") for e in at.main.error]


def test_home_names_a_dataset_folder_it_cannot_use(tmp_path: Path) -> None:
    missing = tmp_path / "mm-brigth"
    said = _page_errors(_home_on(str(missing)))
    assert len(said) == 1 and f"no such folder: '{missing}'" in said[0]
    assert "unknown source" not in said[0]

    said = _page_errors(_home_on("/etc"))
    assert len(said) == 1 and said[0].startswith("/etc: no MM-BRIGHT parquet files")
    assert "{config}/{domain}.parquet" in said[0]  # the layout it expects

    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    said = _page_errors(_home_on(str(tmp_path / "data.parquet")))
    assert len(said) == 1 and "not a folder:" in said[0] and "data.parquet" in said[0]


def test_home_names_a_dataset_folder_outside_the_root(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    said = _page_errors(_home_on(str(fixture_dir)))
    assert len(said) == 1 and "dataset folder is outside the folder this server may" in said[0]
    assert f"found '{fixture_dir}'" in said[0]


def test_home_is_quiet_on_a_usable_folder(fixture_dir: Path) -> None:
    at = _home_on(str(fixture_dir))
    assert _page_errors(at) == []


A1 = "academia/a1b2c3d4_101.txt"  # a passage of the fixture's corpus, judged for query a1


def _on_fixture(fixture_dir: Path) -> AppTest:
    at = _home_on(str(fixture_dir))
    at.selectbox(key="task").set_value(1).run()
    return at


def _upload(at: AppTest, *files: tuple[str, bytes]) -> None:
    at.file_uploader(key="upload_files").set_value(
        [(name, data, "application/octet-stream") for name, data in files]
    )
    at.run()
    at.button(key="add_uploads").click().run()


def _runs(at: AppTest) -> list[str]:
    return list(at.multiselect(key="selected_runs_1").value)


def _warnings(at: AppTest) -> list[str]:
    return [w.value.replace("\\", "") for w in at.main.warning]


def _button(at: AppTest, prefix: str):
    (found,) = [b for b in at.button if str(b.key).startswith(prefix)]
    return found


def test_an_upload_matching_nothing_warns_with_its_counts_before_it_is_added(fixture_dir):
    at = _on_fixture(fixture_dir)
    unknown = "".join(f"a1 Q0 academia/ffffff0{n}_1.txt {n} {9 - n}.0 t\n" for n in range(3))
    _upload(at, ("made-up.trec", unknown.encode()))
    warned = _warnings(at)
    assert len(warned) == 1 and warned[0].startswith("made-up.trec matches nothing of task 1")
    # The fixture's task 1: 4 queries in academia and 2 in biology; academia has 7 passages.
    assert "1 of its 1 queries are queries of the task (which has 6)" in warned[0]
    assert "0 of the 3 doc ids it ranks are in the corpus (7 items" in warned[0]
    assert not at.main.success and _runs(at) == []

    _button(at, "upload_add_").click().run()
    # The question is gone; what the added run's ids match is said with it (no silent zero).
    assert _runs(at) == ["made-up"] and _warnings(at) == [
        "made-up: academia: 1 scored queries retrieve no judged document, e.g. 'a1'"
    ]
    assert any("Added run 'made-up'" in s.value for s in at.main.success)


def test_an_upload_matching_a_little_warns_and_can_be_discarded(fixture_dir):
    at = _on_fixture(fixture_dir)
    # One query of three is the task's: under half of the run.
    lines = [f"{q} Q0 {A1} 1 1.0 t\n" for q in ("a1", "academia/zz1", "academia/zz2")]
    _upload(at, ("mostly-other.trec", "".join(lines).encode()))
    warned = _warnings(at)
    assert len(warned) == 1 and "matches only a little of task 1" in warned[0]
    assert "1 of its 3 queries are queries of the task" in warned[0]
    _button(at, "upload_discard_").click().run()
    assert _runs(at) == [] and not _warnings(at)
    assert any("Discarded mostly-other.trec" in i.value for i in at.main.info)


def test_an_upload_matching_well_is_added_at_once(fixture_dir):
    at = _on_fixture(fixture_dir)
    _upload(at, ("good.trec", f"a1 Q0 {A1} 1 1.0 t\n".encode()))
    assert _runs(at) == ["good"] and not _warnings(at)


def test_a_removed_upload_stays_removed(fixture_dir):
    at = _on_fixture(fixture_dir)
    good = ("good.trec", f"a1 Q0 {A1} 1 1.0 t\n".encode())
    _upload(at, ("broken.trec", b"a1 Q0 doc1 1\n"), good)
    assert len(at.main.error) == 1 and _runs(at) == ["good"]

    _button(at, "remove_").click().run()
    assert _runs(at) == []
    at.button(key="add_uploads").click().run()  # both files are still in the uploader
    assert _runs(at) == [] and not at.main.error
    assert any("No new file to read" in i.value for i in at.main.info)

    _upload(at, good)  # uploaded again: read again
    assert _runs(at) == ["good"]


def test_the_standard_outputs_folder_adds_the_tasks_run_and_names_the_others(
    fixture_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "outputs"
    for task in (1, 2, 4):  # as `mmbright run --out outputs` leaves them: one folder a task
        argv = ["run", "--source", str(fixture_dir), "--task", str(task), "--retriever", "bm25"]
        assert main([*argv, "--out", str(out)]) == 0
    at = _home_on(str(fixture_dir))
    at.selectbox(key="task").set_value(2).run()
    add_folder(at, out)
    assert not at.exception and not at.main.error
    (added,) = [s.value for s in at.main.success]
    assert f"folder: {out / 'run_it2t_bm25'}" in added.replace("\\", "")
    assert len(at.multiselect(key="selected_runs_2").value) == 1
    said = [i.value.replace("\\", "") for i in at.main.info]
    assert [i for i in said if i.startswith("Skipped")] == [
        f"Skipped {name}: these outputs answer task {task}, not task 2."
        for name, task in (("it2it_bm25", 4), ("run_t2t_bm25", 1))
    ]


def test_choosing_a_skipped_task_adds_its_runs(fixture_dir: Path, tmp_path: Path) -> None:
    """The button offered for outputs of another task chooses that task and adds them."""
    out = tmp_path / "outputs"
    for task in (2, 4):
        argv = ["run", "--source", str(fixture_dir), "--task", str(task), "--retriever", "bm25"]
        assert main([*argv, "--out", str(out)]) == 0
    at = _home_on(str(fixture_dir))
    at.selectbox(key="task").set_value(2).run()
    add_folder(at, out)
    assert len(at.multiselect(key="selected_runs_2").value) == 1
    at.button(key="switch_add_4").click().run()
    assert not at.exception and not at.main.error
    assert at.selectbox(key="task").value == 4
    assert len(at.multiselect(key="selected_runs_4").value) == 1
    (added,) = [s.value for s in at.main.success]
    assert f"folder: {out / 'it2it_bm25'}" in added.replace("\\", "")
    assert [b.key for b in at.button if b.key.startswith("switch_add_")] == ["switch_add_2"]


def test_switching_the_source_and_back_keeps_the_run_selection(fixture_dir: Path) -> None:
    at = fresh()
    at.selectbox(key="task").set_value(2).run()
    assert sorted(at.multiselect(key="selected_runs_2").value) == ["bm25", "ocr-bm25"]
    at.multiselect(key="selected_runs_2").set_value(["ocr-bm25"]).run()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(fixture_dir)).run()
    assert list(at.multiselect(key="selected_runs_2").value) == []  # the folder has no run
    at.radio(key="source_kind").set_value("Demo (synthetic)").run()
    assert list(at.multiselect(key="selected_runs_2").value) == ["ocr-bm25"]


def test_home_says_what_to_do_next() -> None:
    at = fresh()
    at.selectbox(key="task").set_value(2).run()
    said = [i.value for i in at.main.info if i.value.startswith("Next")]
    assert len(said) == 1 and "**Per query**" in said[0] and "**Inspector**" in said[0]
    at.multiselect(key="selected_runs_2").set_value(["bm25"]).run()
    said = [i.value for i in at.main.info if i.value.startswith("Next")]
    assert len(said) == 1 and said[0].startswith("Next: add a second run")


MODEL_LIBRARIES = ("torch", "transformers", "sentence_transformers", "faiss", "ray", "mteb")
"""What only a run or the inspector's rebuilt retriever needs: Home imports none of them."""


def test_home_imports_no_model_library() -> None:
    code = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"AppTest.from_file({str(APP)!r}, default_timeout=60).run()\n"
        f"print(sorted(m for m in {MODEL_LIBRARIES!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"

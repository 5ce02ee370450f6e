"""The Run page: honest counts, no duplicate runs, retrievers for the task, model fields."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import streamlit as st
from apptest import error_messages, fresh, goto, use_folder
from raising_plugin import ESCAPED, MESSAGE
from streamlit.testing.v1 import AppTest

from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError, is_hidden
from mmbright_core.retrieval import registry
from mmbright_core.retrieval.catalogue.presets import presets
from mmbright_core.ui.common.confine import ROOT_ENV, Confinement
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.run import run_choice, running


@pytest.fixture
def run_page(fixture_dir: Path) -> AppTest:
    at = fresh()
    use_folder(at, fixture_dir)
    return goto(at, "run")


def _start(at: AppTest, out: Path, name: str = "random") -> str:
    at.selectbox(key="run_retriever").set_value(name).run()
    at.text_input(key="run_out").input(str(out)).run()
    at.button(key="run_start").click().run()
    assert not at.exception and not error_messages(at), error_messages(at)
    return " ".join(s.value.replace("\\", "") for s in at.success)  # as the page reads


def test_a_fresh_run_reuses_nothing_and_a_repeat_reuses_everything(run_page, tmp_path: Path):
    first = _start(run_page, tmp_path / "empty")
    assert "Added run 'random': 2 domain(s), 2 run now, 0 reused from disk" in first
    again = _start(run_page, tmp_path / "empty")
    assert "Updated run 'random': 2 domain(s), 0 run now, 2 reused from disk" in again
    assert run_page.multiselect(key="selected_runs_2").value == ["random"]  # no "random (2)"
    assert f"Its files are in {tmp_path / 'empty' / 'run_it2t_random'}." in first
    elsewhere = _start(run_page, tmp_path / "other")  # another folder: another run, so named
    assert "Added run 'random · other/run_it2t_random'" in elsewhere


@pytest.mark.parametrize(
    ("task", "absent", "present"),
    [
        (1, {"ocr-bm25", "ocr-dense", "api"}, {"bm25", "clip"}),
        (3, {"bm25", "dense", "api"}, {"clip", "random"}),
    ],
)
def test_only_retrievers_that_run_the_task_are_offered(
    fixture_dir: Path, task: int, absent: set[str], present: set[str]
):
    at = fresh()
    use_folder(at, fixture_dir)
    at.selectbox(key="task").set_value(task).run()
    goto(at, "run")
    offered = set(at.selectbox(key="run_retriever").options)
    assert present <= offered and not absent & offered


def test_the_tasks_offered_are_read_from_the_retrievers() -> None:
    # Without building a model: a class's own tasks, or those of the class a factory returns.
    for name in ("bm25", "random"):
        assert registry.declared_tasks(name) == registry.get_retriever(name).tasks
    assert registry.declared_tasks("ocr-bm25") == frozenset({2, 4})
    # Dual encoders run what their model's modalities allow: offered on every task.
    assert registry.declared_tasks("hf") is None and registry.declared_tasks("mteb") is None
    for task in (1, 2, 3, 4):
        offered = run_choice.runnable(registry.available_retrievers(), task)
        assert {"hf", "mteb"} <= set(offered) and "api" not in offered


def test_model_fields_are_shown_for_the_retrievers_that_take_them(run_page):
    run_page.selectbox(key="run_retriever").set_value("clip").run()
    keys = {t.key for t in run_page.text_input}
    assert {"run_model", "run_pretrained", "run_checkpoint"} <= keys
    run_page.selectbox(key="run_retriever").set_value("random").run()
    assert not {t.key for t in run_page.text_input} & {"run_model", "run_checkpoint"}


def test_model_fields_become_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    free = Confinement(None)
    fields = {"model": "ViT-B-32", "pretrained": "laion2b_s34b_b79k", "checkpoint": ""}
    assert run_choice.retriever_options("clip", fields, free) == {
        "model": "ViT-B-32",
        "pretrained": "laion2b_s34b_b79k",
    }
    weights = tmp_path / "open_clip.bin"
    weights.write_bytes(b"\0")
    fields = {"model": "ViT-B-32", "checkpoint": str(weights)}
    assert run_choice.retriever_options("clip", fields, free)["pretrained"] == str(weights)
    assert run_choice.retriever_options("random", fields, free) == {}  # takes no model
    with pytest.raises(InputError, match="pretrained tag and a checkpoint file"):
        run_choice.retriever_options("clip", {**fields, "pretrained": "openai"}, free)

    root = tmp_path / "root"
    root.mkdir()
    confined = Confinement(root.resolve())
    with pytest.raises(InputError, match="checkpoint file is outside"):
        run_choice.retriever_options("clip", {"checkpoint": str(weights)}, confined)
    with pytest.raises(InputError, match="model folder is outside"):
        run_choice.retriever_options("clip", {"model": f"local-dir:{tmp_path}"}, confined)
    with pytest.raises(InputError, match="model folder is outside"):
        run_choice.retriever_options("dense", {"model": str(tmp_path)}, confined)
    hub = run_choice.retriever_options("dense", {"model": "BAAI/bge-large-en-v1.5"}, confined)
    assert hub == {"model": "BAAI/bge-large-en-v1.5"}  # a hub id is not a path


def test_the_clip_advice_can_be_followed_on_the_page(run_page, tmp_path: Path):
    # The error for weights that cannot be had names a checkpoint field the page now has.
    run_page.selectbox(key="run_retriever").set_value("clip").run()
    run_page.text_input(key="run_checkpoint").input(str(tmp_path / "absent.bin")).run()
    run_page.text_input(key="run_out").input(str(tmp_path / "out")).run()
    run_page.button(key="run_start").click().run()
    assert not run_page.exception
    assert any("checkpoint file does not exist" in e for e in error_messages(run_page))


def test_the_default_output_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in (running.OUTPUTS_ENV, ROOT_ENV, "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert running.default_output_folder() == str(
        tmp_path / "home" / ".local" / "share" / "mmbright" / "outputs"
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert running.default_output_folder() == str(tmp_path / "xdg" / "mmbright" / "outputs")
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    assert running.default_output_folder() == str(tmp_path.resolve() / "outputs")
    monkeypatch.setenv(running.OUTPUTS_ENV, str(tmp_path / "mine"))
    assert running.default_output_folder() == str(tmp_path / "mine")


def test_the_page_writes_to_the_default_folder(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(running.OUTPUTS_ENV, str(tmp_path / "outs"))
    at = fresh()
    use_folder(at, fixture_dir)
    goto(at, "run")
    assert at.text_input(key="run_out").value == str(tmp_path / "outs")
    at.selectbox(key="run_retriever").set_value("random").run()
    at.button(key="run_start").click().run()
    assert not error_messages(at)
    assert (tmp_path / "outs" / "run_it2t_random" / "summary.json").is_file()


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning).replace("\\", "")  # Markdown escapes


def test_task1_then_task2_on_the_page_leaves_both_runs_loadable(
    run_page: AppTest, fixture_dir: Path, tmp_path: Path
):
    from mmbright_core.data.sources import open_source
    from mmbright_core.ui.common import workspace

    run_page.selectbox(key="task").set_value(1).run()
    _start(run_page, tmp_path, "bm25")
    (one,) = tmp_path.iterdir()
    written = _files(one)
    run_page.selectbox(key="task").set_value(2).run()
    _start(run_page, tmp_path, "bm25")
    assert not _warnings(run_page)  # another task is another folder, not a conflict
    assert _files(one) == written
    source = open_source(str(fixture_dir))
    folders = sorted(tmp_path.iterdir())
    assert [f.name for f in folders] == ["run_it2t_bm25", "run_t2t_bm25"]
    for task, folder in zip((2, 1), folders, strict=True):
        (entry,) = workspace.entries_from_folder(
            str(folder), TaskView(source, task, "paper")
        ).entries
        assert set(entry.runs) == set(source.domains()) and entry.task == task


def test_a_rerun_with_other_settings_goes_to_a_new_folder(run_page: AppTest, tmp_path: Path):
    _start(run_page, tmp_path, "bm25")
    (first,) = tmp_path.iterdir()
    written = _files(first)
    run_page.text_input(key="run_k").input("5").run()
    said = _start(run_page, tmp_path, "bm25")
    assert "2 run now, 0 reused" in said
    moved = tmp_path / f"{first.name}_2"
    # Named by the setting that differs, not "bm25 (2)", and it says where its files are.
    assert "Added run 'bm25 · k 5': 2 domain(s)" in said
    assert f"Its files are in {moved}." in said
    warned = _warnings(run_page)
    assert f"Wrote to {moved}, not {first}, which holds another configuration" in warned
    assert "k (recorded 1000, now 5)" in warned
    assert _files(first) == written  # byte for byte
    assert json.loads((moved / "config.json").read_text())["config"]["k"] == 5
    again = _start(run_page, tmp_path, "bm25")  # the same settings: back to their folder
    assert "0 run now, 2 reused" in again and sorted(tmp_path.iterdir()) == [first, moved]


def test_a_retriever_whose_extra_is_missing_is_marked_and_cannot_start(
    run_page: AppTest, monkeypatch: pytest.MonkeyPatch
):
    # The ``app`` install: open_clip and the OCR engine cannot be imported there.
    for module in ("open_clip", "rapidocr_onnxruntime"):
        monkeypatch.setitem(sys.modules, module, None)
    run_page.run()
    box = run_page.selectbox(key="run_retriever")
    shown = set(box.options)  # as the page shows them
    assert "clip · unavailable: needs pip install 'mmbright[clip]'" in shown
    assert "ocr-bm25 · unavailable: needs pip install 'mmbright[ocr]'" in shown
    assert {"bm25", "dense", "random"} <= shown
    box.set_value("ocr-bm25").run()
    (said,) = [w.value.replace("\\", "") for w in run_page.warning]
    assert said == (
        "ocr-bm25 cannot run on this server: it needs the optional packages of "
        "pip install 'mmbright[ocr]', which are not installed."
    )
    assert run_page.button(key="run_start").disabled
    box.set_value("bm25").run()
    assert not run_page.warning and not run_page.button(key="run_start").disabled


def test_a_preset_whose_extra_is_missing_is_marked_and_cannot_start(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, "transformers", None)
    run_page = fresh()
    use_folder(run_page, fixture_dir)
    run_page.selectbox(key="task").set_value(1).run()  # BM25 and hf presets side by side
    goto(run_page, "run")
    run_page.radio(key="run_kind").set_value("Model preset").run()
    box = run_page.selectbox(key="run_preset")
    offered = [p for p in presets(1) if p.backend != "api"]
    shown = {p.name: label for p, label in zip(offered, box.options, strict=True)}
    hf_presets = [p.name for p in offered if p.backend in ("hf", "hub-code")]
    assert hf_presets and all(
        shown[n].endswith(" · unavailable: needs pip install 'mmbright[hf]'") for n in hf_presets
    )
    assert "unavailable" not in shown[next(p.name for p in offered if p.backend == "bm25")]
    box.set_value(hf_presets[0]).run()
    assert run_page.button(key="run_start").disabled


def test_a_folder_another_job_is_writing_is_refused_on_the_page_naming_the_job(
    run_page: AppTest, fixture_dir: Path, tmp_path: Path
):
    from held_jobs import let_go, start_held

    out = tmp_path / "out"
    args = ["run", "--source", str(fixture_dir), "--task", "2", "--out", str(out)]
    (tmp_path / "job").mkdir()
    job, go = start_held(
        [*args, "--retriever", "blocking_retriever:make"], "academia", tmp_path / "job"
    )
    try:
        run_page.selectbox(key="run_retriever").set_value("bm25").run()
        run_page.text_input(key="run_out").input(str(out)).run()
        run_page.button(key="run_start").click().run()
        (said,) = [e.replace("\\", "") for e in error_messages(run_page)]
        assert said.startswith(
            f"{out / 'run_it2t_bm25'}: is being written by another job (pid {job.pid} on "
        )
        assert "`mmbright run --source" in said and "blocking_retriever:make" in said
        assert said.endswith("Wait for it to end, or choose another output folder")
        assert not run_page.success and not run_page.exception
    finally:
        let_go(go)
        assert job.wait(timeout=300) == 0
    written = _files(out / "run_it2t_bm25")
    # Once the job has ended the page runs; its settings differ, so beside the job's folder.
    assert "2 run now, 0 reused" in _start(run_page, out, "bm25")
    assert _files(out / "run_it2t_bm25") == written and (out / "run_it2t_bm25_2").is_dir()


def test_an_installed_plugins_traceback_on_the_page_shows_its_controls_written_out(
    fixture_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
):
    site = tmp_path / "site"
    info = site / "raising_page_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: raising-page-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text("[mmbright.retrievers]\nraising = raising_plugin:make\n")
    monkeypatch.syspath_prepend(str(site))
    shown = st.get_option("client.showErrorDetails")
    st.set_option("client.showErrorDetails", "full")  # a server that shows tracebacks
    request.addfinalizer(lambda: st.set_option("client.showErrorDetails", shown))
    at = fresh()
    use_folder(at, fixture_dir)
    goto(at, "run")
    at.selectbox(key="run_retriever").set_value("raising").run()
    at.text_input(key="run_out").input(str(tmp_path / "out")).run()
    at.button(key="run_start").click().run()
    assert not at.exception
    (failed,) = error_messages(at)
    assert failed == literal(f"The retriever failed: RuntimeError: {MESSAGE}")
    (trace,) = [block.value for block in at.code if block.language != "bash"]  # not the command
    assert trace.startswith("Traceback (most recent call last):\n")
    assert trace.endswith(f"RuntimeError: {ESCAPED}")
    assert not any(is_hidden(char) for char in trace.replace("\n", ""))

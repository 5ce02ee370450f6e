"""The Run page offers the catalogue's presets and the mteb backend, and runs them on the demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest import add_folder, dataframe_with, error_messages, fresh, goto
from streamlit.testing.v1 import AppTest

from mmbright_core.cli import main
from mmbright_core.io.official import read_outputs

DOMAIN = "gis"
"""One demo domain: the runs here are checked against the same run made by the CLI."""


def _page(task: int) -> AppTest:
    at = fresh()  # the demo
    at.selectbox(key="task").set_value(task).run()
    return goto(at, "run")


def _presets(at: AppTest) -> AppTest:
    return at.radio(key="run_kind").set_value("Model preset").run()


def _start(at: AppTest, out: Path) -> str:
    at.multiselect(key="run_domains").set_value([DOMAIN]).run()
    at.text_input(key="run_out").input(str(out)).run()
    at.button(key="run_start").click().run()
    assert not at.exception and not error_messages(at), error_messages(at)
    return " ".join(s.value for s in at.success)


def _cli(out: Path, task: int, *choice: str) -> Path:
    argv = ["run", "--source", "demo", "--domain", DOMAIN, "--task", str(task), *choice]
    assert main([*argv, "--out", str(out)]) == 0
    return next(out.glob("run_*"))


def _config(task_dir: Path) -> dict:
    return json.loads((task_dir / "config.json").read_text())["config"]


def test_the_presets_of_the_task_are_offered_with_their_published_number():
    at = _presets(_page(1))
    offered = at.selectbox(key="run_preset").options
    assert "bm25 · BM25 (published task 1: 8.5)" in offered
    assert "diver-retriever · DiVeR (published task 1: 32.2)" in offered
    assert not any(o.startswith(("openai", "clip ")) for o in offered)  # api; another task
    at.selectbox(key="run_preset").set_value("bge").run()
    assert at.selectbox(key="run_instructions").options == ["official", "bright", "mteb", "none"]
    assert at.selectbox(key="run_instructions").value == "official"


def test_a_preset_says_what_running_it_takes_before_it_runs():
    at = _presets(_page(2))
    at.selectbox(key="run_preset").set_value("gme-qwen2-vl-7b").run()
    said = " ".join(w.value for w in at.warning)
    assert "Downloads Alibaba-NLP/gme-Qwen2-VL-7B-Instruct from the Hugging Face hub" in said
    assert "Runs the model's own code from the hub (trust_remote_code)" in said
    assert "A GPU-sized model (7.7 B parameters)" in said
    at.selectbox(key="run_preset").set_value("clip").run()
    said = " ".join(w.value for w in at.warning)
    assert "Downloads" in said and "trust_remote_code" not in said and "GPU-sized" not in said


def test_the_mteb_backend_is_offered_with_a_model_field():
    at = _page(2)
    assert {"mteb", "hf"} <= set(at.selectbox(key="run_retriever").options)
    assert "api" not in at.selectbox(key="run_retriever").options  # the server's key
    assert "hub-code" not in at.selectbox(key="run_retriever").options  # its presets, opted in
    at.selectbox(key="run_retriever").set_value("mteb").run()
    assert "run_model" in {t.key for t in at.text_input}


def test_the_bm25_preset_runs_on_the_demo_and_records_the_preset(tmp_path: Path):
    at = _presets(_page(1))
    at.selectbox(key="run_preset").set_value("bm25").run()
    said = _start(at, tmp_path / "page")
    assert "Added run 'bm25': 1 domain(s), 1 run now" in said
    (task_dir,) = (tmp_path / "page").iterdir()
    config = _config(task_dir)
    assert (config["retriever"], config["preset"], config["instructions"]) == (
        "bm25",
        "bm25",
        "official",
    )
    plain = _cli(tmp_path / "cli", 1, "--retriever", "bm25")
    assert read_outputs(task_dir).runs == read_outputs(plain).runs


def test_mtebs_random_encoder_runs_on_the_demo_through_the_page(tmp_path: Path):
    pytest.importorskip("mteb")
    random = "mteb/baseline-random-encoder"
    at = _page(2)
    at.selectbox(key="run_retriever").set_value("mteb").run()
    at.text_input(key="run_model").input(random).run()
    said = _start(at, tmp_path / "page")
    assert "1 domain(s), 1 run now" in said
    (task_dir,) = (tmp_path / "page").iterdir()
    config = _config(task_dir)
    assert (config["retriever"], config["model"], config["fusion"]) == ("mteb", random, "joint")
    # The CLI's run of the same model is checked against MTEB's encoder called directly
    # (test_cli_run_mteb.py); the page's must be the same run.
    cli = _cli(tmp_path / "cli", 2, "--retriever", "mteb", "--model", random)
    assert read_outputs(task_dir).runs == read_outputs(cli).runs


def _published(at: AppTest):
    return dataframe_with(at, "model", "reported", "run", "ours")


def test_home_shows_a_preset_run_beside_its_published_row(tmp_path: Path):
    preset = _cli(tmp_path / "preset", 1, "--model-preset", "bm25")
    plain = _cli(tmp_path / "plain", 1, "--retriever", "bm25")  # the same scores, no preset
    at = fresh()
    at.selectbox(key="task").set_value(1).run()
    for folder in (preset, plain):
        add_folder(at, folder)
    assert not at.exception and not error_messages(at), error_messages(at)
    assert set(at.multiselect(key="selected_runs_1").value) == {"bm25", "bm25 (2)"}
    table = _published(at)
    summary = json.loads((preset / "summary.json").read_text())["domains"]
    ours = round(100 * sum(d["NDCG@10"] for d in summary.values()) / len(summary), 1)
    rows = table[table["model"] == "BM25"]
    assert rows[["run", "ours", "reported"]].values.tolist() == [["bm25", ours, 8.5]]
    assert rows["difference"].item() == pytest.approx(ours - 8.5)
    assert rows["status"].item() == "differs"  # the demo is not the benchmark
    others = table[table["model"] != "BM25"]
    assert len(others) and others["run"].isna().all()  # published rows no run reproduces


def test_a_hub_code_preset_runs_only_once_its_box_is_ticked(tmp_path: Path):
    at = _presets(_page(2))
    at.selectbox(key="run_preset").set_value("jina-clip").run()
    box = at.checkbox(key="run_trust_remote_code")
    assert box.value is False and not box.disabled and "trust_remote_code" in box.help
    at.multiselect(key="run_domains").set_value([DOMAIN]).run()
    at.text_input(key="run_out").input(str(tmp_path)).run()
    at.button(key="run_start").click().run()
    assert "--trust-remote-code (the Run page: its checkbox)" in " ".join(error_messages(at))
    at.checkbox(key="run_trust_remote_code").check().run()
    at.button(key="run_start").click().run()
    # Past the opt-in the model itself is asked for: offline, the hub id is not cached.
    said = " ".join(error_messages(at))
    assert not at.exception and "cannot load" in said and "--trust-remote-code" not in said


def test_the_operator_greys_the_box_out(monkeypatch):
    monkeypatch.setenv("MMBRIGHT_ALLOW_REMOTE_CODE", "0")
    at = _presets(_page(2))
    at.selectbox(key="run_preset").set_value("gme-qwen2-vl-2b").run()
    box = at.checkbox(key="run_trust_remote_code")
    assert box.disabled and "MMBRIGHT_ALLOW_REMOTE_CODE=0" in box.help
    at.selectbox(key="run_preset").set_value("clip").run()
    assert not [c for c in at.checkbox if c.key == "run_trust_remote_code"]

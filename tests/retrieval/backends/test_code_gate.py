"""Every route that loads a model passes one gate: hub code runs only with the opt-in, never
where the operator set ``MMBRIGHT_ALLOW_REMOTE_CODE=0``.

Each test plants a model in a temporary Hugging Face hub cache (the hub's layout) whose
``config.json`` maps transformers' auto classes to modules of the repository; importing one
writes a marker file. Each route must refuse in one line and leave no marker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planted_hub import plant

from mmbright_core.cli import main
from mmbright_core.errors import InputError

PLANTED = "planted/model"
NOMIC = "nomic-ai/nomic-embed-text-v1"  # the nomic preset's model in MTEB's registry
JINA_RERANKER = "jinaai/jina-reranker-v3"  # an MTEB cross-encoder whose loader trusts hub code
RUN = ["run", "--source", "demo", "--domain", "gis", "--device", "cpu"]
FORBIDDEN = "forbidden on this installation"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hub cache holding the planted models; returns the marker their code would write."""
    constants = pytest.importorskip("huggingface_hub.constants")
    cache, marker = tmp_path / "hub", tmp_path / "marker"
    plant(cache, PLANTED, marker)
    mteb = pytest.importorskip("mteb")
    for name in (NOMIC, JINA_RERANKER):
        plant(cache, name, marker, mteb.get_model_meta(name).revision)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MMBRIGHT_ALLOW_REMOTE_CODE", "0")
    return marker


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], marker: Path) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert not marker.exists(), "the planted model's code ran"
    return err


@pytest.mark.parametrize("flag", [[], ["--trust-remote-code"]])
def test_a_preset_through_mtebs_loader_is_refused_where_the_operator_forbids_hub_code(
    hub, flag, capsys, tmp_path
):
    args = [*RUN, "--task", "1", "--model-preset", "nomic", "--instructions", "mteb", *flag]
    err = _refused([*args, "--out", str(tmp_path / "out")], capsys, hub)
    assert FORBIDDEN in err and "MMBRIGHT_ALLOW_REMOTE_CODE=0" in err
    assert not (tmp_path / "out").exists()


def test_a_preset_through_mtebs_loader_needs_the_opt_in(hub, monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("MMBRIGHT_ALLOW_REMOTE_CODE")
    args = [*RUN, "--task", "1", "--model-preset", "nomic", "--instructions", "mteb"]
    err = _refused([*args, "--out", str(tmp_path)], capsys, hub)
    assert "without --trust-remote-code" in err


def test_the_mteb_backend_is_refused_for_a_model_whose_loader_runs_hub_code(hub, capsys, tmp_path):
    args = [*RUN, "--task", "1", "--retriever", "mteb", "--model", NOMIC]
    err = _refused([*args, "--out", str(tmp_path)], capsys, hub)
    assert FORBIDDEN in err and "passes trust_remote_code=True" in err


@pytest.mark.parametrize("backend", ["dense", "hf"])
def test_sentence_transformers_and_transformers_refuse_a_model_whose_files_name_its_code(
    hub, backend, monkeypatch, capsys, tmp_path
):
    args = [*RUN, "--task", "1", "--retriever", backend, "--model", PLANTED]
    err = _refused([*args, "--out", str(tmp_path)], capsys, hub)
    assert FORBIDDEN in err and "config.json names code of its own" in err
    monkeypatch.delenv("MMBRIGHT_ALLOW_REMOTE_CODE")  # allowed, but not asked for
    err = _refused([*args, "--out", str(tmp_path)], capsys, hub)
    assert "without --trust-remote-code" in err


def test_open_clips_hub_and_folder_models_are_refused_when_their_text_tower_has_code(
    hub, capsys, tmp_path
):
    from mmbright_core.retrieval import get_retriever

    tower = {"hf_model_name": PLANTED, "hf_tokenizer_name": PLANTED, "context_length": 16}
    config = {"model_cfg": {"embed_dim": 8, "vision_cfg": {}, "text_cfg": tower}}
    folder = tmp_path / "clip"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match=FORBIDDEN) as refused:
        get_retriever("clip", model=f"hf-hub:{PLANTED}", pretrained="none")
    assert "\n" not in str(refused.value)
    args = [*RUN, "--task", "2", "--retriever", "clip", "--model", f"local-dir:{folder}"]
    err = _refused([*args, "--out", str(tmp_path / "out")], capsys, hub)
    assert FORBIDDEN in err and f"the text tower {PLANTED!r}" in err


@pytest.mark.parametrize("reranker", [f"cross-encoder:{PLANTED}", f"mteb:{JINA_RERANKER}"])
def test_rerankers_are_refused_before_the_run_is_read(hub, reranker, capsys, tmp_path):
    args = ["rerank", str(tmp_path / "no-run"), "--source", "demo", "--task", "1"]
    err = _refused([*args, "--reranker", reranker, "--out", str(tmp_path)], capsys, hub)
    assert FORBIDDEN in err


def test_the_run_pages_preset_with_mteb_instructions_is_refused(hub, tmp_path):
    from apptest import error_messages, fresh, goto

    at = fresh()  # the demo
    at.selectbox(key="task").set_value(1).run()
    at = goto(at, "run")
    at.radio(key="run_kind").set_value("Model preset").run()
    at.selectbox(key="run_preset").set_value("nomic").run()
    at.selectbox(key="run_instructions").set_value("mteb").run()
    box = at.checkbox(key="run_trust_remote_code")
    assert box.disabled and box.value is False
    at.multiselect(key="run_domains").set_value(["gis"]).run()
    at.text_input(key="run_out").input(str(tmp_path / "out")).run()
    at.button(key="run_start").click().run()
    (said,) = error_messages(at)
    assert not at.exception and FORBIDDEN in said and "\n" not in said
    assert not hub.exists(), "the planted model's code ran"

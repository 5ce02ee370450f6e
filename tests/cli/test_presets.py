"""``mmbright run --model-preset``: presets run on the demo as their backend runs, recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmbright_core.cli import main
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval.backends.sentence_models import default_text_model

DEMO = ("--source", "demo", "--domain", "gis")


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())["config"]


def test_bm25_preset_runs_as_the_bm25_retriever_and_records_the_preset(tmp_path: Path):
    assert (
        main(["run", *DEMO, "--task", "1", "--model-preset", "bm25", "--out", str(tmp_path / "p")])
        == 0
    )
    assert (
        main(["run", *DEMO, "--task", "1", "--retriever", "bm25", "--out", str(tmp_path / "r")])
        == 0
    )
    preset, plain = tmp_path / "p" / "run_t2t_bm25", tmp_path / "r" / "run_t2t_bm25"
    assert read_outputs(preset).runs == read_outputs(plain).runs
    assert (_config(preset)["preset"], _config(preset)["instructions"]) == ("bm25", "official")
    assert _config(plain)["preset"] is None


def test_dense_preset_fills_brights_domain_instruction(tmp_path: Path):
    minilm = str(default_text_model())
    common = [*DEMO, "--task", "1", "--model", minilm]
    assert (
        main(
            [
                "run",
                *common,
                "--model-preset",
                "bge",
                "--instructions",
                "bright",
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    prefix = "query_prefix=Represent this gis post for searching relevant passages: "
    assert (
        main(
            [
                "run",
                *common,
                "--retriever",
                "dense",
                "--option",
                prefix,
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    (folder,), (other,) = (tmp_path / "p").iterdir(), (tmp_path / "r").iterdir()
    # The same ranking; the preset writes the plain cosine as the official code does for bge.
    preset, dense = read_outputs(folder).runs, read_outputs(other).runs
    assert {d: {q: list(s) for q, s in r.items()} for d, r in preset.items()} == {
        d: {q: list(s) for q, s in r.items()} for d, r in dense.items()
    }
    for domain, run in preset.items():
        for query, scores in run.items():
            assert {doc: 100 * s for doc, s in scores.items()} == pytest.approx(
                dense[domain][query], abs=1e-4
            )
    config = _config(folder)
    assert config["options"]["query_prefix"] == (
        "Represent this {domain} post for searching relevant passages: "
    )
    assert (config["preset"], config["instructions"]) == ("bge", "bright")


def test_instructions_for_a_dense_model_without_a_preset(tmp_path: Path, capsys):
    args = [*DEMO, "--task", "1", "--retriever", "dense", "--out", str(tmp_path)]
    assert main(["run", *args, "--instructions", "bright"]) == 2
    assert "the catalogue has no 'bright' instructions for this model" in capsys.readouterr().err
    assert main(["run", *args, "--instructions", "none"]) == 0
    assert _config(tmp_path / "run_t2t_all-MiniLM-L6-v2")["instructions"] == "none"


def test_clip_preset_runs_transformers_clip_as_the_official_retrieval_clip(
    tmp_path: Path, tiny_hf: dict[str, Path]
):
    # The official retrieval_clip's own path: CLIPModel + CLIPProcessor, on the hf backend.
    common = [*DEMO, "--task", "2", "--model", str(tiny_hf["clip"]), "--device", "cpu"]
    assert main(["run", *common, "--model-preset", "clip", "--out", str(tmp_path / "p")]) == 0
    assert main(["run", *common, "--retriever", "hf", "--out", str(tmp_path / "r")]) == 0
    (preset_run,) = [p for p in (tmp_path / "p").iterdir() if p.is_dir()]
    (plain_run,) = [p for p in (tmp_path / "r").iterdir() if p.is_dir()]
    assert read_outputs(preset_run).runs == read_outputs(plain_run).runs
    config = _config(preset_run)
    assert (config["preset"], config["retriever"], config["image_policy"], config["fusion"]) == (
        "clip",
        "hf",
        "first",
        "raw-mean",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--model-preset", "bm25", "--retriever", "bm25"],
            "give one of --retriever and --model-preset",
        ),
        ([], "give one of --retriever and --model-preset"),
        (["--model-preset", "contriever"], "cannot load the transformers model"),
        (["--model-preset", "qwen2"], "(trust_remote_code); found --model-preset qwen2 without"),
    ],
)
def test_preset_errors_are_one_line(tmp_path: Path, capsys, args, message):
    assert main(["run", *DEMO, "--task", "1", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1

"""``mmbright run`` end to end on the fixture dataset and the embedded demo."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mmbright_core.cli import main
from mmbright_core.cli.run import parse_options, register, retriever_options
from mmbright_core.errors import InputError
from mmbright_core.io.official import read_outputs


def run_cli(*args: str) -> int:
    return main(["run", *args])


def test_bm25_task1_writes_outputs_and_prints_scores(fixture_dir: Path, tmp_path: Path, capsys):
    rc = run_cli(
        "--source",
        str(fixture_dir),
        "--task",
        "1",
        "--retriever",
        "bm25",
        "--k",
        "4",
        "--out",
        str(tmp_path),
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "academia\tnDCG@10" in out and "Avg.\tnDCG@10" in out
    outputs = read_outputs(tmp_path / "run_bm25")
    assert set(outputs.runs) == {"academia", "biology"}
    assert all(len(docs) <= 4 for run in outputs.runs.values() for docs in run.values())
    rc = run_cli(
        "--source",
        str(fixture_dir),
        "--task",
        "1",
        "--retriever",
        "bm25",
        "--k",
        "4",
        "--out",
        str(tmp_path),
    )
    assert rc == 0 and capsys.readouterr().out.count("(reused)") == 2


def test_negatives_keep_is_recorded_and_not_reused_by_an_exclude_run(
    fixture_dir: Path, tmp_path: Path, capsys
):
    argv = ["--source", str(fixture_dir), "--task", "1", "--retriever", "bm25"]
    assert run_cli(*argv, "--negatives", "keep", "--out", str(tmp_path)) == 0
    capsys.readouterr()
    config = json.loads((tmp_path / "run_bm25" / "config.json").read_text())
    assert config["config"]["negatives"] == "keep"
    domain = json.loads((tmp_path / "run_bm25" / "academia" / "config.json").read_text())
    assert domain["config"]["negatives"] == "keep"
    assert run_cli(*argv, "--out", str(tmp_path)) == 0
    assert "(reused)" not in capsys.readouterr().out
    config = json.loads((tmp_path / "run_bm25" / "config.json").read_text())
    assert config["config"]["negatives"] == "exclude"
    assert run_cli(*argv, "--out", str(tmp_path)) == 0
    assert capsys.readouterr().out.count("(reused)") == 2


def test_domain_selection_and_backend_options(fixture_dir: Path, tmp_path: Path):
    rc = run_cli(
        "--source",
        str(fixture_dir),
        "--task",
        "4",
        "--retriever",
        "bm25",
        "--domain",
        "biology",
        "--option",
        "k1=1.2",
        "--option",
        "scoring=lucene",
        "--protocol",
        "legacy",
        "--out",
        str(tmp_path),
    )
    assert rc == 0
    config = json.loads((tmp_path / "it2it_bm25" / "config.json").read_text())
    assert config["domains"] == ["biology"]
    assert config["config"]["options"]["k1"] == 1.2
    assert config["config"]["options"]["scoring"] == "lucene"
    assert config["config"]["protocol"] == "legacy"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--retriever", "bm52"], "did you mean 'bm25'"),
        (["--retriever", "bm25", "--pretrained", "openai"], "does not take option"),
        (["--retriever", "bm25", "--task", "3"], "cannot run task 3"),
        (["--retriever", "bm25", "--domain", "physic"], "physic"),
    ],
)
def test_errors_are_one_line_with_exit_status_2(fixture_dir, tmp_path, capsys, args, message):
    base = ["--source", str(fixture_dir), "--out", str(tmp_path)]
    if "--task" not in args:
        base += ["--task", "1"]
    assert run_cli(*base, *args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_parse_options_reads_json_values():
    assert parse_options(["k1=1.2", "lowercase=false", "query-prefix=search_query: "]) == {
        "k1": 1.2,
        "lowercase": False,
        "query_prefix": "search_query: ",
    }
    with pytest.raises(InputError, match="NAME=VALUE"):
        parse_options(["k1"])


@pytest.mark.slow
@pytest.mark.parametrize("task", [1, 2, 3, 4])
def test_clip_random_weights_every_task(fixture_dir: Path, tmp_path: Path, task: int):
    open_clip = pytest.importorskip("open_clip")
    config = {
        "embed_dim": 16,
        "vision_cfg": {
            "image_size": 32,
            "layers": 1,
            "width": 16,
            "head_width": 8,
            "patch_size": 16,
        },
        "text_cfg": {
            "context_length": 77,
            "vocab_size": 49408,
            "width": 16,
            "heads": 2,
            "layers": 1,
        },
    }
    path = tmp_path / "mmbright-cli-tiny.json"
    path.write_text(json.dumps(config))
    open_clip.add_model_config(path)
    rc = run_cli(
        "--source",
        str(fixture_dir),
        "--task",
        str(task),
        "--retriever",
        "clip",
        "--model",
        "mmbright-cli-tiny",
        "--pretrained",
        "none",
        "--image-policy",
        "all",
        "--k",
        "5",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "o"),
    )
    assert rc == 0
    (subdir,) = (tmp_path / "o").iterdir()
    assert subdir.name.endswith("mmbright-cli-tiny-random")
    stored = json.loads((subdir / "config.json").read_text())["config"]
    assert stored["image_policy"] == "all" and stored["no_image"] == "white"
    assert all(len(d) <= 5 for run in read_outputs(subdir).runs.values() for d in run.values())


@pytest.mark.slow
@pytest.mark.models
def test_ocr_bm25_task2(fixture_dir: Path, tmp_path: Path):
    pytest.importorskip("rapidocr_onnxruntime")
    rc = run_cli(
        "--source",
        str(fixture_dir),
        "--task",
        "2",
        "--retriever",
        "ocr-bm25",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "o"),
    )
    assert rc == 0 and (tmp_path / "o" / "run_ocr-bm25" / "summary.json").is_file()


@pytest.mark.parametrize(("name", "task"), [("bm25", 1), ("bm25", 2), ("bm25", 4), ("random", 3)])
def test_demo_source(tmp_path: Path, name: str, task: int):
    rc = run_cli(
        "--source",
        "demo",
        "--task",
        str(task),
        "--retriever",
        name,
        "--k",
        "100",
        "--out",
        str(tmp_path),
    )
    assert rc == 0
    (subdir,) = tmp_path.iterdir()
    outputs = read_outputs(subdir)
    assert outputs.runs and all(
        len(docs) <= 100 for run in outputs.runs.values() for docs in run.values()
    )


def test_an_option_is_not_erased_by_an_unset_flag():
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    common = ["run", "--source", "demo", "--task", "1", "--retriever", "dense", "--out", "o"]
    args = parser.parse_args([*common, "--option", "model=/models/mine", "--option", "seed=3"])
    assert retriever_options(args) == {"model": "/models/mine", "seed": 3}
    # A flag that is set wins over nothing and is kept beside the options.
    args = parser.parse_args([*common, "--model", "m2", "--device", "cpu"])
    assert retriever_options(args) == {"model": "m2", "device": "cpu"}

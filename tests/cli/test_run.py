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
    argv = ["--source", str(fixture_dir), "--task", "1", "--retriever", "bm25", "--k", "4"]
    rc = run_cli(*argv, "--out", str(tmp_path))
    out = capsys.readouterr().out
    assert rc == 0
    assert "academia\tnDCG@10" in out and "Avg.\tnDCG@10" in out
    outputs = read_outputs(tmp_path / "run_t2t_bm25")
    assert set(outputs.runs) == {"academia", "biology"}
    assert all(len(docs) <= 4 for run in outputs.runs.values() for docs in run.values())
    rc = run_cli(*argv, "--out", str(tmp_path))
    assert rc == 0 and capsys.readouterr().out.count("(reused)") == 2
    # One domain again: the other stays in the summary, and the printed average is its.
    assert run_cli(*argv, "--domain", "biology", "--out", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "biology\tnDCG@10" in out and "(reused)" in out and "(kept)" in out.split("academia")[1]
    summary = json.loads((tmp_path / "run_t2t_bm25" / "summary.json").read_text())
    assert set(summary["domains"]) == {"academia", "biology"}
    assert f"Avg.\tnDCG@10 {100 * summary['aggregated']['NDCG@10']:.1f}" in out


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_negatives_keep_is_recorded_and_an_exclude_run_is_refused_beside_it(
    fixture_dir: Path, tmp_path: Path, capsys
):
    argv = ["--source", str(fixture_dir), "--task", "1", "--retriever", "bm25"]
    assert run_cli(*argv, "--negatives", "keep", "--out", str(tmp_path)) == 0
    capsys.readouterr()
    task_dir = tmp_path / "run_t2t_bm25"
    config = json.loads((task_dir / "config.json").read_text())
    assert config["config"]["negatives"] == "keep"
    domain = json.loads((task_dir / "academia" / "config.json").read_text())
    assert domain["config"]["negatives"] == "keep"
    written = _files(task_dir)
    assert run_cli(*argv, "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(task_dir) in err
    assert "negatives (recorded 'keep', now 'exclude')" in err
    assert "Nothing was written" in err and "--out" in err and "delete the folder" in err
    assert _files(task_dir) == written  # byte for byte
    assert run_cli(*argv, "--negatives", "keep", "--out", str(tmp_path)) == 0
    assert capsys.readouterr().out.count("(reused)") == 2


def _wrote(printed: str) -> Path:
    return Path(printed.rpartition("wrote ")[2].strip())


def test_task1_then_task2_into_one_folder_leaves_both_loadable(
    fixture_dir: Path, tmp_path: Path, capsys
):
    # Officially both tasks write run_bm25; the second replaced the first's scores.
    argv = ["--source", str(fixture_dir), "--retriever", "bm25", "--out", str(tmp_path)]
    assert run_cli(*argv, "--task", "1") == 0
    one = _wrote(capsys.readouterr().out)
    written = _files(one)
    assert run_cli(*argv, "--task", "2") == 0
    two = _wrote(capsys.readouterr().out)
    assert (one.name, two.name) == ("run_t2t_bm25", "run_it2t_bm25")
    assert _files(one) == written
    for task, task_dir in ((1, one), (2, two)):
        eval_args = ["eval", "--source", str(fixture_dir), "--task", str(task)]
        assert main([*eval_args, "--run", str(task_dir), "--format", "json"]) == 0
        macro = json.loads(capsys.readouterr().out)["macro"]["nDCG@10"]
        summary = json.loads((task_dir / "summary.json").read_text())
        assert round(macro, 5) == summary["aggregated"]["NDCG@10"]
        assert json.loads((task_dir / "config.json").read_text())["config"]["task"] == task


def test_a_rerun_with_other_options_killed_half_way_cannot_mix_a_folder(
    fixture_dir: Path, tmp_path: Path, capsys
):
    # Once: a full run, then a rerun with other options stopped after its first domain left
    # domains of two configurations, and eval printed a figure summary.json did not.
    argv = ["--source", str(fixture_dir), "--task", "1", "--retriever", "bm25"]
    assert run_cli(*argv, "--out", str(tmp_path)) == 0
    task_dir = tmp_path / "run_t2t_bm25"
    written = _files(task_dir)
    capsys.readouterr()
    assert run_cli(*argv, "--option", "k1=1.5", "--out", str(tmp_path)) == 2
    assert "options.k1 (recorded 0.9, now 1.5)" in capsys.readouterr().err
    assert _files(task_dir) == written
    # A folder mixed by hand (or by an older version) is refused by eval, not averaged.
    stored = json.loads((task_dir / "biology" / "config.json").read_text())
    stored["config"]["options"]["k1"] = 1.5
    (task_dir / "biology" / "config.json").write_text(json.dumps(stored))
    eval_args = ["eval", "--source", str(fixture_dir), "--task", "1", "--run", str(task_dir)]
    assert main(eval_args) == 2
    err = capsys.readouterr().err
    assert "mixes configurations" in err and "options.k1" in err and "biology" in err
    (task_dir / "biology" / "config.json").unlink()
    assert main(eval_args) == 2
    assert "biology has no config.json" in capsys.readouterr().err


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
    assert rc == 0 and (tmp_path / "o" / "run_it2t_ocr-bm25" / "summary.json").is_file()


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

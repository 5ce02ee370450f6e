"""``mmbright pipeline run``: the command line of a pipeline file, its claim and its failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.cli import main
from mmbright_core.cli.pipeline import PIPELINE_COMMAND
from mmbright_core.io.claims import Claimant, claimed

FILE = """
[pipeline]
source = "demo"
task = 2
domain = ["gis"]
{out}

[stages.bm25]
command = "run"
retriever = "bm25"
k = 20

[stages.top]
command = "rerank"
run = "bm25"
reranker = "{reranker}"
depth = 5
"""
RANDOM = "mteb:mteb/baseline-random-cross-encoder"


def write(tmp_path: Path, out: str = "", reranker: str = RANDOM) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(FILE.format(out=out, reranker=reranker), encoding="utf-8")
    return path


def test_help_lists_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert PIPELINE_COMMAND.help in " ".join(capsys.readouterr().out.split())


def test_the_file_names_its_output_folder_and_each_stage_prints_its_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write(tmp_path, out='out = "outputs/p"')
    assert main(["pipeline", "run", str(file)]) == 0
    said = capsys.readouterr().out
    assert "stage bm25: mmbright run --source demo --task 2 --domain gis --retriever bm25" in said
    assert (
        f"stage top: mmbright rerank bm25 --source demo --task 2 --domain gis --reranker {RANDOM}"
        in said
    )
    assert said.endswith(f"wrote {tmp_path / 'outputs' / 'p'}\n")
    assert (tmp_path / "outputs" / "p" / "top.stage.json").is_file()


def test_no_output_folder_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pipeline", "run", str(write(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"mmbright pipeline: error: {tmp_path / 'p.toml'}: no output folder. Set out = 'FOLDER' "
        "in [pipeline], or pass --out\n"
    )


def test_a_folder_another_pipeline_writes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with claimed(out, Claimant(job="mmbright pipeline run other.toml")):
        assert main(["pipeline", "run", str(write(tmp_path)), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is being written by another job" in err and "other.toml" in err
    assert not (out / "bm25").exists()


def test_a_failing_stage_stops_the_pipeline_and_the_stages_before_it_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    file = write(tmp_path, reranker="nosuch.module:make")
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # --out relative to the working folder, which stays it
    assert main(["pipeline", "run", str(file), "--out", "out"]) == 2
    assert Path.cwd() == tmp_path
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("mmbright rerank: error: ")  # the stage's own message first
    assert err[-1] == (
        "mmbright pipeline: error: stage 'top' stopped (exit status 2); the stages before it "
        "are kept, and running the pipeline again reuses them"
    )
    assert (out / "bm25.stage.json").is_file() and not (out / "top.stage.json").exists()
    file.write_text(file.read_text(encoding="utf-8").replace("nosuch.module:make", RANDOM))
    assert main(["pipeline", "run", str(file), "--out", "out"]) == 0
    assert "stage bm25: reused" in capsys.readouterr().out

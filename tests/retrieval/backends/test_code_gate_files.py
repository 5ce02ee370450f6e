"""A model whose files the remote-code gate cannot read whole loads nothing, on every route,
and no route reads an answer from standard input.

Each test plants a model (a local folder, or for MTEB's registry names a hub-cache snapshot)
whose ``config.json`` maps transformers' auto classes to modules of its own, each writing a
marker file when imported, and pads that config past the 4 MiB the gate reads whole. The
command runs as a real subprocess fed "y" lines on standard input, as ``yes y | mmbright ...``
would answer transformers' "Do you wish to run the custom code? [y/N]"; with
``MMBRIGHT_ALLOW_REMOTE_CODE=0`` it must exit 2 with one line and leave no marker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from planted_hub import PADDING, plant, plant_folder

from mmbright_core.cli import main
from mmbright_core.io.official import read_outputs

ROOT = Path(__file__).resolve().parents[3]
SUPPORT = ROOT / "tests" / "support"
RUN = ["run", "--source", "demo", "--domain", "gis", "--device", "cpu", "--task", "1"]
MTEB_ST = "sentence-transformers/all-MiniLM-L6-v2"  # its MTEB loader passes no trust_remote_code
MTEB_CROSS = "cross-encoder/ms-marco-MiniLM-L6-v2"  # the same, a cross-encoder
UNCHECKED = "cannot check this file of the model for code of its own"


def _answering_yes(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``mmbright argv`` with "y" lines on standard input, the switch off, offline."""
    path = os.pathsep.join([str(SUPPORT), str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "MMBRIGHT_CACHE": str(tmp_path / "cache")}
    env |= {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    env |= {"MMBRIGHT_ALLOW_REMOTE_CODE": "0"}
    return subprocess.run(
        [sys.executable, "-m", "mmbright_core", *argv],
        input="y\n" * 1000,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _refused(argv: list[str], tmp_path: Path, marker: Path) -> str:
    done = _answering_yes(argv, tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("mmbright "), done.stderr
    assert not marker.exists(), "the planted model's code ran"
    return done.stderr


def _routes(folder: Path, out: Path) -> dict[str, list[str]]:
    rerank = ["rerank", str(out / "no-run"), "--source", "demo", "--task", "1", "--out", str(out)]
    return {
        "hf": [*RUN, "--retriever", "hf", "--model", str(folder), "--out", str(out)],
        "dense": [*RUN, "--retriever", "dense", "--model", str(folder), "--out", str(out)],
        "mteb": [*RUN, "--retriever", "mteb", "--model", MTEB_ST, "--out", str(out)],
        "preset": [*RUN, "--model-preset", "contriever", "--model", str(folder), "--out", str(out)],
        "cross-encoder": [*rerank, "--reranker", f"cross-encoder:{folder}"],
        "mteb-reranker": [*rerank, "--reranker", f"mteb:{MTEB_CROSS}"],
    }


@pytest.mark.slow
@pytest.mark.parametrize("route", sorted(_routes(Path(), Path())))
def test_a_padded_config_is_refused_on_every_route_whatever_stdin_answers(route, tmp_path):
    marker, folder = tmp_path / "marker", tmp_path / "model"
    plant_folder(folder, marker, PADDING)
    if route.startswith("mteb"):
        mteb = pytest.importorskip("mteb")
        for name in (MTEB_ST, MTEB_CROSS):
            plant(tmp_path / "hub", name, marker, mteb.get_model_meta(name).revision, PADDING)
    err = _refused(_routes(folder, tmp_path / "out")[route], tmp_path, marker)
    assert UNCHECKED in err and "config.json" in err
    assert "found 5.0 MiB, more than the 4 MiB a model's configuration file may be" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "{not json",
            "tokenizer_config.json:1: invalid JSON at column 2; expected valid JSON; found "
            "Expecting property name enclosed in double quotes. ",
        ),
        (
            '["a list"]',
            "tokenizer_config.json: wrong JSON shape at $; expected an object; found an array. ",
        ),
        (
            b"\xff\xfe{}",
            f"tokenizer_config.json: {UNCHECKED}, so the model is not loaded; found a byte that "
            "is not UTF-8 at offset 0. ",
        ),
    ],
)
def test_a_config_the_gate_cannot_read_is_refused_not_taken_as_clean(text, found, tmp_path):
    from mmbright_core.errors import InputError
    from mmbright_core.retrieval.backends.code_gate import gate

    folder = tmp_path / "model"  # a config naming no code, beside a tokenizer config
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (folder / "tokenizer_config.json").write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(InputError, match="checked for code of the model's own") as refused:
        gate(str(folder), None, False)
    assert found in str(refused.value)
    # A file no loader reads code from (a tokenizer's vocabulary) may be anything.
    (folder / "tokenizer_config.json").unlink()
    (folder / "tokenizer.json").write_bytes(b"\xff" * 10)
    assert gate(str(folder), None, False) == {}


def test_transformers_question_is_never_put_to_standard_input(tmp_path):
    # A loader that passes no trust_remote_code (open_clip's towers, some of MTEB's) loads
    # under no_prompt: transformers then refuses instead of reading "y" from stdin.
    pytest.importorskip("transformers")
    marker = tmp_path / "marker"
    folder = plant_folder(tmp_path / "model", marker)
    script = (
        "import sys, transformers\n"
        "from mmbright_core.retrieval.backends.code_gate import no_prompt\n"
        "from mmbright_core.errors import InputError\n"
        "try:\n"
        f"    with no_prompt({str(folder)!r}):\n"
        f"        transformers.AutoConfig.from_pretrained({str(folder)!r})\n"
        "except InputError as err:\n"
        "    sys.exit(str(err))\n"
    )
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", script],
        input="y\n" * 1000,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert done.returncode == 1 and "runs its own code from the hub" in done.stderr
    assert "--trust-remote-code" in done.stderr and "[y/N]" not in done.stdout
    assert not marker.exists(), "the planted model's code ran"


@pytest.mark.slow
def test_an_explain_rebuild_of_a_model_padded_since_is_refused(tiny_hf, tmp_path):
    folder, marker, runs = tmp_path / "model", tmp_path / "marker", tmp_path / "runs"
    shutil.copytree(tiny_hf["bert"], folder)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert (
        main([*RUN, "--retriever", "hf", "--model", str(folder), "--out", str(runs), *cache]) == 0
    )
    (run,) = runs.iterdir()
    query, ranked = next(iter(read_outputs(run).runs["gis"].items()))
    plant_folder(folder, marker, PADDING)  # the folder now names code, past what is read whole
    args = ["explain", "--source", "demo", "--task", "1", "--run", str(run), "--query", query]
    err = _refused([*args, "--doc", next(iter(ranked)), *cache], tmp_path, marker)
    assert "cannot explain this run" in err and UNCHECKED in err

"""The README's Python example runs as written, and says what the command line says."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from locations import ROOT

from mmbright_core.cli import main

DEMO_RUN = ROOT / "mmbright_core" / "data" / "demo" / "runs" / "run_it2t_bm25"


def _python_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's Python section holds a python block"
    return found.group(1)


def test_the_python_example_runs_and_scores_as_eval_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(DEMO_RUN, tmp_path / "outputs" / DEMO_RUN.name)
    monkeypatch.chdir(tmp_path)
    # The example's first lines score a run the reader already holds.
    names: dict[str, Any] = {
        "qrels": {"q1": {"d1": 1, "d2": 0}},
        "run": {"q1": {"d1": 0.5, "d2": 0.9}},
    }
    exec(compile(_python_example(), "README.md", "exec"), names)
    # d1, the one relevant document, is ranked second: nDCG = 1 / log2(3).
    assert names["result"].per_query["nDCG@10"]["q1"] == pytest.approx(1 / math.log2(3))
    args = ["eval", "--source", "demo", "--task", "2", "--run", f"outputs/{DEMO_RUN.name}"]
    assert main([*args, "--format", "json"]) == 0
    said = json.loads(capsys.readouterr().out)
    scores = names["scores"]
    assert scores.macro["nDCG@10"] == said["macro"]["nDCG@10"]
    gis = said["domains"]["gis"]["counts"]["evaluated"]
    assert scores.per_domain["gis"].counts.evaluated == gis

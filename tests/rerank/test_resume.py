"""A rerank job SIGKILLed mid-domain resumes to the same bytes and asks no query twice.

The counting plugin (``tests/support/rerank_plugins.py``) logs each query it is asked; once it has
answered ``HOLD_AFTER`` queries it says so through a FIFO and blocks, so the kill lands at
a known point with no waiting for time: after those answers were cached, inside the first
domain, before any output of it was written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from locations import SUPPORT

from mmbright_core.ui.common.workspace import DEMO_RUNS

HOLD_AFTER = 3
DOMAINS = ("biology", "gis")
SUBDIR = "run_it2t_bm25+counting"
HERE = SUPPORT  # the counting plugin

pytestmark = pytest.mark.slow


def _start(
    out: Path,
    cache: Path,
    log: Path,
    hold: Path | None = None,
    spec: Sequence[str] = ("--reranker", "rerank_plugins:counting"),
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "mmbright_core", "rerank", str(DEMO_RUNS / "run_it2t_bm25")]
    command += ["--source", "demo", "--task", "2", "--domain", *DOMAINS, "--depth", "20"]
    command += [*spec, "--out", str(out), "--cache-dir", str(cache)]
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    given = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path, "RERANK_LOG": str(log)}
    if hold is not None:
        given |= {"RERANK_HOLD": str(hold), "RERANK_HOLD_AFTER": str(HOLD_AFTER)}
    given |= env or {}
    return subprocess.Popen(command, env=given, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen[bytes]) -> None:
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()[-2000:]


def _files(task_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(task_dir)): p.read_bytes()
        for p in sorted(task_dir.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def _asked(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.timeout(600)
def test_a_killed_rerank_resumes_byte_identical_without_asking_again(tmp_path: Path):
    reference = tmp_path / "reference"
    reference.mkdir()  # the plugin's log goes there before the job writes anything
    _finish(_start(reference / "out", reference / "cache", reference / "log"))
    every = _asked(reference / "log")
    assert len(every) == len(set(every)) > HOLD_AFTER + 1

    hold = tmp_path / "hold"
    os.mkfifo(hold)
    os.mkfifo(str(hold) + ".never")
    log, cache = tmp_path / "log", tmp_path / "cache"
    process = _start(tmp_path / "out", cache, log, hold)
    with open(hold) as fifo:  # returns once the plugin, holding, has written its line
        held = fifo.readline().strip()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    before = _asked(log)
    assert len(before) == HOLD_AFTER and held
    assert len(list((cache / "rerank").rglob("*.json"))) == HOLD_AFTER  # each answer kept
    assert not (tmp_path / "out" / SUBDIR / DOMAINS[0] / "scores.json").exists()

    _finish(_start(tmp_path / "out", cache, log))
    after = _asked(log)[HOLD_AFTER:]
    assert not set(before) & set(after)  # nothing cached was asked again
    assert sorted(before + after) == sorted(every)
    assert _files(tmp_path / "out" / SUBDIR) == _files(reference / "out" / SUBDIR)


@pytest.mark.timeout(600)
def test_a_killed_cross_encoder_job_resumes_to_the_same_bytes(
    tmp_path: Path, tiny_cross_encoder: Path
):
    # Batch 2, depth 20: slices of 32 pairs; biology's first three queries end within the
    # first two slices (64 pairs), the fourth straddles the second and third.
    spec = ["--reranker", "rerank_plugins:holding_cross_encoder", "--batch-size", "2"]
    model = {"RERANK_MODEL": str(tiny_cross_encoder)}
    reference = tmp_path / "reference"
    _finish(_start(reference / "out", reference / "cache", reference / "log", spec=spec, env=model))
    (task_dir,) = (reference / "out").iterdir()
    answers = _files(reference / "cache")

    hold = tmp_path / "hold"
    os.mkfifo(hold)
    os.mkfifo(str(hold) + ".never")
    cache = tmp_path / "cache"
    held = {**model, "RERANK_HOLD": str(hold), "RERANK_HOLD_AFTER": "32"}
    process = _start(tmp_path / "out", cache, tmp_path / "log", spec=spec, env=held)
    with open(hold) as fifo:
        assert fifo.readline().strip() == "64 pairs scored"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    kept = _files(cache)
    assert len(kept) == 3 and kept.items() <= answers.items()  # each answer kept, none lost
    assert not (tmp_path / "out" / task_dir.name / DOMAINS[0] / "scores.json").exists()

    _finish(_start(tmp_path / "out", cache, tmp_path / "log", spec=spec, env=model))
    assert _files(cache) == answers
    assert _files(tmp_path / "out" / task_dir.name) == _files(task_dir)

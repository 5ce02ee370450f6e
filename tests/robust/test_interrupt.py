"""``mmbright run`` killed at random points loses nothing and redoes nothing finished.

Each case starts the real command, SIGKILLs it at a random moment (after a random delay, or
a few milliseconds after a chosen output file appears, so that kills land inside the
domain loop and not only during start-up), checks that every output file present is whole,
re-runs the command, and compares the outputs byte for byte with an uninterrupted run. A
domain whose ``config.json`` existed at the kill (it had finished) must be reused as it was.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmbright_core.io.runs import read_run

SUBDIR = "run_t2t_bm25"
DOMAINS = ("academia", "biology")
# Files whose appearance can trigger the kill: mid-domain, between domains, at the end.
TRIGGERS = [
    None,
    "academia/scores.json",
    "academia/metrics.json",
    "academia/config.json",
    "biology/scores.json",
    "biology/config.json",
    "summary.json",
    "run.trec",
]

pytestmark = pytest.mark.slow


def _start(source: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "mmbright_core", "run", "--source", str(source)]
    command += ["--task", "1", "--retriever", "bm25", "--out", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MMBRIGHT_CACHE": str(cache)}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen[bytes]) -> str:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()[-2000:]
    return out.decode()


def _files(task_dir: Path) -> dict[str, bytes]:
    # Temporary files of an interrupted atomic write start with a dot; they are not outputs.
    return {
        str(p.relative_to(task_dir)): p.read_bytes()
        for p in sorted(task_dir.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def _whole(task_dir: Path) -> None:
    """Every output present parses completely: no half-written file is ever visible."""
    for path in task_dir.rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        else:
            read_run(path, format="trec")


def _kill(
    process: subprocess.Popen[bytes], task_dir: Path, trigger: str | None, rng: random.Random
):
    if trigger is None:
        time.sleep(rng.uniform(0.5, 8.0))
    else:
        deadline = time.monotonic() + 120
        while not (task_dir / trigger).exists() and process.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.02))
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def reference(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("uninterrupted")
    _finish(_start(fixture_dir, root / "out", root / "cache"))
    files = _files(root / "out" / SUBDIR)
    assert {f"{d}/scores.json" for d in DOMAINS} | {"run.trec", "summary.json"} <= set(files)
    return files


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", [2, 3, 11, 23, 37])  # delay, between domains, end, mid-domain x2
def test_killed_run_resumes_to_the_same_bytes(
    fixture_dir: Path, tmp_path: Path, reference: dict[str, bytes], seed: int
):
    rng = random.Random(seed)
    trigger = rng.choice(TRIGGERS)
    task_dir = tmp_path / "out" / SUBDIR
    process = _start(fixture_dir, tmp_path / "out", tmp_path / "cache")
    _kill(process, task_dir, trigger, rng)
    _whole(task_dir)
    finished = {
        d: (task_dir / d / "scores.json").stat().st_ino
        for d in DOMAINS
        if (task_dir / d / "config.json").is_file()
    }

    printed = _finish(_start(fixture_dir, tmp_path / "out", tmp_path / "cache"))
    assert _files(task_dir) == reference  # byte for byte, scores.json and run.trec included
    for domain, inode in finished.items():
        assert (task_dir / domain / "scores.json").stat().st_ino == inode, domain
        assert f"{domain}\t" in printed and "(reused)" in printed.split(f"{domain}\t")[1]

"""Ctrl-C during ``mmbright run``: one line, exit status 130, finished domains kept, a resume.

The real command runs in a subprocess with a BM25 plugin that blocks inside the second
domain (``blocking_retriever.py``) and says so through a FIFO, so SIGINT lands while that
domain is in progress, after the first one is written: no timing, no sleep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from blocking_retriever import STOP_ENV
from held_jobs import job_env, wait_for_domain

from mmbright_core.cli import INTERRUPTED, main

DOMAINS = ("academia", "biology")  # the fixture's domains, run in this order


def _command(fixture_dir: Path, out: Path) -> list[str]:
    command = [sys.executable, "-m", "mmbright_core", "run", "--source", str(fixture_dir)]
    command += ["--task", "1", "--retriever", "blocking_retriever:make", "--out", str(out)]
    return [*command, "--domain", *DOMAINS]


@pytest.mark.timeout(300)
def test_ctrl_c_mid_domain_is_one_line_keeps_finished_domains_and_resumes(
    fixture_dir: Path, tmp_path: Path
):
    out, ready = tmp_path / "out", tmp_path / "ready"
    os.mkfifo(ready)
    env = job_env(tmp_path / "cache", **{STOP_ENV: f"{DOMAINS[1]}:{ready}"})
    process = subprocess.Popen(
        _command(fixture_dir, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    wait_for_domain(ready, process, DOMAINS[1])
    # The job's claim (a .lock file) lies beside its folder while it runs.
    (task_dir,) = [p for p in out.iterdir() if p.is_dir()]
    first = {p.name: p.read_bytes() for p in (task_dir / DOMAINS[0]).iterdir()}
    assert {"scores.json", "metrics.json", "config.json"} <= set(first)
    assert not (task_dir / DOMAINS[1] / "config.json").exists()  # in progress

    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == INTERRUPTED == 130
    assert err.decode() == "mmbright run: interrupted; finished domains are kept\n"
    assert {p.name: p.read_bytes() for p in (task_dir / DOMAINS[0]).iterdir()} == first

    rerun = subprocess.run(
        _command(fixture_dir, out),
        env=job_env(tmp_path / "cache"),
        capture_output=True,
        timeout=300,
    )
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    printed = rerun.stdout.decode()
    assert "(reused)" in printed.split(f"{DOMAINS[0]}\t")[1].splitlines()[0]
    assert "(reused)" not in printed.split(f"{DOMAINS[1]}\t")[1].splitlines()[0]
    assert (task_dir / DOMAINS[1] / "config.json").is_file() and (task_dir / "run.trec").is_file()
    assert (task_dir / DOMAINS[0] / "scores.json").read_bytes() == first["scores.json"]


def test_ctrl_c_in_any_command_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("mmbright_core.cli.models.handle", interrupted)
    assert main(["models"]) == INTERRUPTED
    assert capsys.readouterr().err == "mmbright models: interrupted\n"

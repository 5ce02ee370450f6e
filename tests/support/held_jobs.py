"""Jobs of the command line held at a known point, for tests of two jobs at once.

:func:`start_held` starts ``mmbright ...`` with the blocking BM25 plugin
(``blocking_retriever.py``) and returns once the job is inside the chosen domain, where it
waits for :func:`let_go`: no timing, no sleep.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from blocking_retriever import GO_ENV, STOP_ENV
from locations import ROOT, SUPPORT


def job_env(cache: Path, **extra: str) -> dict[str, str]:
    """The environment of a job that can load this plugin, with its own embedding cache."""
    path = os.pathsep.join([str(SUPPORT), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "MMBRIGHT_CACHE": str(cache), **extra}


def wait_for_domain(fifo: Path, process: subprocess.Popen[bytes], domain: str) -> None:
    """Wait until the job says it is inside ``domain``; fail at once if it ends instead."""
    # Opened read-write, the FIFO never blocks the opening nor reads as ended; the job's
    # stderr becomes readable when it fails (or exits) before reaching the domain.
    fd = os.open(fifo, os.O_RDWR)
    try:
        assert process.stderr is not None
        readable, _, _ = select.select([fd, process.stderr], [], [], 120)
        if fd not in readable:
            _, err = process.communicate(timeout=60)
            pytest.fail(f"the job never reached {domain}: {err.decode()[-2000:]}")
        assert os.read(fd, 100) == f"{domain}\n".encode()
    finally:
        os.close(fd)


def start_held(args: list[str], domain: str, folder: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``mmbright ARGS`` held inside ``domain``; return it and the FIFO that lets it go.

    The job's FIFOs and embedding cache go in ``folder``; write a line to the FIFO returned
    (:func:`let_go`) and the job goes on.
    """
    ready, go = folder / "ready", folder / "go"
    for fifo in (ready, go):
        os.mkfifo(fifo)
    env = job_env(folder / "cache", **{STOP_ENV: f"{domain}:{ready}", GO_ENV: str(go)})
    command = [sys.executable, "-m", "mmbright_core", *args]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_domain(ready, process, domain)
    return process, go


def let_go(go: Path) -> None:
    """Let a job of :func:`start_held` go on."""
    with open(go, "w", encoding="utf-8") as fifo:
        fifo.write("go\n")

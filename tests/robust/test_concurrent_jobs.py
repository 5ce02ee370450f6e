"""Two jobs writing one output at once: one is refused (or waits), neither's results are lost.

Real ``mmbright`` processes: the first is held at a known point by a plugin
(``held_jobs.py``: BM25 held inside a domain, the counting reranker, the loopback chat
server holding a request), so the second starts while the first holds its claim, with no
timing; the second is refused in one line naming the folder and the first job, or waits for
it with ``--wait`` and then sees what it wrote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from blocking_retriever import FAIL_ENV
from held_jobs import job_env, let_go, start_held
from openai_server import CHAT_MODEL, OpenAIServer

from mmbright_core.io.claims import lock_path
from mmbright_core.ui.common.workspace import DEMO_RUNS

DOMAINS = ("academia", "biology")  # the fixture's domains, run in this order
SUBDIR = "run_t2t_bm25"
BUSY = "is being written by another job (pid {pid} on "
ADVICE = "). Wait for it to end, pass --wait, or choose another --out\n"

pytestmark = pytest.mark.timeout(300)


def _run_args(fixture_dir: Path, out: Path, k1: float, *extra: str) -> list[str]:
    args = ["run", "--source", str(fixture_dir), "--task", "1", "--domain", *DOMAINS]
    args += ["--retriever", "blocking_retriever:make", "--option", f"k1={k1}"]
    return [*args, "--out", str(out), *extra]


def _mmbright(args: list[str], folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mmbright_core", *args]
    return subprocess.run(
        command, env=job_env(folder, **env), capture_output=True, text=True, timeout=300
    )


def _start(args: list[str], folder: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "mmbright_core", *args]
    return subprocess.Popen(
        command, env=job_env(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(process: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out.decode(), err.decode()


def _refused(done: subprocess.CompletedProcess[str], command: str, target: Path, pid: int):
    assert done.returncode == 2 and "wrote" not in done.stdout, done.stderr[-2000:]
    lead = f"mmbright {command}: error: {target}: {BUSY.format(pid=pid)}"
    assert done.stderr.startswith(lead) and done.stderr.endswith(ADVICE), done.stderr
    assert done.stderr.count("\n") == 1  # one line


def _k1s(task_dir: Path) -> set[float]:
    """Every k1 the folder records: its config.json and each domain's."""
    configs = [task_dir / "config.json", *(task_dir / d / "config.json" for d in DOMAINS)]
    return {json.loads(p.read_text())["config"]["options"]["k1"] for p in configs}


def _scores(task_dir: Path) -> dict[str, bytes]:
    return {d: (task_dir / d / "scores.json").read_bytes() for d in DOMAINS}


def test_two_runs_into_one_folder_never_both_succeed_with_one_lost(
    fixture_dir: Path, tmp_path: Path
):
    # The first is held inside its first domain, before it has written anything: without a
    # claim the second ran to the end, said "wrote", and the first then wrote over it.
    out = tmp_path / "out"
    (tmp_path / "a").mkdir()
    first, go = start_held(_run_args(fixture_dir, out, 0.9), DOMAINS[0], tmp_path / "a")
    second = _mmbright(_run_args(fixture_dir, out, 1.5), tmp_path / "cache")
    _refused(second, "run", out / SUBDIR, first.pid)
    let_go(go)
    code, printed, err = _finish(first)
    assert code == 0 and f"wrote {out / SUBDIR}" in printed, err[-2000:]
    assert _k1s(out / SUBDIR) == {0.9}
    alone = _mmbright(_run_args(fixture_dir, tmp_path / "alone", 0.9), tmp_path / "cache")
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert _scores(out / SUBDIR) == _scores(tmp_path / "alone" / SUBDIR)
    assert sorted(p.name for p in out.iterdir()) == [SUBDIR]  # the claim went with the job


def test_a_waiting_run_goes_on_after_the_first_and_never_mixes(fixture_dir: Path, tmp_path: Path):
    out = tmp_path / "out"
    (tmp_path / "a").mkdir()
    first, go = start_held(_run_args(fixture_dir, out, 0.9), DOMAINS[0], tmp_path / "a")
    same = _start(_run_args(fixture_dir, out, 0.9, "--wait"), tmp_path / "cache")
    other = _start(_run_args(fixture_dir, out, 1.5, "--wait", "120"), tmp_path / "cache")
    time.sleep(2)  # a job that did not wait would have been refused by now
    assert same.poll() is None and other.poll() is None
    let_go(go)
    assert _finish(first)[0] == 0
    printed, err = same.communicate(timeout=300)
    assert same.returncode == 0, err[-2000:]
    assert all(f"{d}\tnDCG@10" in printed and "(reused)" in printed for d in DOMAINS)
    assert printed.count("(reused)") == len(DOMAINS)  # it saw the first job's domains
    printed, err = other.communicate(timeout=300)
    assert other.returncode == 2 and "wrote" not in printed
    assert "holds another configuration (by its config.json): options.k1 (recorded 0.9" in err
    assert _k1s(out / SUBDIR) == {0.9}


def test_a_killed_run_leaves_no_claim(fixture_dir: Path, tmp_path: Path):
    out = tmp_path / "out"
    (tmp_path / "a").mkdir()
    first, _ = start_held(_run_args(fixture_dir, out, 0.9), DOMAINS[1], tmp_path / "a")
    _refused(
        _mmbright(_run_args(fixture_dir, out, 0.9), tmp_path / "cache"),
        "run",
        out / SUBDIR,
        first.pid,
    )
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert lock_path(out / SUBDIR).is_file()  # left by the killed job, held by no one
    again = _mmbright(_run_args(fixture_dir, out, 0.9), tmp_path / "cache")
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{DOMAINS[0]}\tnDCG@10" in again.stdout and "(reused)" in again.stdout
    assert sorted(p.name for p in out.iterdir()) == [SUBDIR]


def test_a_run_failing_after_its_first_domain_is_resumed_in_its_folder(
    fixture_dir: Path, tmp_path: Path
):
    out = tmp_path / "out"
    failed = _mmbright(
        _run_args(fixture_dir, out, 0.9), tmp_path / "cache", **{FAIL_ENV: DOMAINS[1]}
    )
    assert failed.returncode == 2, failed.stderr[-2000:]
    assert failed.stderr == f"mmbright run: error: planted failure in {DOMAINS[1]}. Run it again\n"
    assert sorted(p.name for p in out.iterdir()) == [SUBDIR]  # no claim is left
    again = _mmbright(_run_args(fixture_dir, out, 0.9), tmp_path / "cache")
    assert again.returncode == 0, again.stderr[-2000:]
    lines = again.stdout.splitlines()
    assert lines[0].startswith(f"{DOMAINS[0]}\tnDCG@10") and lines[0].endswith("(reused)")
    assert lines[1].startswith(f"{DOMAINS[1]}\tnDCG@10") and "(reused)" not in lines[1]
    assert lines[-1] == f"wrote {out / SUBDIR}"  # the same folder, not {SUBDIR}_2
    assert sorted(p.name for p in out.iterdir()) == [SUBDIR] and _k1s(out / SUBDIR) == {0.9}


def _rerank_args(out: Path, cache: Path) -> list[str]:
    args = ["rerank", str(DEMO_RUNS / "run_it2t_bm25"), "--source", "demo", "--task", "2"]
    args += ["--domain", "biology", "--depth", "5", "--reranker", "rerank_plugins:counting"]
    return [*args, "--out", str(out), "--cache-dir", str(cache)]


@pytest.mark.slow
def test_two_reranks_into_one_folder_refuse_the_second_until_the_first_ends(tmp_path: Path):
    hold = tmp_path / "hold"
    os.mkfifo(hold)
    os.mkfifo(f"{hold}.never")
    out = tmp_path / "out"
    held = job_env(tmp_path / "cache", RERANK_HOLD=str(hold), RERANK_HOLD_AFTER="1")
    command = [sys.executable, "-m", "mmbright_core", *_rerank_args(out, tmp_path / "c1")]
    first = subprocess.Popen(command, env=held, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(hold) as fifo:  # the first job is asking its second query, and holds there
        assert fifo.readline().strip()
    second = _mmbright(_rerank_args(out, tmp_path / "c2"), tmp_path / "cache")
    _refused(second, "rerank", out / "run_it2t_bm25+counting", first.pid)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    again = _mmbright(_rerank_args(out, tmp_path / "c2"), tmp_path / "cache")
    assert again.returncode == 0 and "wrote" in again.stdout, again.stderr[-2000:]


def _rewrite_args(server: OpenAIServer, out: Path, cache: Path, *extra: str) -> list[str]:
    args = ["rewrite", "--source", "demo", "--task", "1", "--domain", "gis", "--llm", CHAT_MODEL]
    args += ["--endpoint", server.url, "--option", "concurrency=1", "--cache-dir", str(cache)]
    return [*args, "--out", str(out), *extra]


@pytest.mark.slow
def test_two_rewrites_of_one_set_never_both_say_wrote(chat_server: OpenAIServer, tmp_path: Path):
    # The first job's second request is held: it has the set's claim, and has written nothing.
    chat_server.hold_after = 1
    out = tmp_path / "q.jsonl"
    first = _start(_rewrite_args(chat_server, out, tmp_path / "c1"), tmp_path / "cache")
    assert chat_server.held.wait(timeout=120), "the first job never reached the held request"
    template = tmp_path / "t.txt"
    template.write_text("Say more about {query}")
    second = _mmbright(
        _rewrite_args(chat_server, out, tmp_path / "c2", "--prompt", str(template)),
        tmp_path / "cache",
    )
    _refused(second, "rewrite", out, first.pid)
    chat_server.release()
    printed, err = first.communicate(timeout=300)
    assert first.returncode == 0 and f"wrote {out}" in printed, err[-2000:]
    prompts = {json.loads(line)["prompt"]["name"] for line in out.read_text().splitlines()}
    assert prompts == {"reason"} and not lock_path(out).exists()

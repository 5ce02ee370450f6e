"""An output claimed by one job at a time: refused with the holder named, waited for, and
released when the holder ends, even by ``SIGKILL`` (the holder is a real process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from locations import ROOT

from mmbright_core.io.claims import Claimant, OutputBusyError, claimed, lock_path

# Holds the claim on argv[1] until a line arrives on stdin, saying "held" once it has it.
HOLDER = """
import sys
from mmbright_core.io.claims import Claimant, claimed
with claimed(sys.argv[1], Claimant(job="the holder job")):
    print("held", flush=True)
    sys.stdin.readline()
"""


@contextmanager
def holder(target: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the claim on ``target`` for the ``with`` block (or until killed)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)


def _release(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.write("done\n")
    process.stdin.close()
    assert process.wait(timeout=30) == 0


def test_a_second_job_is_refused_in_one_line_naming_the_output_and_the_holder(tmp_path: Path):
    target = tmp_path / "out" / "run_t2t_bm25"
    with holder(target) as process:
        advice = Claimant(advice="Wait for it, or choose another --out")
        with pytest.raises(OutputBusyError) as refused, claimed(target, advice):
            pytest.fail("two jobs held one claim")
        said = str(refused.value)
        assert said.startswith(f"{target}: is being written by another job (pid {process.pid} ")
        assert "`the holder job`). Wait for it, or choose another --out" in said
        assert "\n" not in said and refused.value.holder.pid == process.pid
        # The claim lies beside the folder, never in it: the folder is not even made.
        assert lock_path(target) == tmp_path / "out" / ".run_t2t_bm25.lock"
        assert lock_path(target).is_file() and not target.exists()
        _release(process)
    # Released: the lock file and the folder made for it are gone, and the claim is free.
    assert not (tmp_path / "out").exists()
    with claimed(target, Claimant(job="second")) as mine:
        assert mine.pid == os.getpid() and lock_path(target).is_file()
    assert not (tmp_path / "out").exists()


def test_a_claim_is_released_when_its_holder_is_killed(tmp_path: Path):
    target = tmp_path / "q.jsonl"
    with holder(target) as process:
        with pytest.raises(OutputBusyError), claimed(target):
            pass
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
        assert lock_path(target).is_file()  # the file of a killed job stays; its lock does not
        with claimed(target) as mine:
            assert mine.pid == os.getpid()
    assert list(tmp_path.iterdir()) == []


def test_a_waiting_job_goes_on_once_the_holder_ends_and_gives_up_after_its_seconds(
    tmp_path: Path,
):
    target = tmp_path / "run_t2t_bm25"
    with holder(target) as process:
        started = time.monotonic()
        with pytest.raises(OutputBusyError), claimed(target, Claimant(wait=0.5)):
            pass
        assert time.monotonic() - started >= 0.5
        order: list[str] = []

        def waiting() -> None:
            with claimed(target, Claimant(wait=None)):
                order.append("claimed")

        thread = threading.Thread(target=waiting)
        thread.start()
        thread.join(timeout=1.0)
        assert thread.is_alive() and not order  # still waiting while the holder runs
        order.append("released")
        _release(process)
        thread.join(timeout=30)
    assert order == ["released", "claimed"]


def test_jobs_racing_for_one_claim_hold_it_one_at_a_time(tmp_path: Path):
    # Every job takes the claim, then removes the file as it ends: the next must never get
    # a lock on a file already unlinked while a third locks the new one.
    target, inside, most = tmp_path / "out" / "x", [0], [0]
    guard = threading.Lock()

    def job() -> None:
        for _ in range(20):
            with claimed(target, Claimant(wait=None)):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.02)  # long enough for the others to find the file locked
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=job) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert most == [1] and not lock_path(target).exists()


def test_a_holder_that_has_not_written_its_record_yet_is_still_refused(tmp_path: Path):
    import fcntl

    target = tmp_path / "run_t2t_bm25"
    fd = os.open(lock_path(target), os.O_RDWR | os.O_CREAT)  # locked, nothing written yet
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(OutputBusyError) as refused, claimed(target):
            pass
        assert refused.value.holder is None
        assert str(refused.value).startswith(
            f"{target}: is being written by another job (its record not written yet). Wait"
        )
    finally:
        os.close(fd)

"""An output claimed by one job at a time: an OS file lock held for as long as the job writes.

Two jobs writing one output at once (two ``mmbright run`` into one folder, a run from the
dashboard beside one from a shell) could each report success while the folder held the
other's scores, or a mix of both. A job therefore claims its output first, and holds the
claim until it ends (docs/commands.md, "Output folders"):

- The claim is ``fcntl.flock`` on ``.<name>.lock`` beside the output (``<out>/.<subdir>.lock``
  for the folder ``<out>/<subdir>``; ``.q.jsonl.lock`` beside a query set ``q.jsonl``), never
  inside it: no reader of the output sees a file it does not know, an empty folder stays empty,
  and a folder of another configuration or of the official harness is never touched.
- The lock file records who holds it (process id, host, start time, command line), which the
  refusal of a second job names. The job ending removes it (and the folders made for it, when
  they are empty again); a job killed outright (``SIGKILL``, a crash) leaves the file, but not
  the lock, which the OS drops with the process: the next job takes the file over.
- A second job is refused at once in one line naming the output and the holder, or, when it
  was told to wait, waits for the claim (``--wait``, ``--wait SECONDS``) and then goes on as
  if it had started afterwards: it sees what the first job wrote.

A job takes the claim before it decides where to write (``<subdir>`` or ``<subdir>_2``...,
:mod:`mmbright_core.retrieval.runner.folders`), so the check and the write are one step.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mmbright_core.errors import QUOTE_LIMIT, InputError, WriteError, cut

POLL_SECONDS = 0.1
"""How often a waiting job tries the claim again."""
PAGE_ADVICE = "Wait for it to end, or choose another output folder"
"""What a refused job is told to do, unless its caller says otherwise."""
_HOLDER_BYTES = 4096


def command_line() -> str:
    """This process's command line, as its user typed it (``mmbright run ...``)."""
    words = list(sys.argv) or ["python"]
    name = Path(words[0]).name
    first = "mmbright" if name in ("mmbright", "__main__.py") else name
    return shlex.join([first, *words[1:]])


@dataclass(frozen=True)
class Claimant:
    """Who claims an output, and how long it waits for another job's claim.

    Attributes:
        job: What the job is, for the holder's record (default: this process's command line).
        wait: Seconds to wait for a claimed output (0: refuse at once; None: as long as the
            other job runs).
        advice: What a refused job is told to do (the command line names ``--wait``).
    """

    job: str = field(default_factory=command_line)
    wait: float | None = 0.0
    advice: str = PAGE_ADVICE


@dataclass(frozen=True)
class Holder:
    """The job that holds a claim, as its lock file records it."""

    pid: int
    host: str
    started: str
    job: str

    def describe(self, room: int = QUOTE_LIMIT) -> str:
        """``pid 4242 on host, started 2026-12-05 21:40:01 UTC: `mmbright run ...```.

        The command line is cut so that the whole fits in ``room`` characters.
        """
        lead = f"pid {self.pid} on {cut(self.host, 60)}, started {self.started}: "
        # Room for the quotes and for what cut() adds: "… (1,234 characters)".
        return f"{lead}`{cut(self.job, max(room - len(lead) - 25, 20))}`"


class OutputBusyError(InputError):
    """The output is claimed by another job.

    Attributes:
        target: The output (folder or file).
        holder: The job holding it, or None where its record could not be read.
    """

    def __init__(self, target: Path, holder: Holder | None, advice: str) -> None:
        self.target = target
        self.holder = holder
        lead = "is being written by another job"
        said = (
            holder.describe(QUOTE_LIMIT - len(lead) - 3) if holder else "its record not written yet"
        )
        super().__init__(f"{lead} ({said})", source=str(target), hint=advice)


def lock_path(target: Path) -> Path:
    """The lock file of ``target``: ``.<name>.lock`` beside it."""
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def claimed(
    target: str | os.PathLike[str],
    claimant: Claimant | None = None,
    guard: Callable[[Path], None] | None = None,
) -> Iterator[Holder]:
    """Hold the claim on ``target`` for the ``with`` block.

    Args:
        target: The output folder or file (it need not exist).
        claimant: Who claims it and how long to wait (default: refuse at once).
        guard: Called with the lock file's path before it is made; raises to refuse it.

    Yields:
        This job's record, as the lock file holds it.

    Raises:
        OutputBusyError: Another job holds the claim (after waiting, where told to).
        WriteError: The lock file cannot be made.
    """
    who = claimant or Claimant()
    path = lock_path(Path(target))
    if guard is not None:
        guard(path)
    made: list[Path] = []
    fd = _acquire(path, Path(target), who, made)
    try:
        holder = Holder(os.getpid(), socket.gethostname(), _now(), who.job)
        record = json.dumps(asdict(holder), sort_keys=True).encode("utf-8")
        # The record only names the holder to a refused job: on a full disk the job goes on,
        # and its first output fails with the message that names it.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, record, 0)
        yield holder
    finally:  # removed while still held: a job waiting on it then finds it gone and retries
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: another job may be writing there already


def _acquire(path: Path, target: Path, who: Claimant, made: list[Path]) -> int:
    # ``made`` gets the folders made for the lock file, outermost first.
    deadline = None if who.wait is None else time.monotonic() + who.wait
    while True:
        made += _make_folders(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:  # its folder was removed by a job ending: make it again
            continue
        except OSError as err:
            raise WriteError(str(path), err) from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            if deadline is not None and time.monotonic() >= deadline:
                raise OutputBusyError(target, holder, who.advice) from None
            time.sleep(POLL_SECONDS)
            continue
        if _still_there(path, fd):
            return fd
        os.close(fd)  # the job before removed the file as it ended: claim the new one


def _still_there(path: Path, fd: int) -> bool:
    try:
        named, held = path.stat(), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _read_holder(fd: int) -> Holder | None:
    try:
        data = json.loads(os.pread(fd, _HOLDER_BYTES, 0).decode("utf-8"))
        return Holder(int(data["pid"]), str(data["host"]), str(data["started"]), str(data["job"]))
    except (OSError, ValueError, KeyError, TypeError):  # not written yet, or not a record
        return None


def _make_folders(path: Path) -> list[Path]:
    """Make the folder of ``path`` and its missing parents; return those made, outermost first.

    Raises:
        WriteError: A folder cannot be made; the message names ``path``, the file to write.
    """
    folder, missing = path.parent, []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    made = []
    for each in reversed(missing):
        try:
            each.mkdir()
        except FileExistsError:
            continue
        except OSError as err:
            raise WriteError(str(path), err) from err
        made.append(each)
    return made


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

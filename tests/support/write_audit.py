"""Which of the suite's own writes landed in the user's real mmbright folders.

A snapshot of the real folders before and after the run also sees what other processes wrote
there meanwhile (the user's own dashboard saving a note), so the suite records its own writes
instead: an audit hook (``sys.addaudithook``) sees every file the interpreter opens for
writing, creates, renames or removes, and every SQLite database it connects to, and appends
each path inside a watched folder to a log in the test home. The subprocesses the suite
starts (the CLI, ``streamlit run``, Ray workers) install the same hook at start-up through a
``sitecustomize`` module on their ``PYTHONPATH`` (:func:`enable_in_subprocesses`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

WATCHED_ENV = "MMBRIGHT_SUITE_WATCHED"  # the folders, joined by os.pathsep
LOG_ENV = "MMBRIGHT_SUITE_WRITE_LOG"  # where each write into them is appended

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Events whose first argument is a path the call changes (the second too, for the pairs).
_ONE_PATH = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.truncate",
        "os.utime",
        "os.chmod",
        "os.chown",
        "shutil.rmtree",
        "sqlite3.connect",
    }
)
_TWO_PATHS = frozenset({"os.rename", "os.link", "os.symlink", "shutil.copyfile"})

_SITECUSTOMIZE = """\
import importlib.util, os
_spec = importlib.util.spec_from_file_location("write_audit", {module!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
_module.install_from_env()
"""


def _changed_paths(event: str, args: tuple[object, ...]) -> Sequence[object]:
    if event == "open":
        path, mode, flags = args
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else None
        if writing is None:
            writing = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
        return (path,) if writing else ()
    if event in _ONE_PATH:
        return args[:1]
    if event in _TWO_PATHS:
        return args[:2]
    return ()


class _Hook:
    """The audit hook: paths under ``watched`` that the process changes go to ``log``."""

    def __init__(self, watched: Sequence[str], log: str) -> None:
        self.watched = tuple(os.path.abspath(w) + os.sep for w in watched)
        self.log = log
        self.local = threading.local()  # the hook's own write to the log raises an event

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if getattr(self.local, "busy", False):
            return
        if not (event == "open" or event in _ONE_PATH or event in _TWO_PATHS):
            return
        hits = [str(p) for p in self._paths(event, args) if self._watched(p)]
        if not hits:
            return
        self.local.busy = True
        try:
            with open(self.log, "a", encoding="utf-8") as out:
                out.writelines(f"{os.getpid()} {event} {hit}\n" for hit in hits)
        finally:
            self.local.busy = False

    def _paths(self, event: str, args: tuple[object, ...]) -> Sequence[str]:
        found = []
        for path in _changed_paths(event, args):
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if isinstance(path, os.PathLike):
                path = os.fspath(path)
            if isinstance(path, str) and path not in ("", ":memory:"):
                found.append(path)
        return found

    def _watched(self, path: str) -> bool:
        full = os.path.abspath(path)
        return any((full + os.sep).startswith(w) for w in self.watched)


def install(watched: Sequence[Path], log: Path) -> None:
    """Record this process's writes under ``watched`` in ``log``, and its children's."""
    os.environ[WATCHED_ENV] = os.pathsep.join(str(w) for w in watched)
    os.environ[LOG_ENV] = str(log)
    install_from_env()


def install_from_env() -> None:
    """Install the hook as :func:`install` described it in the environment (or do nothing)."""
    watched, log = os.environ.get(WATCHED_ENV), os.environ.get(LOG_ENV)
    if watched and log:
        sys.addaudithook(_Hook(watched.split(os.pathsep), log))


def enable_in_subprocesses(folder: Path) -> None:
    """Have every Python subprocess install the hook: a ``sitecustomize`` in ``folder``, put
    first on ``PYTHONPATH`` (the folder holds nothing else a child could import)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(module=__file__))
    rest = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), *([rest] if rest else [])])


def recorded(log: Path) -> list[str]:
    """The writes recorded so far: ``PID EVENT PATH`` lines."""
    return log.read_text(encoding="utf-8").splitlines() if log.is_file() else []

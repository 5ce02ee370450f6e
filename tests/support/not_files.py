"""Destinations that are no regular file: a symbolic link, a named pipe, a device."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

#: What each destination of :func:`not_files` is, by the test of its mode.
KINDS = {
    "link": (stat.S_ISLNK, "a symbolic link"),
    "fifo": (stat.S_ISFIFO, "a named pipe (FIFO)"),
    "device": (stat.S_ISCHR, "a character device"),
}


def refusal(path: Path, kind: str) -> str:
    """What refusing to write ``path``, which is ``kind``, says."""
    return (
        f"{path}: the destination is {kind}, not a regular file, and is left as it is. "
        "Name a regular file to write (a new one, or a file to replace)"
    )


def not_files(folder: Path) -> dict[str, Path]:
    """A symbolic link to a file, a FIFO and a character device (/dev/null's) in a new folder
    of ``folder``.

    The device is made with ``mknod`` (root only; skipped otherwise) rather than /dev/null
    itself, so that a writer that does replace it harms nothing outside the test.
    """
    folder = folder / "destinations"
    folder.mkdir()
    kept = folder / "kept.txt"
    kept.write_text("kept\n")
    made = {"link": folder / "link.txt", "fifo": folder / "pipe", "device": folder / "null"}
    made["link"].symlink_to(kept)
    os.mkfifo(made["fifo"])
    try:
        os.mknod(made["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device file needs root")
    return made


def assert_untouched(made: dict[str, Path]) -> None:
    """Each destination is still what it was, the link's file unchanged, nothing beside."""
    for name, path in made.items():
        test, kind = KINDS[name]
        assert test(os.lstat(path).st_mode), f"{path} is no longer {kind}"
    assert made["link"].read_text() == "kept\n"
    assert sorted(os.listdir(made["link"].parent)) == ["kept.txt", "link.txt", "null", "pipe"]


def assert_each_refused(
    folder: Path, command: str, run: Callable[[str], int], capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` (a command line given its --out) refuses each of :func:`not_files` in one line."""
    made = not_files(folder)
    for name, path in made.items():
        assert run(str(path)) == 2, name
        err = capsys.readouterr().err
        expected = f"mmbright {command}: error: {refusal(path, KINDS[name][1])}\n"
        assert err == expected, (err, expected)
    assert_untouched(made)

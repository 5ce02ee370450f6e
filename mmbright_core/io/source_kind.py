"""What a source given as text is: a path or the content itself, a regular file or not.

A reader takes a one-line string that names a file as its path, and any other string as
its content; a path must name a regular file, since a FIFO, a device or a socket may block
or never end (:func:`check_regular` runs before the file is opened, and again on it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mmbright_core.errors import InputError
from mmbright_core.io.trec import FIELD

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),  # seen only by os.lstat
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str | None:
    """What an ``st_mode`` that is no regular file's is ("a named pipe (FIFO)"...), or None."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def check_regular(path: str, mode: int) -> None:
    """Refuse a path whose ``st_mode`` is not a regular file's, naming what it is."""
    # Opening a FIFO blocks until a writer comes, and /dev/zero never ends: the type is
    # checked before the file is opened for reading.
    kind = kind_of(mode)
    if kind is None:
        return
    raise InputError(
        "not a regular file",
        source=path,
        expected="a regular file",
        found=kind,
        hint="Pass a file inside the folder"
        if stat.S_ISDIR(mode)
        else "Pipes and devices may block or never end; save the content to a file first",
    )


def is_file(text: str) -> bool:
    """Whether ``text`` names an existing regular file (a text that cannot be a path: no)."""
    try:
        return "\0" not in text and Path(text).is_file()
    except (OSError, ValueError):
        return False


def exists(text: str) -> bool:
    """Whether ``text`` names anything that exists (a text that cannot be a path: no)."""
    try:
        return "\0" not in text and os.path.exists(text)
    except (OSError, ValueError):
        return False


def looks_like_path(text: str) -> bool:
    """Whether a one-line ``text`` that names no file was meant as a path."""
    # A one-line string that is no file could be a one-line table ("q1 0 d1 1") or
    # JSON; one without any blank or brace was meant as a path, and saying "file not
    # found" helps more than a column-count error about the path's text.
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("{") and FIELD.fullmatch(stripped) is not None

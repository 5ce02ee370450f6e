"""Atomic file writes: a reader never sees a half-written file.

The data goes to a temporary file in the destination's own folder (so the final rename
stays on one file system), is flushed and fsynced, then moved over the destination with
``os.replace``, which is atomic on POSIX and Windows. A crash or an error mid-write leaves
the previous file, if any, untouched and removes the temporary file. A cache entry that can
be computed again is written with ``sync=False``: without the two fsyncs it still survives
the writing process being killed at any point (the kernel holds what ``os.replace``
published), and only a crash of the whole system may lose the newest entries, which a
rerun then computes again; a reader still never sees half a file. A write that fails (a
full disk, no permission, a read-only file system) raises a :class:`WriteError` naming the
destination, which the command line prints as one line. :func:`write_file` is the text
writer of every output: UTF-8, gzip-compressed when the name ends in ``.gz``.

A destination that is there and is no regular file (a symbolic link, a named pipe, a
device, a socket, a folder) is refused with an :class:`InputError` before anything is
written (:func:`check_destination`): ``os.replace`` would put a file in its place, and
``--out /dev/null`` run as root once replaced the device itself.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from pathlib import Path

from mmbright_core.errors import InputError, WriteError
from mmbright_core.io.reading import kind_of

# mkstemp creates files readable by the owner only; a written file should get the same
# permissions as one made by ``open(path, "w")``. The umask can only be read by setting it.
_UMASK = os.umask(0)
os.umask(_UMASK)


def check_destination(path: str | os.PathLike[str]) -> None:
    """Refuse a destination that is there and is no regular file: it would be replaced.

    Raises:
        InputError: ``path`` is a symbolic link, a named pipe, a device, a socket or a
            folder; the message names it and what it is.
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # not there (or not reachable): the write itself says what is wrong
        return
    kind = kind_of(mode)
    if kind is not None:
        raise InputError(
            f"the destination is {kind}, not a regular file, and is left as it is",
            source=os.fspath(path),
            hint="Name a regular file to write (a new one, or a file to replace)",
        )


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, sync: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically, creating parent folders as needed.

    Args:
        path: The destination file.
        data: The complete new content.
        sync: Whether to fsync the file and its folder (see the module's docstring).

    Returns:
        The destination as a ``Path``.

    Raises:
        InputError: ``path`` is no regular file (:func:`check_destination`).
        WriteError: The file cannot be written (a full disk, no permission, a read-only file
            system); the message names ``path`` and what to do.
    """
    target = Path(path)
    check_destination(target)
    try:
        _write(target, data, sync)
    except OSError as err:  # the system's message names no path when the disk is full
        raise WriteError(str(target), err) from err
    return target


def _write(target: Path, data: bytes, sync: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~_UMASK)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    if sync:
        _fsync_dir(target.parent)


def atomic_write_text(
    path: str | os.PathLike[str], text: str, encoding: str = "utf-8", *, sync: bool = True
) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8 by default, newlines kept as given).

    Args:
        path: The destination file.
        text: The complete new content.
        encoding: The text encoding.
        sync: Whether to fsync the file and its folder (see the module's docstring).

    Returns:
        The destination as a ``Path``.
    """
    return atomic_write_bytes(path, text.encode(encoding), sync=sync)


def write_file(path: str | os.PathLike[str], text: str) -> Path:
    """Write text as UTF-8, atomically, gzip-compressed when the name ends in ``.gz``.

    Raises:
        InputError: The text holds a lone surrogate, which UTF-8 cannot encode.
        WriteError: The file cannot be written.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(
            "text that cannot be written as UTF-8",
            source=str(path),
            expected="valid Unicode ids",
            found=f"{text[err.start : err.end]!r} at character {err.start}",
        ) from None
    if Path(path).suffix.lower() == ".gz":
        # mtime=0 keeps the output byte-identical from one run to the next.
        data = gzip.compress(data, mtime=0)
    return atomic_write_bytes(path, data)


def _fsync_dir(folder: Path) -> None:
    # The rename itself is durable only once the folder entry is synced; platforms
    # that cannot open a folder (Windows) skip this step.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

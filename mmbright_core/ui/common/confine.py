"""Keeping every path the dashboard opens or writes inside one root folder on a shared server.

When ``MMBRIGHT_DATA_ROOT`` is set, every folder the user types (the local dataset, a runs
folder, a run's output folder, a model's local folder) must lie inside that root once
symlinks and ``..`` are resolved; a relative folder is taken inside the root. So must every
path found *below* a typed folder before the app opens it (a domain folder inside a runs
folder, a config folder of a dataset, an output subfolder a run writes into): a symlink deep
inside the root leads out as well as the typed one does. Without the variable the dashboard
is a local tool and a folder means what it means in a shell.

Whatever the root, a path that cannot be used at all (a NUL character, a symlink loop) is
refused with an :class:`~mmbright_core.errors.InputError`, never a ``ValueError`` or
``RuntimeError`` from the file system layer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mmbright_core.errors import InputError, show

ROOT_ENV = "MMBRIGHT_DATA_ROOT"
"""The environment variable naming the folder that every folder input must lie in."""


def data_root() -> Path | None:
    """The configured root folder, resolved, or None when folder inputs are unconfined.

    Raises:
        InputError: The variable names something that is not a folder (the server is
            misconfigured: refuse every folder rather than none).
    """
    value = os.environ.get(ROOT_ENV, "").strip()
    if not value:
        return None
    root = _resolve(Path(value).expanduser(), repr(value), ROOT_ENV)
    if not root.is_dir():
        raise InputError(
            f"{ROOT_ENV} does not name a folder",
            found=repr(value),
            hint=f"Set {ROOT_ENV} to an existing folder, or unset it",
        )
    return root


SHOWN_CHARACTERS = 80
"""The most characters of an unusable typed value a message quotes."""


def _limit(name: str, fallback: int) -> int:
    try:
        return int(os.pathconf("/", name))
    except (OSError, ValueError, AttributeError):  # not POSIX, or no such limit
        return fallback


PATH_MAX = _limit("PC_PATH_MAX", 4096)
NAME_MAX = _limit("PC_NAME_MAX", 255)


def check_typed(text: str, what: str) -> None:
    """Refuse a typed path that is empty or longer than a path can be, in one short line.

    An empty value would otherwise mean the server's working folder; an overlong one fails
    in the file system with the whole value in its message.

    Raises:
        InputError: ``text`` is blank, or longer than the system's path or name limit
            (``PATH_MAX``, ``NAME_MAX``, in bytes); the message quotes at most
            :data:`SHOWN_CHARACTERS` characters of it.
    """
    if not text.strip():
        raise InputError(f"the {what} is empty", hint=f"Type the {what}'s path")
    encoded = os.fsencode(text)
    longest = max(len(part) for part in encoded.split(b"/"))
    if len(encoded) >= PATH_MAX or longest > NAME_MAX:
        raise InputError(
            f"the {what} is longer than a path can be",
            expected=f"at most {PATH_MAX - 1:,} bytes, {NAME_MAX:,} per folder name",
            found=show(text, SHOWN_CHARACTERS),
        )


def _usable(path: str | os.PathLike[str], what: str) -> Path:
    text = os.fspath(path)
    check_typed(text, what)
    if "\0" in text:  # the OS refuses it; Python says "embedded null byte" (ValueError)
        raise InputError(
            f"the {what} holds a NUL character",
            expected="a path without control characters",
            found=show(text),
        )
    return Path(text).expanduser()


def _resolve(path: Path, typed: str, what: str, *, strict: bool = False) -> Path:
    try:
        return path.resolve(strict=strict)
    except FileNotFoundError:
        raise InputError(f"the {what} does not exist", found=typed) from None
    except (OSError, RuntimeError, ValueError) as err:  # a symlink loop: RuntimeError (3.11)
        raise InputError(
            f"the {what} cannot be resolved",
            expected="a path whose symlinks lead somewhere",
            found=f"{typed} ({type(err).__name__}: {err})",
            hint="A symlink on the way loops or is unreadable; give another path",
        ) from None


@dataclass(frozen=True)
class Confinement:
    """The folder every path must resolve into, or None for a local, unconfined dashboard.

    One value is passed wherever the app opens a path: :meth:`typed` for what the user
    typed, :meth:`check` for each path found or built below it, :meth:`check_tree` for a
    folder the core will walk on its own (a dataset folder, an official outputs folder).

    Attributes:
        root: The resolved root folder, or None.
    """

    root: Path | None

    @classmethod
    def from_env(cls) -> Confinement:
        """The confinement ``MMBRIGHT_DATA_ROOT`` asks for (see :func:`data_root`)."""
        return cls(data_root())

    def typed(
        self, folder: str | os.PathLike[str], what: str = "folder", *, strict: bool = False
    ) -> Path:
        """Return the path to use for a user's input, refusing one outside the root.

        Args:
            folder: What the user typed; relative means inside the root when there is one.
            what: What the path is for (``"dataset folder"``...), for the message.
            strict: The path must exist (a file about to be read).

        Returns:
            The path, resolved (symlinks and ``..`` followed) when a root is configured,
            else as typed with ``~`` expanded.

        Raises:
            InputError: The path holds a NUL character, loops, resolves outside the root, or
                is missing when ``strict``.
        """
        typed = _usable(folder, what)
        shown = repr(os.fspath(folder))
        if self.root is None:
            return self.check(typed, what, strict=strict, shown=shown) if strict else typed
        return self.check(self.root / typed, what, strict=strict, shown=shown)

    def check(
        self,
        path: str | os.PathLike[str],
        what: str = "path",
        *,
        strict: bool = False,
        shown: str | None = None,
    ) -> Path:
        """Resolve a path the app is about to open or write and refuse it outside the root.

        Args:
            path: The path (absolute, or relative to the working folder).
            what: What it is, for the message.
            strict: The path must exist (a file about to be read).
            shown: How to quote the path in a message (default: the path itself).

        Returns:
            The resolved path when a root is configured, else the path unchanged.

        Raises:
            InputError: NUL character, symlink loop, missing when ``strict``, or outside.
        """
        usable = _usable(path, what)
        quoted = shown or repr(os.fspath(path))
        if self.root is None:
            if strict and not os.path.lexists(usable):
                raise InputError(f"the {what} does not exist", found=quoted)
            return usable
        resolved = self._inside(self.root, usable, quoted, what)
        # Existence is said only inside the root: outside, /etc/shadow, a missing file and
        # a symlink out all get the one refusal (docs/safety.md, "Run page fields").
        if strict and not resolved.exists():
            raise InputError(f"the {what} does not exist", found=quoted)
        return resolved

    def _inside(self, root: Path, path: Path, quoted: str, what: str) -> Path:
        lexical = Path(os.path.normpath(os.path.abspath(path)))
        try:
            resolved = path.resolve()  # what exists is resolved; the rest need not exist yet
        except (OSError, RuntimeError, ValueError):  # a symlink loop: RuntimeError (3.11)
            if not _holds(root, lexical):
                raise self._outside(quoted, what) from None
            resolved = _resolve(path, quoted, what)  # raises the loop's message
        if not _holds(root, resolved):
            raise self._outside(quoted, what)
        return resolved

    def _outside(self, quoted: str, what: str) -> InputError:
        """The one refusal of a path outside the root: only what was typed is quoted.

        Never where a symlink leads, nor whether the path exists: the words are the same
        for ``/etc/shadow``, a missing file and a link out (docs/safety.md).
        """
        return InputError(
            f"the {what} is outside the folder this server may read",
            expected=f"a path inside {self.root}",
            found=quoted,
            hint=f"This server confines paths to {ROOT_ENV}; give a path inside it",
        )

    def check_tree(self, folder: Path, what: str, depth: int) -> None:
        """Check every entry up to ``depth`` levels below ``folder`` (the folder first).

        For a folder the core then reads on its own: a symlink anywhere in it that leads
        out of the root refuses the whole folder before anything in it is opened.

        Raises:
            InputError: An entry resolves outside the root, loops, or holds a NUL.
            OSError: A folder on the way cannot be listed.
        """
        if self.root is None:
            return
        for entry in _walk(self.check(folder, what), depth):
            self.check(entry, f"{what} entry", shown=repr(str(entry)))

    def output_guard(self, what: str = "output folder") -> _Guard:
        """A callable for the runner: check each folder or file before it is written or read."""
        return _Guard(self, what)


@dataclass(frozen=True)
class _Guard:
    confinement: Confinement
    what: str

    def __call__(self, path: Path) -> None:
        # A symlinked subfolder is followed by every write below it: refuse it when it
        # leads out, before anything is written there.
        self.confinement.check(path, f"{self.what} entry", shown=repr(str(path)))


def _holds(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


def _walk(folder: Path, depth: int) -> Iterator[Path]:
    if depth <= 0 or not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        yield entry
        # The caller checks the entry before this resumes; recursing through it as named
        # checks every link on the way, and the depth bound ends a loop of links.
        if entry.is_dir():
            yield from _walk(entry, depth - 1)


def confine(folder: str | os.PathLike[str], what: str = "folder") -> Path:
    """``Confinement.from_env().typed(folder, what)``: a typed folder, checked (see there)."""
    return Confinement.from_env().typed(folder, what)

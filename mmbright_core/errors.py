"""Errors that say what was expected, what was found, where, and how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


def show(value: str, limit: int = 60) -> str:
    """Quote a found value for a message, cut to ``limit`` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


class MMBrightError(Exception):
    """Base class of every error this package raises on purpose."""


class InputError(MMBrightError, ValueError):
    """Malformed input: a file, a record or an argument the package cannot use.

    The message names the place (file and line where known), what was expected, what was
    found and, where there is one, how to fix it.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        line: int | None = None,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.expected = expected
        self.found = found
        self.hint = hint
        super().__init__(self._message())

    def _message(self) -> str:
        where = ""
        if self.source is not None:
            where = self.source if self.line is None else f"{self.source}:{self.line}"
            where += ": "
        parts = [f"{where}{self.problem}"]
        if self.expected is not None:
            parts.append(f"expected {self.expected}")
        if self.found is not None:
            parts.append(f"found {self.found}")
        text = "; ".join(parts)
        if self.hint:
            text += f". {self.hint}"
        return text


class UnknownNameError(MMBrightError, KeyError):
    """A name (measure, retriever, domain...) that is not registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        close = difflib.get_close_matches(name, self.known, n=3, cutoff=0.5)
        if not close:
            lowered = {k.lower(): k for k in self.known}
            matches = difflib.get_close_matches(name.lower(), list(lowered), n=3)
            close = [lowered[m] for m in matches]
        message = f"unknown {kind} {name!r}"
        if close:
            message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        else:
            message += f"; known: {', '.join(self.known)}"
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class MissingDependencyError(MMBrightError, ImportError):
    """An optional backend is not installed; the message gives the install command."""

    def __init__(self, what: str, extra: str, module: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(
            f"{what} needs the optional package {module!r}, which is not installed; "
            f"install it with: pip install 'mmbright[{extra}]'"
        )


class NotesError(InputError):
    """The notes database cannot be read or written (corrupt, locked, read-only, bad import).

    Takes :class:`InputError`'s arguments, plus ``unsaved``.

    Attributes:
        unsaved: The text the failed write would have stored (a note, or a tag list), so a
            caller can show it back instead of losing it; ``None`` when nothing was lost.
    """

    def __init__(self, problem: str, *, unsaved: str | None = None, **details: Any) -> None:
        self.unsaved = unsaved
        super().__init__(problem, **details)

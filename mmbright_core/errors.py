"""Errors that say what was expected, what was found, where, and how to fix it."""

from __future__ import annotations

import difflib
import errno
import importlib
import unicodedata
from collections.abc import Iterable
from typing import Any

QUOTE_LIMIT = 300
"""The most characters of one part of a message (problem, expected, found, hint, source):
a value from the input may be megabytes long, and a message is printed or sent to a page
whole (an upload holding a 100 MiB id once made a 100 MB message that crashed the tab)."""


# What does something other than show itself: control characters (ESC starts a terminal's
# escape sequences, BEL ends a title-setting one; NUL, C1), format characters (the bidi
# overrides and isolates such as U+202E, zero-width ones), line and paragraph separators and
# lone surrogates.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def is_hidden(char: str) -> bool:
    """Whether a character does something other than show itself: a control or bidi mark."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def printable(text: str, keep: str = "") -> str:
    r"""Return ``text`` with each hidden character (:func:`is_hidden`) written as its escape.

    ``printable("a\x1b[2Jb\u202e")`` is ``"a\\x1b[2Jb\\u202e"``: a terminal shows the
    escape, never runs it, and a page shows the text in its own order. Every message that
    quotes a server, a file or a plugin goes through here (:class:`InputError` does it for
    each of its parts; the command line for every line it prints).

    Args:
        text: The text.
        keep: Hidden characters to leave as they are (a multi-line view keeps line breaks).
    """
    if not any(is_hidden(char) and char not in keep for char in text):
        return text
    return "".join(
        ascii(char)[1:-1] if is_hidden(char) and char not in keep else char for char in text
    )


def escaped_traceback(err: BaseException) -> str:
    """The traceback Python prints for ``err``, each hidden character escaped (lines kept).

    What a plugin raises is its own to word: its message may hold an escape sequence or a
    bidi control, shown as :func:`printable` writes it wherever it is quoted.
    """
    import traceback

    return printable("".join(traceback.format_exception(err)), keep="\n")


def show(value: str, limit: int = 60, *, length: int | None = None) -> str:
    """Quote a found value for a message, cut to ``limit`` characters with its length said.

    ``show("a" * 10**8)`` is ``'aaaa…' (100,000,000 characters)``. ``length`` is the full
    length when ``value`` is already a prefix (a value too large to copy whole).
    """
    length = len(value) if length is None else length
    if length <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({length:,} characters)"


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """Cut one part of a message to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _quoted(part: str) -> str:
    return printable(cut(part))


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
        # Every part is cut and made printable here, once, so no reader has to remember to
        # cut what it quotes, or to escape what a server, a file or a plugin put in it.
        self.problem = _quoted(problem)
        self.source = None if source is None else _quoted(source)
        self.line = line
        self.expected = None if expected is None else _quoted(expected)
        self.found = None if found is None else _quoted(found)
        self.hint = None if hint is None else _quoted(hint)
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


class InputWarning(UserWarning):
    """Input read as given, with something left out that the reader should know about.

    Raised through :func:`warnings.warn`, once per input, never per line; the command
    line prints it as one ``mmbright <command>: warning: ...`` line on stderr.
    """


class UnknownNameError(MMBrightError, KeyError):
    """A name (measure, retriever, domain...) that is not registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        quoted = show(name, QUOTE_LIMIT)
        name = name[: QUOTE_LIMIT + 1]  # difflib is quadratic; no known name is this long
        close = difflib.get_close_matches(name, self.known, n=3, cutoff=0.5)
        if not close:
            lowered = {k.lower(): k for k in self.known}
            matches = difflib.get_close_matches(name.lower(), list(lowered), n=3)
            close = [lowered[m] for m in matches]
        message = f"unknown {cut(kind)} {quoted}"
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


def require(module: str, what: str, extra: str) -> Any:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the pip extra.

    Args:
        module: The importable module name (``open_clip``).
        what: What needs it, for the message (``the clip retriever``).
        extra: The ``mmbright`` extra that installs it (``clip``).

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: ``module``, or a package it imports, is not installed (the
            extra installs both); the message names the one missing.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = (err.name or module).split(".")[0]
        if missing != module.split(".")[0] and not isinstance(err, ModuleNotFoundError):
            raise  # a real bug inside an installed package, not a missing one
        raise MissingDependencyError(what, extra, missing) from err


class InputTooLargeError(InputError):
    """The input passes a size limit (counted decompressed and decoded, as it is read).

    Attributes:
        limit: The limit in bytes.
    """

    def __init__(self, problem: str, *, limit: int, **details: Any) -> None:
        self.limit = limit
        super().__init__(problem, **details)


class MissingFileError(InputError):
    """A local copy of the dataset lacks one config's file for one domain.

    Attributes:
        config: The config (``examples``, ``documents``...).
        domain: The domain.
    """

    def __init__(self, problem: str, *, config: str, domain: str, **details: Any) -> None:
        self.config = config
        self.domain = domain
        super().__init__(problem, **details)


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


class EndpointError(InputError):
    """An embeddings (or chat) endpoint that cannot be used as asked.

    No key, a refused key, an endpoint that cannot be reached or keeps failing, a model the
    server does not know, an answer that is not what the API promises. Takes
    :class:`InputError`'s arguments; the message names the endpoint and how to fix it.
    """


class RequestBudgetError(EndpointError):
    """The request budget (``max_requests``) is spent; what was answered before is kept.

    Attributes:
        requests: How many requests were sent before the budget stopped the run.
    """

    def __init__(self, problem: str, *, requests: int, **details: Any) -> None:
        self.requests = requests
        super().__init__(problem, **details)


# errno -> (what went wrong, how to fix it): the faults a write meets on a working machine.
_WRITE_FAULTS = {
    errno.ENOSPC: ("no space left on the device", "Free space on that disk"),
    errno.EDQUOT: ("the disk quota is exceeded", "Free space within the quota"),
    errno.EACCES: ("permission denied", "Check the folder's permissions"),
    errno.EPERM: ("operation not permitted", "Check the folder's permissions"),
    errno.EROFS: ("the file system is read-only", "Mount it writable"),
}
_ELSEWHERE = "or write elsewhere (mmbright run --out, MMBRIGHT_CACHE for the caches)"


class WriteError(MMBrightError, OSError):
    """A file cannot be written: a full disk, no permission, a read-only file system.

    An ``OSError`` still (``errno`` is the system's), whose message names the file being
    written, says what went wrong and what to do, where the system's names no path
    (``[Errno 28] No space left on device``).

    Attributes:
        path: The file that was being written.
    """

    def __init__(self, path: str, err: OSError) -> None:
        other = err.strerror or str(err), "Check the path"
        reason, fix = _WRITE_FAULTS.get(err.errno or 0, other)
        code = errno.errorcode.get(err.errno or 0)
        self.path = path
        self.message = cut(f"{path}: cannot write the file: {reason}") + (
            f" ({code}). {fix}, {_ELSEWHERE}." if code else f". {fix}, {_ELSEWHERE}."
        )
        super().__init__(err.errno, self.message)

    def __str__(self) -> str:  # OSError would prefix "[Errno 28]" and drop the path
        return self.message

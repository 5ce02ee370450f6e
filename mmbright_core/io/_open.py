"""Shared plumbing of the readers and writers: open, decompress, decode, split, write.

Every reader accepts the same kinds of source, as ir_measures does (STYLE.md): a path, a
binary or text file object, inline text, or raw bytes. Whatever goes wrong comes back as
an ``InputError`` that names the source (``<text>``, ``<bytes>`` and ``<stream>`` for data
without a file name), the line or JSON path, what was expected and what was found.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Union

from mmbright_core.errors import InputError, show
from mmbright_core.io._json import json_path
from mmbright_core.io.atomic import atomic_write_bytes

Readable = Union[str, "os.PathLike[str]", bytes, IO[bytes], IO[str]]
"""A path, inline text, raw bytes, or an open file object (binary or text)."""

_GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
# trec_eval splits columns on ASCII blanks only; Python's ``str.split()`` would also split
# on Unicode spaces (U+00A0...), which may occur inside ids.
_FIELD = re.compile(r"[^ \t\r\f\v]+")
_BLANK = re.compile(r"[ \t\r\n\f\v]")
_TO_SPACE = str.maketrans("\t\r\f\v", "    ")
INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Loaded:
    """The raw content of a source, decompressed.

    Attributes:
        name: The file name, or ``<text>``/``<bytes>``/``<stream>`` when there is none.
        data: The bytes, gunzipped where they were gzip-compressed.
        suffix: The lower-case file extension with any ``.gz`` removed (``""`` if none).
    """

    name: str
    data: bytes
    suffix: str


def load(src: Readable) -> Loaded:
    """Read a source completely into memory and gunzip it if needed.

    A ``str`` is a path when it has no line break and names an existing file; otherwise it
    is the content itself. Gzip is recognised by its magic bytes, whatever the name says.

    Args:
        src: A path, inline text, raw bytes, or an open file object.

    Returns:
        The source's name, bytes and format hints.

    Raises:
        InputError: The file does not exist, cannot be read, or is corrupt gzip.
    """
    if isinstance(src, bytes):
        return _loaded("<bytes>", src, "")
    if isinstance(src, str) and ("\n" in src or not _is_file(src)):
        if "\n" not in src and _looks_like_path(src):
            raise InputError(
                "file not found", source=src, hint="Check the path, or pass the content itself"
            )
        return _loaded("<text>", src.encode("utf-8", "surrogatepass"), "")
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise InputError("file not found", source=str(path), hint="Check the path") from None
        except OSError as err:
            raise InputError(f"cannot read the file ({err.strerror})", source=str(path)) from None
        return _loaded(str(path), data, path.name)
    if hasattr(src, "read"):
        return _load_stream(src)
    raise InputError(
        "unsupported source",
        expected="a path, inline text, bytes or an open file",
        found=type(src).__name__,
    )


def _load_stream(stream: IO[Any]) -> Loaded:
    raw_name = getattr(stream, "name", None)
    name = raw_name if isinstance(raw_name, str) else "<stream>"
    try:
        content = stream.read()
    except UnicodeDecodeError as err:
        raise InputError(
            "the stream is not valid UTF-8 text",
            source=name,
            found=f"byte {err.object[err.start : err.start + 1]!r}",
            hint="Open the file in binary mode or convert it to UTF-8",
        ) from None
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    if not isinstance(content, bytes):
        raise InputError(
            "the file object's read() returned neither bytes nor text",
            source=name,
            found=type(content).__name__,
        )
    return _loaded(name, content, Path(name).name if name != "<stream>" else "")


def _loaded(name: str, data: bytes, file_name: str) -> Loaded:
    suffixes = [s.lower() for s in Path(file_name).suffixes] if file_name else []
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, name)
    return Loaded(name, data, suffixes[-1] if suffixes else "")


def _gunzip(data: bytes, name: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:
        raise InputError(
            "corrupt or truncated gzip data",
            source=name,
            found=str(err) or type(err).__name__,
            hint="Re-create the file; `gzip -t` checks it",
        ) from None


def _is_file(text: str) -> bool:
    try:
        return "\0" not in text and Path(text).is_file()
    except (OSError, ValueError):
        return False


def _looks_like_path(text: str) -> bool:
    # A one-line string that is no file could be a one-line table ("q1 0 d1 1") or
    # JSON; one without any blank or brace was meant as a path, and saying "file not
    # found" helps more than a column-count error about the path's text.
    stripped = text.strip()
    return (
        bool(stripped) and not stripped.startswith("{") and _FIELD.fullmatch(stripped) is not None
    )


def decode(loaded: Loaded) -> str:
    """Decode UTF-8 text, refusing undecodable bytes and empty content.

    Args:
        loaded: The raw content.

    Returns:
        The text, without a leading byte-order mark.

    Raises:
        InputError: The bytes are not UTF-8, or there is nothing but blanks.
    """
    try:
        text = loaded.data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = loaded.data.count(b"\n", 0, err.start) + 1
        raise InputError(
            "the content is not UTF-8 text",
            source=loaded.name,
            line=line,
            expected="UTF-8 encoded text",
            found=f"byte {loaded.data[err.start : err.start + 1]!r} at offset {err.start}",
            hint="Convert the file to UTF-8 (e.g. `iconv -t UTF-8`)",
        ) from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError(
            "empty input",
            source=loaded.name,
            expected="at least one record",
            found="no content" if not text else "only blank space",
        )
    return text


# The two whitespace-separated TREC formats, each named for the other's error message.
TREC_LAYOUTS = {
    "run": ("query_id Q0 doc_id rank score tag", "qrels", "read_qrels"),
    "qrels": ("query_id iteration doc_id relevance", "run", "read_run"),
}


def trec_rows(text: str, name: str, kind: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, columns)`` of a TREC run or qrels, checking the column count.

    Raises:
        InputError: A line has another number of columns (naming the other format when the
            count is the other's, as when a qrels file is given for a run).
    """
    layout, other, reader = TREC_LAYOUTS[kind]
    count, other_count = len(layout.split()), len(TREC_LAYOUTS[other][0].split())
    for line, columns in fields(text):
        if len(columns) != count:
            raise InputError(
                "wrong number of columns",
                source=name,
                line=line,
                expected=f"{count} columns ({layout})",
                found=f"{len(columns)}: {show(' '.join(columns))}",
                hint=f"This looks like a {other} line; read it with {reader}"
                if len(columns) == other_count
                else "Ids may not contain blanks",
            )
        yield line, columns


def fields(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, columns)`` for every non-blank line, numbered from 1."""
    # One C-level translate, then a plain split: several times faster than a regex per
    # line on runs of a million lines, with the same ASCII-blank rule as ``_FIELD``.
    for number, line in enumerate(text.translate(_TO_SPACE).split("\n"), start=1):
        columns = line.split(" ")
        if "" in columns:
            columns = [c for c in columns if c]
        if columns:
            yield number, columns


def duplicate_error(
    text: str, name: str, line: int, query_id: str, doc_id: str, doc_column: int
) -> InputError:
    """Build the error for a doc id listed twice for one query, naming both lines."""
    first = next(
        number
        for number, columns in fields(text)
        if len(columns) > doc_column and columns[0] == query_id and columns[doc_column] == doc_id
    )
    return InputError(
        f"duplicate doc id {show(doc_id)} for query {show(query_id)}",
        source=name,
        line=line,
        expected="each doc id at most once per query",
        found=f"a second entry (the first is on line {first})",
        hint="Remove one of them; readers here never silently keep the last one",
    )


def check_trec_token(value: object, what: str, keys: tuple[str, ...], hint: str) -> None:
    """Refuse a value that would not read back as one column of a TREC file.

    Raises:
        InputError: ``value`` is not a string, is empty or contains a blank.
    """
    if not isinstance(value, str) or not value or _BLANK.search(value):
        where = f" at {json_path(*keys)}" if keys else ""
        raise InputError(
            f"{what} cannot be written to a TREC file{where}",
            expected="a non-empty string without blanks",
            found=repr(value)[:60],
            hint=hint,
        )


def write_file(path: str | os.PathLike[str], text: str) -> Path:
    """Write text atomically, gzip-compressed when the name ends in ``.gz``.

    Raises:
        InputError: The text holds a lone surrogate, which UTF-8 cannot encode.
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

"""Reading input, the readers' public API: where it comes from, how much is taken, its text.

Every reader accepts the same kinds of source, as ir_measures does: a path, a
binary or text file object, inline text, or raw bytes. Whatever goes wrong comes back as
an ``InputError`` that names the source (``<text>``, ``<bytes>`` and ``<stream>`` for data
without a file name), the line or JSON path, what was expected and what was found.

- What a source given as text is: a one-line string that names a file is its path, any
  other string its content; a path must name a regular file, since a FIFO, a device or a
  socket may block or never end (:func:`check_regular` runs before the file is opened, and
  again on it).
- The bounds: a reader stops once a source passes :func:`max_input_bytes` (counted as it is
  read, decompressed and decoded) and refuses an id past :data:`MAX_ID_CHARS`; the errors
  for both are built here, so every reader words them alike.
- Opening and decoding (:func:`load`, :func:`decode`): content is read in chunks and refused
  once it passes the size limit (counted after gunzipping, as it is decompressed, so a small
  gzip bomb is stopped early), and content that starts with binary data is refused at its
  first chunk instead of being read whole (one check per input: of the file's first chunk,
  or of the first gunzipped one).
- A ``query_id -> doc_id -> value`` table read from text (:func:`parse_table`): runs and
  qrels read alike once their bytes are loaded: decode the text, parse it as JSON
  ``{query_id: {doc_id: value}}`` or as TREC lines, then refuse an over-long id naming its
  line. Each reader keeps its own rule for telling the formats apart and its own grammar.

JSON read with its shapes checked by path is :mod:`mmbright_core.io.json_shapes`, the TREC
line grammar :mod:`mmbright_core.io.trec`, the writers' ``write_file``
:mod:`mmbright_core.io.atomic`.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, Union

from mmbright_core.errors import InputError, InputTooLargeError, show
from mmbright_core.io.json_shapes import nested_json
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


MAX_INPUT_ENV = "MMBRIGHT_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = 4 * 2**30
"""The most bytes a reader takes from one source, after gunzipping: 4 GiB, several times
the largest full-corpus run (29 domains x 1000 docs per query), while a file past it would
need several times its size in memory to parse. ``MMBRIGHT_MAX_INPUT_BYTES`` (a number of
bytes) or a reader's ``max_bytes`` argument sets another limit."""

MAX_ID_CHARS = 1024
"""The longest query or doc id taken, in characters. The longest real ids are Task 4 pair
ids, ``<passage id>|||<image path>`` (docs/protocol.md, The data as published), a few hundred
characters at most; a longer one is a column mix-up or a hostile file, and would otherwise be
carried into every table, message and page."""


def max_input_bytes(limit: int | None = None) -> int:
    """The most bytes a reader takes from one source (see :data:`DEFAULT_MAX_INPUT_BYTES`).

    Args:
        limit: An explicit limit; by default ``MMBRIGHT_MAX_INPUT_BYTES``, else 4 GiB.

    Raises:
        InputError: The limit (or the environment variable) is not a positive integer.
    """
    if limit is None:
        raw = os.environ.get(MAX_INPUT_ENV, "").strip()
        if not raw:
            return DEFAULT_MAX_INPUT_BYTES
        try:
            limit = int(raw)
        except ValueError:
            limit = 0
        source: str | None = MAX_INPUT_ENV
        found = show(raw)
    else:
        source, found = None, repr(limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InputError(
            "bad input size limit",
            source=source,
            expected="a positive number of bytes, e.g. 8589934592 for 8 GiB",
            found=found,
        )
    return limit


def size_text(size: int) -> str:
    """Write a byte count for a message: ``4 GiB``, ``1.5 MiB``, ``900 bytes``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size:,} bytes"


def too_large(
    problem: str, name: str, limit: int, *, hint: str, found: str | None = None
) -> InputTooLargeError:
    """Build the error for a source past the size ``limit`` (``found``: what was counted).

    Args:
        problem: What passed the limit, e.g. "the input is larger than the input size limit".
        name: The source's name.
        limit: The limit in bytes.
        hint: How to get past it.
        found: What was counted; by default "more than" the limit (reading stops there).
    """
    return InputTooLargeError(
        problem,
        limit=limit,
        source=name,
        expected=f"at most {size_text(limit)} ({limit:,} bytes)",
        found=found or f"more than {size_text(limit)}",
        hint=hint,
    )


def check_id_lengths(
    nested: Mapping[str, Mapping[str, object]], name: str, text: str | None = None
) -> None:
    """Refuse a query or doc id longer than :data:`MAX_ID_CHARS`.

    Args:
        nested: query_id -> doc_id -> value, as read.
        name: The source's name, for messages.
        text: The text read, to name the line of the long id.

    Raises:
        InputError: An id is too long (the message quotes its start and its length).
    """
    for query_id, docs in nested.items():
        if len(query_id) > MAX_ID_CHARS:
            raise long_id_error("query id", query_id, name, text)
        if docs and max(map(len, docs)) > MAX_ID_CHARS:
            doc_id = next(d for d in docs if len(d) > MAX_ID_CHARS)
            raise long_id_error("doc id", doc_id, name, text)


def long_id_error(
    what: str,
    value: str,
    name: str,
    text: str | None = None,
    *,
    row: int | None = None,
    length: int | None = None,
) -> InputError:
    """Build the error for an id past :data:`MAX_ID_CHARS` (``what``: "query id"...).

    The line is found in ``text`` where given; ``row`` names a table's row instead, and
    ``length`` the id's length when ``value`` is only its start.
    """
    at = -1 if text is None else text.find(value)
    return InputError(
        f"row {row}: {what} too long" if row is not None else f"{what} too long",
        source=name,
        line=text.count("\n", 0, at) + 1 if text is not None and at >= 0 else None,
        expected=f"ids of at most {MAX_ID_CHARS:,} characters",
        found=show(value, length=length),
        hint="Check the columns: an id names a query or a document, it never holds its text",
    )


Readable = Union[str, "os.PathLike[str]", bytes, IO[bytes], IO[str]]
"""A path, inline text, raw bytes, or an open file object (binary or text)."""

_GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"

_CHUNK = 2**20


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


def load(src: Readable, max_bytes: int | None = None) -> Loaded:
    """Read a source into memory, in bounded chunks, and gunzip it if needed.

    A ``str`` is a path when it has no line break and names an existing file; otherwise it
    is the content itself. Gzip is recognised by its magic bytes, whatever the name says.
    A path must name a regular file; an open file object is read as it comes.

    Args:
        src: A path, inline text, raw bytes, or an open file object.
        max_bytes: The most bytes taken once decompressed (:func:`max_input_bytes`).

    Returns:
        The source's name, bytes and format hints.

    Raises:
        InputError: The file does not exist, is no regular file, cannot be read, is
            corrupt gzip, is binary data, or holds more than ``max_bytes`` bytes.
    """
    limit = max_input_bytes(max_bytes)
    if isinstance(src, bytes):
        return _loaded("<bytes>", src, "", limit)
    if isinstance(src, str) and ("\n" in src or not is_file(src)):
        if "\n" not in src and exists(src):
            check_regular(src, os.stat(src).st_mode)
        if "\n" not in src and looks_like_path(src):
            raise InputError(
                "file not found", source=src, hint="Check the path, or pass the content itself"
            )
        return _loaded("<text>", src.encode("utf-8", "surrogatepass"), "", limit)
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        return _loaded(str(path), _read_path(path, limit), path.name, limit, read=True)
    if hasattr(src, "read"):
        return _load_stream(src, limit)
    raise InputError(
        "unsupported source",
        expected="a path, inline text, bytes or an open file",
        found=type(src).__name__,
    )


def _read_path(path: Path, limit: int) -> bytes:
    name = str(path)
    try:
        check_regular(name, os.stat(path).st_mode)
        # O_NONBLOCK: should the path become a FIFO between the check and here, opening it
        # returns at once and the check below refuses it; regular files ignore the flag.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise InputError("file not found", source=name, hint="Check the path") from None
    except OSError as err:
        raise InputError(f"cannot read the file ({err.strerror})", source=name) from None
    with open(fd, "rb") as handle:
        check_regular(name, os.fstat(fd).st_mode)
        try:
            return _read_bounded(handle.read, name, limit)
        except OSError as err:
            raise InputError(f"cannot read the file ({err.strerror})", source=name) from None


def _load_stream(stream: IO[Any], limit: int) -> Loaded:
    raw_name = getattr(stream, "name", None)
    name = raw_name if isinstance(raw_name, str) else "<stream>"
    content = _read_bounded(stream.read, name, limit)
    file_name = Path(name).name if name != "<stream>" else ""
    return _loaded(name, content, file_name, limit, read=True)


def _read_chunk(read: Callable[[int], Any], name: str) -> bytes:
    try:
        chunk = read(_CHUNK)
    except UnicodeDecodeError as err:
        raise InputError(
            "the stream is not valid UTF-8 text",
            source=name,
            found=f"byte {err.object[err.start : err.start + 1]!r}",
            hint="Open the file in binary mode or convert it to UTF-8",
        ) from None
    if isinstance(chunk, str):
        chunk = chunk.encode("utf-8", "surrogatepass")
    if not isinstance(chunk, (bytes, bytearray)):
        raise InputError(
            "the file object's read() returned neither bytes nor text",
            source=name,
            found=type(chunk).__name__,
        )
    return bytes(chunk)


def _read_bounded(read: Callable[[int], Any], name: str, limit: int) -> bytes:
    """Read to the end in chunks; refuse binary data at the first chunk, and past ``limit``."""
    buffer = io.BytesIO()
    chunk = _read_chunk(read, name)
    if chunk[:2] != _GZIP_MAGIC:
        _refuse_binary(chunk, name)
    while chunk:
        buffer.write(chunk)  # MemoryError under a cap: the CLI says so in one line
        # Compressed content never takes fewer bytes than it expands to, give or take a
        # header: past the limit here, it is past the limit decompressed too.
        if buffer.tell() > limit:
            raise _too_large(name, limit)
        chunk = _read_chunk(read, name)
    return buffer.getvalue()


def _too_large(name: str, limit: int, *, decompressed: bool = False) -> InputTooLargeError:
    return too_large(
        "the input is larger than the input size limit"
        + (" once decompressed" if decompressed else ""),
        name,
        limit,
        hint=f"Split the input, or raise the limit with {MAX_INPUT_ENV}=<bytes>",
    )


def _refuse_binary(head: bytes, name: str) -> None:
    """Refuse content whose first chunk holds a NUL byte: no TREC or JSON file has one.

    Parquet (the one binary format read) is let through by its magic bytes; a file of
    zeros (a sparse file, /dev/zero copied out) is refused here without reading it whole.
    """
    at = head.find(b"\0", 0, _CHUNK)
    if at < 0 or head[:4] == PARQUET_MAGIC:
        return
    try:  # report the first byte that is not UTF-8 if it comes first, as ``decode`` does
        head[:at].decode("utf-8")
    except UnicodeDecodeError as err:
        at = err.start
    raise _not_utf8(
        head,
        at,
        name,
        expected="UTF-8 encoded text (TREC or JSON) or a parquet file",
        hint="Pass the run or qrels file itself; binary files are read only as parquet",
        binary=True,
    )


def _not_utf8(
    data: bytes, at: int, name: str, *, expected: str, hint: str, binary: bool = False
) -> InputError:
    """The error for content that is not UTF-8 text, naming the line and byte at ``at``."""
    return InputError(
        "the content is not UTF-8 text",
        source=name,
        line=data.count(b"\n", 0, at) + 1,
        expected=expected,
        found=f"byte {data[at : at + 1]!r} at offset {at}" + (" (binary data)" if binary else ""),
        hint=hint,
    )


def _loaded(name: str, data: bytes, file_name: str, limit: int, *, read: bool = False) -> Loaded:
    """Gunzip, check and name the content; ``read``: it came through :func:`_read_bounded`."""
    suffixes = [s.lower() for s in Path(file_name).suffixes] if file_name else []
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    # One binary check per input, on its first chunk of text: made as it was read, or as
    # it was gunzipped, or here for content given in memory.
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, name, limit)
    elif not read:
        _refuse_binary(data[:_CHUNK], name)
    if len(data) > limit:
        raise _too_large(name, limit)
    return Loaded(name, data, suffixes[-1] if suffixes else "")


def _gunzip(data: bytes, name: str, limit: int) -> bytes:
    # The size in the gzip trailer is the writer's word (and modulo 4 GiB): the bytes are
    # counted as they come out instead, so a bomb stops at the limit.
    buffer = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            while chunk := stream.read(_CHUNK):
                if buffer.tell() == 0:
                    _refuse_binary(chunk, name)
                buffer.write(chunk)  # MemoryError under a cap: the CLI says so in one line
                if buffer.tell() > limit:
                    raise _too_large(name, limit, decompressed=True)
    except (OSError, EOFError, zlib.error) as err:
        raise InputError(
            "corrupt or truncated gzip data",
            source=name,
            found=str(err) or type(err).__name__,
            hint="Re-create the file; `gzip -t` checks it",
        ) from None
    return buffer.getvalue()


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
        hint = "Convert the file to UTF-8 (e.g. `iconv -t UTF-8`)"
        raise _not_utf8(
            loaded.data, err.start, loaded.name, expected="UTF-8 encoded text", hint=hint
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


V = TypeVar("V")


def parse_table(
    loaded: Loaded,
    is_json: Callable[[str], bool],
    leaf: Callable[[Any, str, tuple[str, str]], V],
    what: str,
    parse_trec: Callable[[str, str], dict[str, dict[str, V]]],
) -> dict[str, dict[str, V]]:
    """Decode ``loaded`` and parse it as JSON or TREC lines, checking the ids' lengths.

    Args:
        loaded: The source's content.
        is_json: Given the decoded text, whether it is to be read as JSON.
        leaf: Converts one JSON value (see :func:`~mmbright_core.io.json_shapes.nested_json`).
        what: What the values are ("score", "relevance"), for messages.
        parse_trec: Parses the text as TREC lines, given it and the source's name.

    Raises:
        InputError: The text is not UTF-8, is empty or malformed, or holds an over-long id.
    """
    text = decode(loaded)
    if is_json(text):
        table = nested_json(text, loaded.name, leaf, what)
    else:
        table = parse_trec(text, loaded.name)
    check_id_lengths(table, loaded.name, text)
    return table

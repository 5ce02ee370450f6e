"""Shared plumbing of the readers: open, bound, decompress, refuse binary data, decode.

Every reader accepts the same kinds of source, as ir_measures does: a path, a
binary or text file object, inline text, or raw bytes. Whatever goes wrong comes back as
an ``InputError`` that names the source (``<text>``, ``<bytes>`` and ``<stream>`` for data
without a file name), the line or JSON path, what was expected and what was found.

Reading is bounded: a path must name a regular file
(:mod:`~mmbright_core.io.source_kind`), content is read in chunks and refused once it passes
:func:`~mmbright_core.io.limits.max_input_bytes` (counted after gunzipping, as
it is decompressed, so a small gzip bomb is stopped early), and content that starts with
binary data is refused at its first chunk instead of being read whole (one check per
input: of the file's first chunk, or of the first gunzipped one). The TREC line grammar is
in :mod:`mmbright_core.io.trec`, the writers' ``write_file`` in :mod:`mmbright_core.io.atomic`.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Union

from mmbright_core.errors import InputError, InputTooLargeError
from mmbright_core.io.limits import MAX_INPUT_ENV, max_input_bytes, too_large
from mmbright_core.io.source_kind import check_regular, exists, is_file, looks_like_path

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

"""Cache entries that verify themselves: a checksum, a size, a shape and a dtype per file.

Every file the package keeps under the cache root (embedding shards, BM25 index files, OCR
texts) is written with a record of what it held: its size, a checksum of its bytes and, for a
``.npy`` array, its shape and dtype. A reader checks the record before it uses the entry; an
entry that does not match (shuffled, truncated, replaced, of another width) is reported once,
with its path, on the ``mmbright`` logger (a ``warning:`` line on stderr when nothing else is
configured), deleted and computed again: a damaged cache costs time, never a wrong score.

The checksum is xxHash's XXH3-128 where the ``xxhash`` package is installed (about 17 GB/s,
so checking an index costs a small fraction of reading it) and SHA-256 otherwise (about
1 GB/s); the record names the algorithm, and an entry recorded with one that is not installed
counts as unverifiable and is computed again. A checksum guards against damage, not against
someone who can write to the cache: they could write a matching record too.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.errors import InputError, cut, printable, show

LOG = logging.getLogger("mmbright")
_BLOCK = 4 << 20

try:  # the fast checksum, where installed (an optional package: SHA-256 does the same job)
    import xxhash

    _ALGORITHMS: dict[str, Callable[..., Any]] = {"xxh3_128": xxhash.xxh3_128}
except ImportError:  # pragma: no cover - depends on the environment
    _ALGORITHMS = {}
_ALGORITHMS["sha256"] = hashlib.sha256
ALGORITHM = next(iter(_ALGORITHMS))
"""The checksum new records use: ``xxh3_128`` where xxhash is installed, else ``sha256``."""

Record = dict[str, Any]
_REPORTED: set[str] = set()
# Files already checked in this process, by path, size, modification time and checksum: a
# dashboard builds a retriever per run, and the same shard must not be hashed every time.
_VERIFIED: set[tuple[str, int, int, str]] = set()


def digest_file(path: Path, algorithm: str | None = None) -> str:
    """Return ``"<algorithm>:<hex digest>"`` of a file's bytes (default :data:`ALGORITHM`)."""
    algorithm = algorithm or ALGORITHM
    digest = _ALGORITHMS[algorithm]()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return f"{algorithm}:{digest.hexdigest()}"


def file_record(path: Path, array: np.ndarray | None = None) -> Record:
    """Return the record of a file just written: its size, checksum and array layout.

    Args:
        path: The file.
        array: The array it holds, for a ``.npy`` file (its shape and dtype are recorded).
    """
    return _record(path.stat().st_size, digest_file(path), array)


def bytes_record(data: bytes, array: np.ndarray | None = None) -> Record:
    """Return the record of a file about to be written with ``data`` (see :func:`file_record`)."""
    digest = _ALGORITHMS[ALGORITHM](data)
    return _record(len(data), f"{ALGORITHM}:{digest.hexdigest()}", array)


def bytes_match(data: bytes, checksum: object) -> bool:
    """Whether ``data`` has the recorded ``checksum`` (False for one not computable here)."""
    if not isinstance(checksum, str):
        return False
    algorithm = checksum.partition(":")[0]
    if algorithm not in _ALGORITHMS:
        return False
    return checksum == f"{algorithm}:{_ALGORITHMS[algorithm](data).hexdigest()}"


def _record(size: int, checksum: str, array: np.ndarray | None) -> Record:
    record: Record = {"bytes": size, "checksum": checksum}
    if array is not None:
        record.update(shape=list(array.shape), dtype=array.dtype.str)
    return record


def npy_layout(path: Path) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """Return the shape and dtype an ``.npy`` file's header declares (no data is read).

    Raises:
        ValueError: The file is not an ``.npy`` file.
    """
    with path.open("rb") as handle:
        version = np.lib.format.read_magic(handle)
        read = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read(handle)
    return tuple(shape), dtype


def check_file(path: Path, record: Any) -> str | None:
    """Return why ``path`` does not match its record, or None when it does.

    The size is compared first (a truncated file says so), then the checksum, then the shape
    and dtype of an array.
    """
    if not isinstance(record, Mapping) or not isinstance(record.get("checksum"), str):
        return "no checksum recorded"
    try:
        size = path.stat()
    except OSError:
        return "the file is missing"
    if size.st_size != record.get("bytes"):
        return f"{size.st_size:,} bytes, {record.get('bytes')!r} recorded (truncated or replaced)"
    algorithm = record["checksum"].partition(":")[0]
    if algorithm not in _ALGORITHMS:
        return f"its checksum is {algorithm!r}, which cannot be computed here"
    memo = (str(path), size.st_size, size.st_mtime_ns, record["checksum"])
    if memo not in _VERIFIED:
        if digest_file(path, algorithm) != record["checksum"]:
            return "its checksum does not match (the content changed since it was written)"
        _VERIFIED.add(memo)
    if "shape" in record:
        return _layout_problem(path, record)
    return None


def _layout_problem(path: Path, record: Mapping[str, Any]) -> str | None:
    try:
        shape, dtype = npy_layout(path)
    except (OSError, ValueError) as err:
        return f"not a readable array ({err})"
    if list(shape) != record["shape"] or dtype.str != record.get("dtype"):
        return f"shape {shape} {dtype}, recorded {tuple(record['shape'])} {record.get('dtype')}"
    return None


def check_files(folder: Path, records: Any, names: Iterable[str]) -> str | None:
    """Return the first of ``names`` in ``folder`` that does not match ``records``, and why."""
    if not isinstance(records, Mapping):
        return "no checksums recorded"
    for name in names:
        problem = check_file(folder / name, records.get(name))
        if problem is not None:
            return f"{name}: {problem}"
    return None


def report_damaged(path: Path, reason: str) -> None:
    """Say once per process that the cache entry at ``path`` is damaged and is recomputed."""
    shown = str(path)
    if shown in _REPORTED:
        return
    _REPORTED.add(shown)
    LOG.warning(
        "mmbright: warning: damaged cache entry %s: %s; deleted, it is computed again",
        printable(shown),
        printable(reason),
    )


def remove(paths: Iterable[Path]) -> None:
    """Delete the files of a damaged entry (those already gone, or locked, are passed over)."""
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def check_finite(
    vectors: np.ndarray, settings: Mapping[str, Any], describe: Callable[[int], str]
) -> None:
    """Refuse vectors holding NaN or an infinity before they are cached or scored.

    A NaN vector scores NaN against everything and falls out of every ranking (nDCG 0.0
    with exit status 0); float16 storage turns values past 65,504 into infinities.

    Args:
        vectors: An ``(n, dim)`` array, as it will be stored.
        settings: The encoder's cache settings (they name the model).
        describe: Row index -> the input it was encoded from, for the message.

    Raises:
        InputError: A row is not finite; the message names the model and that row's input.
    """
    finite = np.isfinite(vectors)
    if finite.all():
        return
    bad = np.flatnonzero(~finite.all(axis=1))
    row = int(bad[0])
    kinds = sorted({"NaN" if np.isnan(v) else "infinity" for v in vectors[row][~finite[row]]})
    raise InputError(
        f"the model {model_name(settings)} returned a vector with {' and '.join(kinds)} for "
        f"{describe(row)}",
        expected="finite vectors",
        found=f"{len(bad)} of {len(vectors)} vectors of the batch not finite",
        hint="Check the model's weights and precision (float16 overflows past 65,504: store "
        "the cache as float32); nothing of this batch was cached",
    )


def float_rows(answer: Any, who: str, items: Sequence[object] | None = None) -> np.ndarray:
    """Return an encoder's answer as a float32 array, if it is an array of numbers.

    Numbers past float32's range become infinities here, refused by :func:`check_finite`.

    Args:
        answer: What the encoder returned (array-like).
        who: What returned it (``the retriever 'mod:make'``), for the message.
        items: The inputs of the answer's rows, when its rows are checked here: a row that
            float32 leaves with no length (numbers such as 1e-50, or near 1e38) is refused,
            naming its input (:func:`check_lengths`); a row of zeros as given is kept.

    Raises:
        InputError: Texts, rows of two lengths, a number no float holds (401 digits), or
            anything else that is not an array of numbers; with ``items``, a row float32
            leaves with no length.
    """
    try:
        raw = np.asarray(answer)
        problem = None if raw.dtype.kind in "fiu" else f"an array of {raw.dtype}"
    except (TypeError, ValueError) as err:  # rows of two lengths
        problem = f"{type(err).__name__}: {err}"
    if problem is None:
        with np.errstate(over="ignore"):
            rows = raw.astype(np.float32)
        if items is not None:
            check_lengths(rows, raw, who, items)
        return rows
    raise InputError(
        f"{who} returned vectors that are not rows of numbers",
        expected="one row of numbers per input, every row of one length",
        found=cut(problem, 200),
        hint="nothing of this batch was cached",
    )


def length_problem(vectors: np.ndarray, given: Any = None) -> tuple[int, str, int] | None:
    """The first row of ``vectors`` with no direction once scored, what it is, how many are.

    Vectors are scored in float32 after scaling to unit length: a row whose float32 length
    is 0 (all zeros, or numbers such as 1e-50 that float32 holds as 0 or whose squares
    vanish) or overflows (numbers near 1e38, whose squares pass float32's largest) would
    become all zeros and score 0 against everything.

    Args:
        vectors: The rows as they are scored (float32) or stored.
        given: The answer as the model gave it, when it may hold zeros by design: a row of
            exact zeros there is the model's own answer (the official recipes give one for
            a missing image, Jina-CLIP's zero image), scored 0 as upstream scores it, and no
            problem. None: every row of no length is one.

    Returns:
        ``(row, problem, count)``: the first such row, what is wrong with it (``is all
        zeros``...), and how many rows are so; None when every row has a finite length
        above 0.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        lengths = np.linalg.norm(np.asarray(vectors, dtype=np.float32), axis=-1)
    usable = np.isfinite(lengths) & (lengths > 0)
    if given is not None:
        usable |= ~np.any(np.asarray(given) != 0, axis=-1)
    bad = np.flatnonzero(~usable)
    if not len(bad):
        return None
    row = int(bad[0])
    if not np.isfinite(vectors[row]).all():
        problem = "holds NaN or an infinity"
    elif np.isinf(lengths[row]):
        problem = "has a length that overflows float32 (numbers near 1e38)"
    elif np.any(vectors[row]):
        problem = "has a length of 0 in float32 (numbers too small for float32)"
    else:
        problem = "is all zeros (as float32)"
    return row, problem, len(bad)


def checked_batch(
    answer: Any,
    items: Sequence[object],
    dtype: np.dtype[Any],
    settings: Mapping[str, Any],
    width: int | None = None,
    source: str | None = None,
) -> np.ndarray:
    """Return an encoder's answer for ``items`` cast to the stored ``dtype``, once it passes.

    Args:
        answer: What the encoder returned (array-like).
        items: The inputs it was given, for the message.
        dtype: The dtype the cache stores.
        settings: The encoder's cache settings (they name the model).
        width: The size of the vectors the cache holds already, if it holds any.
        source: What made the vectors, for the messages (None: the model the settings name).

    Raises:
        InputError: Not one ``(n, dim)`` row of numbers per item, rows of another size than
            ``width`` (stored, they would make the cache's good shards look damaged), or a
            row holding NaN or an infinity after the cast, or of no length once scored
            though not all zeros as given (:func:`length_problem`); the message names the
            source and that row's input.
    """
    who = source or f"the model {model_name(settings)}"
    vectors = float_rows(answer, who)
    if vectors.ndim != 2 or vectors.shape[0] != len(items):
        raise InputError(
            "encoder returned a wrong number of vectors",
            expected=f"shape ({len(items)}, dim)",
            found=str(vectors.shape),
        )
    if width is not None and vectors.shape[1] != width:
        raise InputError(
            f"{model_name(settings)} returned vectors of {vectors.shape[1]} numbers",
            expected=f"{width}, the size of the vectors cached for the same settings",
            hint="The model behind these settings changed; nothing of this batch was kept. "
            "Give another --cache-dir to start again beside the cached vectors.",
        )
    with np.errstate(over="ignore"):  # an overflow to float16 is refused below
        stored = vectors.astype(dtype)
    check_finite(stored, settings, lambda row: describe_item(items[row]))
    check_lengths(stored, vectors, who, items)
    return stored


def check_lengths(
    vectors: np.ndarray, given: Any, who: str, items: Sequence[object] | None
) -> None:
    """Refuse ``vectors`` (``given``, cast) when a row lost its length in the cast.

    Args:
        vectors: The rows as cast (float32 scored, or float16 stored).
        given: The rows before the cast: a row of zeros there is the model's own answer.
        who: What returned them, for the message.
        items: The inputs the rows are for (None: the rows are named by their place).

    Raises:
        InputError: A row of no length or an overflowing length once cast
            (:func:`length_problem`), naming its input.
    """
    found = length_problem(vectors, given)
    if found is None:
        return
    row, problem, count = found
    what = describe_item(items[row]) if items is not None and row < len(items) else None
    raise InputError(
        f"{who} returned a vector that {problem} for {what or f'input {row + 1} of the batch'}",
        expected="vectors with a direction (one of no length scores 0 against everything)",
        found=f"{count} of {len(vectors)} vectors of the batch so",
        hint="Check the model and what it was given; nothing of this batch was cached",
    )


def model_name(settings: Mapping[str, Any]) -> str:
    """The model a cache's settings describe (``'ViT-B-32' (pretrained 'openai')``...)."""
    found = {key: _find(settings, key) for key in ("model", "pretrained", "checkpoint_sha256")}
    name = repr(found["model"]) if found["model"] is not None else "(unnamed)"
    extra = [f"{key} {value!r}" for key, value in found.items() if key != "model" and value]
    return f"{name} ({', '.join(extra)})" if extra else name


def _find(settings: Any, key: str) -> Any:
    # Settings nest (an embedder's settings inside the cache's): the first match, depth first.
    if isinstance(settings, Mapping):
        if key in settings and not isinstance(settings[key], Mapping):
            return settings[key]
        for value in settings.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def describe_item(item: object) -> str:
    """Say which input an encoder was given (a text, an image file, a decoded image)."""
    if isinstance(item, str):
        return f"the text {show(item)}"
    if isinstance(item, bytes):
        return f"an image file of {len(item):,} bytes"
    if isinstance(item, Image.Image):
        return f"an image of {item.width}x{item.height} pixels"
    if isinstance(item, tuple):
        return " with ".join(describe_item(part) for part in item if part is not None)
    if isinstance(item, partial):
        # Image loaders are partial(decode_image, bytes, path) or partial(_same, image).
        paths = [a for a in item.args if isinstance(a, str)]
        if paths:
            return f"the image {paths[-1]!r}"
        return " with ".join(describe_item(a) for a in item.args if not callable(a))
    return f"the input {type(item).__name__}"

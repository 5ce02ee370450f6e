"""One shard of the embedding cache on disk: three files, written atomically, checked once.

A shard is ``<name>.vectors.npy`` (an ``(n, dim)`` array of the cache's dtype),
``<name>.keys.npy`` (its n content keys) and then ``<name>.check.json``, the size, checksum,
shape and dtype of the other two (:mod:`mmbright_core.retrieval.cache.verify`): a shard counts once
its check file exists, so an interrupted write leaves files without one, which are ignored
(and overwritten when the same shard is written again). A shard is checked against its
record when a process first sees it; one that does not match (truncated, shuffled, of another
width or dtype, rows and keys of different counts) is reported with its path and deleted, so
that its vectors are encoded again, never handed out. Vectors holding NaN or an infinity are
refused before they are stored, naming the model and the input. Shards of the earlier
two-file format, which recorded no checksum, are not read.

The vectors files are memory-mapped when rows are gathered (:func:`gather`), so a gather
reads only the rows it returns.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text
from mmbright_core.retrieval.cache.verify import (
    bytes_record,
    check_files,
    check_finite,
    npy_layout,
    remove,
    report_damaged,
)

#: The dtype of caches made before it was a setting.
_LEGACY_DTYPE = "float16"
_VECTORS, _KEYS, _CHECK = ".vectors.npy", ".keys.npy", ".check.json"

IntArray = npt.NDArray[np.int64]
Vectors = npt.NDArray[np.float32]
Shard = Path | npt.NDArray[np.floating[Any]]
"""A shard's vectors: its vectors file, or (a cache kept in memory) the array itself."""


def stored_dtype(settings: Mapping[str, Any]) -> np.dtype[Any]:
    """Return the numpy dtype a cache folder's settings store vectors in."""
    return np.dtype(settings.get("dtype", _LEGACY_DTYPE))


def shard_name(keys: Sequence[str], prefix: str = "") -> str:
    """Return a shard's name: ``prefix`` and a digest of its keys.

    Storing the same keys again gives the same name, so a rewrite replaces the vectors an
    interrupted write left behind instead of adding a file beside them.
    """
    return prefix + hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:32]


def vectors_file(folder: Path, name: str) -> Path:
    """Return the path of a shard's vectors file."""
    return folder / f"{name}{_VECTORS}"


def write_shard(
    folder: Path,
    name: str,
    keys: Sequence[str],
    vectors: npt.NDArray[np.floating[Any]],
    settings: Mapping[str, Any],
) -> None:
    """Store one shard in a cache folder: the vectors file, the keys file, then their check.

    Args:
        folder: The cache folder (:attr:`EmbeddingCache.folder`).
        name: The shard's name (see :func:`shard_name`).
        keys: The content key of each row of ``vectors``.
        vectors: An ``(len(keys), dim)`` array, stored in the settings' dtype.
        settings: The encoder settings that name the folder (kept beside as settings.json);
            their ``dtype`` (:attr:`EmbeddingCache.settings`) is how the vectors are stored.

    Raises:
        InputError: A vector holds NaN or an infinity (after the cast to the stored dtype).
    """
    with np.errstate(over="ignore"):  # an overflow to float16 is refused below
        stored = vectors.astype(stored_dtype(settings), copy=False)
    check_finite(stored, settings, lambda row: f"the input of content key {keys[row]}")
    if not (folder / "settings.json").exists():
        text = json.dumps(dict(settings), indent=2, sort_keys=True, default=str)
        atomic_write_text(folder / "settings.json", text + "\n")
    encoded = np.array([key.encode() for key in keys], dtype=np.bytes_)
    records = {}
    for suffix, array in ((_VECTORS, stored), (_KEYS, encoded)):
        data = _npy(array)
        records[f"{name}{suffix}"] = bytes_record(data, array)
        atomic_write_bytes(folder / f"{name}{suffix}", data)
    # The check goes last: readers see a shard only once its vectors and keys are complete.
    atomic_write_text(folder / f"{name}{_CHECK}", json.dumps(records, sort_keys=True) + "\n")


def _npy(array: npt.NDArray[Any]) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _read_keys(path: Path) -> list[str]:
    return [key.decode() for key in np.load(path).tolist()]


def shard_names(folder: Path) -> list[str]:
    """Return the names of a cache folder's complete shards (those with a check file), sorted."""
    return [path.name[: -len(_CHECK)] for path in sorted(folder.glob(f"*{_CHECK}"))]


def shard_problem(
    folder: Path, name: str, dtype: np.dtype[Any], dim: int | None
) -> tuple[str | None, list[str], int]:
    """Check one shard against its record and the cache it lies in.

    Args:
        folder: The cache folder.
        name: The shard's name.
        dtype: The dtype the cache stores.
        dim: The width of the folder's other shards, if one was read already.

    Returns:
        Why the shard cannot be used (None when it can), its keys, and its width.
    """
    vectors, keys = f"{name}{_VECTORS}", f"{name}{_KEYS}"
    try:
        records = json.loads((folder / f"{name}{_CHECK}").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"its check file is unreadable ({type(err).__name__})", [], 0
    problem = check_files(folder, records, (vectors, keys))
    if problem is not None:
        return problem, [], 0
    shape, stored = npy_layout(folder / vectors)
    found = _read_keys(folder / keys)
    if len(shape) != 2 or stored != dtype or len(found) != shape[0]:
        return f"{vectors}: shape {shape} {stored} for {len(found)} keys of a {dtype} cache", [], 0
    if dim is not None and shape[1] != dim:
        return f"{vectors}: {shape[1]} columns, the cache's other shards have {dim}", [], 0
    return None, found, shape[1]


def open_shard(
    folder: Path, name: str, dtype: np.dtype[Any], dim: int | None
) -> tuple[list[str], int] | None:
    """Return a shard's keys and width, or None (reported and deleted) when it is damaged.

    A shard that does not match its record (or holds another precision, width or count of
    keys) is never handed out: its keys count as missing, so they are encoded again and the
    shard is rewritten.
    """
    problem, keys, width = shard_problem(folder, name, dtype, dim)
    if problem is None:
        return keys, width
    files = [folder / f"{name}{suffix}" for suffix in (_VECTORS, _KEYS, _CHECK)]
    report_damaged(files[0], problem)
    remove(files)
    return None


def gather(shards: Sequence[Shard], starts: Sequence[int], rows: IntArray) -> Vectors:
    """Return float32 rows of shards taken end to end.

    The rows are gathered shard by shard, in file order, from memory-mapped files: only the
    rows asked for are read, and only the float32 result is held in memory.

    Args:
        shards: The shards, in the order their rows are numbered.
        starts: Each shard's first row, then the total row count.
        rows: The rows to return, in the order wanted (at least one).
    """
    order = np.argsort(rows, kind="stable")
    ranked = rows[order]
    bounds = np.searchsorted(ranked, starts).tolist()
    pieces = [
        (order[low:high], shard, ranked[low:high] - start)
        for shard, start, low, high in zip(shards, starts, bounds[:-1], bounds[1:], strict=False)
        if low < high
    ]
    dim = _shard_rows(pieces[0][1]).shape[1]
    out = np.empty((len(rows), dim), dtype=np.float32)
    for where, shard, local in pieces:
        out[where] = _shard_rows(shard)[local]
    return out


def _shard_rows(shard: Shard) -> npt.NDArray[np.floating[Any]]:
    # A file is memory-mapped, so that indexing it reads only the rows indexed.
    return np.load(shard, mmap_mode="r") if isinstance(shard, Path) else shard

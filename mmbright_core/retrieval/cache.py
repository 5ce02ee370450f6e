"""The on-disk embedding cache, keyed by content and by everything that changes a vector.

docs/protocol.md, What peer tools do differently: caches keyed by doc id reuse stale embeddings
after a change of model, revision, instruction, truncation or text. Here every vector is found by
the sha256 of its content (text, or image bytes) inside a folder named by the sha256 of the
encoder's settings (model, revision or checkpoint hash, truncation, prefix, normalisation, image
preprocessing...), so a change of any of them misses. Passage embeddings made for Task 2 are found
again for Task 4 because the key ignores the task.

Vectors are stored float32 by default, as the official caches are (``src/caching.py``,
``SmartCache.save`` keeps the encoder's float32 output; ``task4_pair.py`` ``_save_cache`` casts to
float32): float16 rounds nearby scores together and reorders near-ties, so it is an explicit
option (``dtype="float16"``) for users short of disk, recorded in the settings. The dtype is one
of the settings that name the folder, so a float16 cache is never read by a float32 run, and a
shard whose stored dtype is not the folder's is ignored. Vectors are handed out float32.

Vectors live in shards of many vectors. A shard is three files written atomically,
``<name>.vectors.npy`` (an ``(n, dim)`` array of the cache's dtype), ``<name>.keys.npy`` (its
n content keys) and then ``<name>.check.json``, the size, checksum, shape and dtype of the
other two (:mod:`mmbright_core.retrieval.verify`): a shard counts once its check file exists,
so an interrupted write leaves files without one, which are ignored (and overwritten when the
same shard is written again). A shard is checked against its record when a process first
sees it; one that does not match (truncated, shuffled, of another width or dtype, rows and
keys of different counts) is reported with its path, deleted, and its vectors encoded again,
never handed out. Vectors holding NaN or an infinity are refused before they are stored,
naming the model and the input. The index of keys is built from the keys files only; the
vectors are memory-mapped when gathered, so a full corpus (docs/protocol.md, The data as published:
millions of passages) is never read into memory whole, and a gather reads only the rows it returns.
Shards of the earlier two-file format, which recorded no checksum, are not read.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable, KeysView, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import numpy as np
import numpy.typing as npt
from tqdm.auto import tqdm

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text
from mmbright_core.retrieval.verify import (
    bytes_record,
    check_files,
    check_finite,
    describe_item,
    npy_layout,
    remove,
    report_damaged,
)

T = TypeVar("T")
Vectors = npt.NDArray[np.float32]
#: How cached vectors are stored on disk.
CacheDtype = Literal["float32", "float16"]
CACHE_DTYPES: tuple[str, ...] = get_args(CacheDtype)
#: The dtype of caches made before it was a setting.
_LEGACY_DTYPE = "float16"

#: Environment variable that moves the cache (an explicit argument wins over it).
CACHE_ENV = "MMBRIGHT_CACHE"
_SHARD_SIZE = 4096
_VECTORS, _KEYS, _CHECK = ".vectors.npy", ".keys.npy", ".check.json"


def default_cache_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """Return the cache root: ``override``, else ``$MMBRIGHT_CACHE``, else ``~/.cache/mmbright``."""
    if override is not None:
        return Path(override).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "mmbright"


def content_key(content: str | bytes) -> str:
    """Return the sha256 hex digest of a text (UTF-8) or of raw bytes."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


def settings_key(settings: Mapping[str, Any]) -> str:
    """Return the sha256 of the settings as canonical JSON (sorted keys)."""
    return content_key(json.dumps(settings, sort_keys=True, default=str))


_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def path_sha256(path: str | os.PathLike[str]) -> str:
    """Return the sha256 of a file, or of a folder's files (names and contents).

    Each file's digest is remembered per process by path, size and modification time, so a
    model folder is read once per change.

    Raises:
        InputError: ``path`` does not exist.
    """
    target = Path(path).expanduser().resolve()
    if not target.exists():
        raise InputError("model file or folder not found", found=str(target))
    if target.is_file():
        return _file_sha256(target)
    lines = [
        f"{p.relative_to(target).as_posix()} {_file_sha256(p)}"
        for p in sorted(target.rglob("*"))
        if p.is_file()
    ]
    return content_key("\n".join(lines))


def _file_sha256(path: Path) -> str:
    stat = path.stat()
    memo = (str(path), stat.st_size, stat.st_mtime_ns)
    if memo not in _FILE_DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _FILE_DIGESTS[memo] = digest.hexdigest()
    return _FILE_DIGESTS[memo]


def shard_name(keys: Sequence[str], prefix: str = "") -> str:
    """Return a shard's name: ``prefix`` and a digest of its keys.

    Storing the same keys again gives the same name, so a rewrite replaces the vectors an
    interrupted write left behind instead of adding a file beside them.
    """
    return prefix + content_key("\n".join(keys))[:32]


def check_dtype(dtype: str) -> CacheDtype:
    """Return ``dtype`` if it is a cache dtype (``float32`` or ``float16``).

    Raises:
        UnknownNameError: Any other name (with close matches).
    """
    if dtype not in CACHE_DTYPES:
        raise UnknownNameError("cache dtype", dtype, CACHE_DTYPES)
    return dtype  # type: ignore[return-value]


def stored_dtype(settings: Mapping[str, Any]) -> np.dtype[Any]:
    """Return the numpy dtype a cache folder's settings store vectors in."""
    return np.dtype(settings.get("dtype", _LEGACY_DTYPE))


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


class EmbeddingCache:
    """Vectors of one encoder configuration, on disk (or in memory when ``root`` is None).

    Args:
        root: The cache root (see :func:`default_cache_dir`), or None to keep nothing on disk.
        settings: Everything that changes the vectors; it names the cache folder.
        shard_size: How many new vectors go into one shard file.
        dtype: How vectors are stored: ``float32`` (the official caches' precision) or
            ``float16`` (half the disk; rounds scores, may reorder near-ties). It joins the
            settings, so the two never share a folder.
    """

    def __init__(
        self,
        root: Path | None,
        settings: Mapping[str, Any],
        shard_size: int = _SHARD_SIZE,
        dtype: str = "float32",
    ) -> None:
        self.settings = {**settings, "dtype": check_dtype(dtype)}
        self.dtype = stored_dtype(self.settings)
        self.folder = None if root is None else root / "embeddings" / settings_key(self.settings)
        self.shard_size = shard_size
        # The index: each key's row in the shards taken end to end, in the order found. A
        # shard is a vectors file (opened per gather: a process keeps no file handle per
        # shard) or, without a folder, an array in memory.
        self._rows: dict[str, int] = {}
        self._shards: list[Path | npt.NDArray[np.floating[Any]]] = []
        self._starts: list[int] = [0]
        self._seen: set[str] = set()
        self._dim: int | None = None

    def __len__(self) -> int:
        return len(self.keys())

    def keys(self) -> KeysView[str]:
        """Return the cached content keys, reading the keys files of shards new since last time."""
        self._refresh()
        return self._rows.keys()

    def _refresh(self) -> None:
        if self.folder is None or not self.folder.is_dir():
            return
        for path in sorted(self.folder.glob(f"*{_CHECK}")):
            name = path.name[: -len(_CHECK)]
            if name in self._seen:
                continue
            # A shard that does not match its record (or holds another precision, width or
            # count of keys) is never handed out: its keys count as missing, so they are
            # encoded again and the shard is rewritten.
            problem, keys, dim = shard_problem(self.folder, name, self.dtype, self._dim)
            if problem is not None:
                files = [self.folder / f"{name}{s}" for s in (_VECTORS, _KEYS, _CHECK)]
                report_damaged(files[0], problem)
                remove(files)
                continue
            self._seen.add(name)
            self._dim = dim
            self._add(self.folder / f"{name}{_VECTORS}", keys)

    def _add(self, shard: Path | npt.NDArray[np.floating[Any]], keys: list[str]) -> None:
        start = self._starts[-1]
        for row, key in enumerate(keys, start):
            self._rows.setdefault(key, row)  # a key stored twice keeps its first vector
        self._shards.append(shard)
        self._starts.append(start + len(keys))

    def _write_shard(self, keys: list[str], vectors: list[npt.NDArray[np.floating[Any]]]) -> None:
        if not keys:
            return
        if self.folder is None:
            self._add(np.stack(vectors).astype(self.dtype, copy=False), keys)
            return
        name = shard_name(keys)
        write_shard(self.folder, name, keys, np.stack(vectors), self.settings)
        if name not in self._seen:
            self._seen.add(name)
            self._add(self.folder / f"{name}{_VECTORS}", keys)

    def encode(
        self,
        items: Sequence[T],
        keys: Sequence[str],
        encode_batch: Callable[[list[T]], npt.ArrayLike],
        batch_size: int = 64,
        desc: str = "encoding",
    ) -> Vectors:
        """Return one float32 vector per item, encoding only items the cache lacks.

        Items with equal keys are encoded once. Every vector, new or cached, goes through the
        cache's dtype, so a first run and a rerun return identical vectors.

        Args:
            items: What to encode (texts, image loaders...).
            keys: Each item's content key (see :func:`content_key`), parallel to ``items``.
            encode_batch: Encodes a list of items into an ``(n, dim)`` array.
            batch_size: How many items one call of ``encode_batch`` gets.
            desc: The progress bar's label (the bar shows on terminals only).

        Returns:
            An ``(len(items), dim)`` float32 array.

        Raises:
            InputError: ``keys`` and ``items`` differ in length, the encoder returned a
                wrong number of vectors, or a vector holding NaN or an infinity (the message
                names the model and the input).
        """
        if len(keys) != len(items):
            raise InputError(
                "keys and items differ in length", found=f"{len(keys)} != {len(items)}"
            )
        cached = self.keys()
        first: dict[str, int] = {}
        for index, key in enumerate(keys):
            first.setdefault(key, index)
        todo = [key for key in first if key not in cached]
        pending_keys: list[str] = []
        pending: list[npt.NDArray[np.floating[Any]]] = []
        bar = tqdm(total=len(todo), desc=desc, unit="item", leave=False, disable=None)
        try:
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                given = [items[first[key]] for key in chunk]
                vectors = np.asarray(encode_batch(given))
                if vectors.ndim != 2 or vectors.shape[0] != len(chunk):
                    raise InputError(
                        "encoder returned a wrong number of vectors",
                        expected=f"shape ({len(chunk)}, dim)",
                        found=str(vectors.shape),
                    )
                with np.errstate(over="ignore"):  # an overflow to float16 is refused below
                    stored = vectors.astype(self.dtype)
                check_finite(stored, self.settings, partial(_describe, given))
                pending_keys.extend(chunk)
                pending.extend(stored)
                if len(pending) >= self.shard_size:
                    self._write_shard(pending_keys, pending)
                    pending_keys, pending = [], []
                bar.update(len(chunk))
        finally:
            bar.close()
            # Vectors finished before an interruption are complete entries: keep them.
            self._write_shard(pending_keys, pending)
        return self.lookup(keys)

    def lookup(self, keys: Sequence[str]) -> Vectors:
        """Return the cached vectors of ``keys`` as float32 (every key must be present).

        The rows are gathered shard by shard, in file order, from memory-mapped files: only
        the rows asked for are read, and only the float32 result is held in memory.

        Raises:
            KeyError: A key is not cached.
        """
        self._refresh()
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        rows = np.fromiter((self._rows[key] for key in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(rows, kind="stable")
        ranked = rows[order]
        bounds = np.searchsorted(ranked, self._starts).tolist()
        pieces = [
            (order[low:high], shard, ranked[low:high] - start)
            for shard, start, low, high in zip(
                self._shards, self._starts, bounds[:-1], bounds[1:], strict=False
            )
            if low < high
        ]
        dim = _vectors(pieces[0][1]).shape[1]
        out = np.empty((len(keys), dim), dtype=np.float32)
        for where, shard, local in pieces:
            out[where] = _vectors(shard)[local]
        return out


def _describe(items: Sequence[object], row: int) -> str:
    return describe_item(items[row])


def _vectors(shard: Path | npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.floating[Any]]:
    return np.load(shard, mmap_mode="r") if isinstance(shard, Path) else shard

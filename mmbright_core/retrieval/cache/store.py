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

Vectors live in shards of many vectors (:mod:`mmbright_core.retrieval.cache.shards`: three files
written atomically, each checked against its record when a process first sees it, a damaged
one reported, deleted and encoded again). The index of keys is built from the keys files only;
the vectors are memory-mapped when gathered, so a full corpus (docs/protocol.md, The data as
published: millions of passages) is never read into memory whole, and a gather reads only the
rows it returns.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, KeysView, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import numpy as np
import numpy.typing as npt
from tqdm.auto import tqdm

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.cache.shards import (
    Shard,
    gather,
    open_shard,
    shard_name,
    shard_names,
    stored_dtype,
    vectors_file,
    write_shard,
)
from mmbright_core.retrieval.cache.verify import checked_batch

T = TypeVar("T")
Vectors = npt.NDArray[np.float32]
#: How cached vectors are stored on disk.
CacheDtype = Literal["float32", "float16"]
CACHE_DTYPES: tuple[str, ...] = get_args(CacheDtype)

#: Environment variable that moves the cache (an explicit argument wins over it).
CACHE_ENV = "MMBRIGHT_CACHE"
_SHARD_SIZE = 4096


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


def check_dtype(dtype: str) -> CacheDtype:
    """Return ``dtype`` if it is a cache dtype (``float32`` or ``float16``).

    Raises:
        UnknownNameError: Any other name (with close matches).
    """
    if dtype not in CACHE_DTYPES:
        raise UnknownNameError("cache dtype", dtype, CACHE_DTYPES)
    return dtype  # type: ignore[return-value]


class EmbeddingCache:
    """Vectors of one encoder configuration, on disk (or in memory when ``root`` is None).

    Args:
        root: The cache root (see :func:`default_cache_dir`), or None to keep nothing on disk.
        settings: Everything that changes the vectors; it names the cache folder.
        shard_size: How many new vectors go into one shard file.
        dtype: How vectors are stored: ``float32`` (the official caches' precision) or
            ``float16`` (half the disk; rounds scores, may reorder near-ties). It joins the
            settings, so the two never share a folder.
        source: What makes the vectors, for messages (None: the model the settings name).
    """

    def __init__(
        self,
        root: Path | None,
        settings: Mapping[str, Any],
        shard_size: int = _SHARD_SIZE,
        dtype: str = "float32",
        source: str | None = None,
    ) -> None:
        self.settings = {**settings, "dtype": check_dtype(dtype)}
        self.source = source
        self.dtype = stored_dtype(self.settings)
        self.folder = None if root is None else root / "embeddings" / settings_key(self.settings)
        self.shard_size = shard_size
        # The index: each key's row in the shards taken end to end, in the order found. A
        # shard is a vectors file (opened per gather: a process keeps no file handle per
        # shard) or, without a folder, an array in memory.
        self._rows: dict[str, int] = {}
        self._shards: list[Shard] = []
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
        for name in shard_names(self.folder):
            if name in self._seen:
                continue
            opened = open_shard(self.folder, name, self.dtype, self._dim)
            if opened is None:
                continue  # damaged, reported and deleted: its keys are encoded again
            self._seen.add(name)
            keys, self._dim = opened
            self._add(vectors_file(self.folder, name), keys)

    def _add(self, shard: Shard, keys: list[str]) -> None:
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
            self._add(vectors_file(self.folder, name), keys)

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
                wrong number of vectors, vectors of another size than those cached, or a
                vector holding NaN or an infinity (the message names the model and the input).
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
        self._encode_missing(
            todo, [items[first[key]] for key in todo], encode_batch, batch_size, desc
        )
        return self.lookup(keys)

    def _encode_missing(
        self,
        keys: list[str],
        items: list[T],
        encode_batch: Callable[[list[T]], npt.ArrayLike],
        batch_size: int,
        desc: str,
    ) -> None:
        # Stored a shard at a time, so that a long encoding that is stopped keeps its work.
        pending_keys: list[str] = []
        pending: list[npt.NDArray[np.floating[Any]]] = []
        bar = tqdm(total=len(keys), desc=desc, unit="item", leave=False, disable=None)
        try:
            for start in range(0, len(keys), batch_size):
                given = items[start : start + batch_size]
                answer = encode_batch(given)
                checked = checked_batch(
                    answer, given, self.dtype, self.settings, self._dim, self.source
                )
                self._dim = checked.shape[1]  # every later batch and shard has this size
                pending.extend(checked)
                pending_keys.extend(keys[start : start + batch_size])
                if len(pending) >= self.shard_size:
                    self._write_shard(pending_keys, pending)
                    pending_keys, pending = [], []
                bar.update(min(batch_size, len(keys) - start))
        finally:
            bar.close()
            # Vectors finished before an interruption are complete entries: keep them.
            self._write_shard(pending_keys, pending)

    def lookup(self, keys: Sequence[str]) -> Vectors:
        """Return the cached vectors of ``keys`` as float32 (every key must be present).

        Only the rows asked for are read (:func:`~mmbright_core.retrieval.cache.shards.gather`).

        Raises:
            KeyError: A key is not cached.
        """
        self._refresh()
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        rows = np.fromiter((self._rows[key] for key in keys), dtype=np.int64, count=len(keys))
        return gather(self._shards, self._starts, rows)

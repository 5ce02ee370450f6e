"""The on-disk embedding cache, keyed by content and by everything that changes a vector.

SPEC §7: caches keyed by doc id reuse stale embeddings after a change of model, revision,
instruction, truncation or text. Here every vector is found by the sha256 of its content
(text, or image bytes) inside a folder named by the sha256 of the encoder's settings (model,
revision or checkpoint hash, truncation, prefix, normalisation, image preprocessing...), so a
change of any of them misses. Vectors are stored float16 and handed out float32, in shards of
many vectors per file, each shard written atomically: an interrupted encode leaves complete
shards only, and the rerun encodes only what they lack. Passage embeddings made for Task 2
are found again for Task 4 because the key ignores the task.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from tqdm.auto import tqdm

from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text

T = TypeVar("T")
Vectors = npt.NDArray[np.float32]

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


class EmbeddingCache:
    """Vectors of one encoder configuration, on disk (or in memory when ``root`` is None).

    Args:
        root: The cache root (see :func:`default_cache_dir`), or None to keep nothing on disk.
        settings: Everything that changes the vectors; it names the cache folder.
        shard_size: How many new vectors go into one shard file.
    """

    def __init__(
        self, root: Path | None, settings: Mapping[str, Any], shard_size: int = _SHARD_SIZE
    ) -> None:
        self.settings = dict(settings)
        self.folder = None if root is None else root / "embeddings" / settings_key(settings)
        self.shard_size = shard_size
        self._vectors: dict[str, npt.NDArray[np.float16]] = {}
        self._loaded = False

    def __len__(self) -> int:
        self._load()
        return len(self._vectors)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.folder is None or not self.folder.is_dir():
            return
        for shard in sorted(self.folder.glob("*.npz")):
            with np.load(shard) as stored:
                for key, vector in zip(stored["keys"].tolist(), stored["vectors"], strict=True):
                    self._vectors.setdefault(key, vector)

    def _write_shard(self, keys: list[str], vectors: list[npt.NDArray[np.float16]]) -> None:
        if self.folder is None or not keys:
            return
        if not (self.folder / "settings.json").exists():
            text = json.dumps(self.settings, indent=2, sort_keys=True, default=str)
            atomic_write_text(self.folder / "settings.json", text + "\n")
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(keys), vectors=np.stack(vectors))
        atomic_write_bytes(self.folder / f"{uuid.uuid4().hex}.npz", buffer.getvalue())

    def encode(
        self,
        items: Sequence[T],
        keys: Sequence[str],
        encode_batch: Callable[[list[T]], npt.ArrayLike],
        batch_size: int = 64,
        desc: str = "encoding",
    ) -> Vectors:
        """Return one float32 vector per item, encoding only items the cache lacks.

        Items with equal keys are encoded once. Every vector, new or cached, goes through
        float16, so a first run and a rerun return identical vectors.

        Args:
            items: What to encode (texts, image loaders...).
            keys: Each item's content key (see :func:`content_key`), parallel to ``items``.
            encode_batch: Encodes a list of items into an ``(n, dim)`` array.
            batch_size: How many items one call of ``encode_batch`` gets.
            desc: The progress bar's label (the bar shows on terminals only).

        Returns:
            An ``(len(items), dim)`` float32 array.

        Raises:
            InputError: ``keys`` and ``items`` differ in length, or the encoder returned a
                wrong number of vectors.
        """
        if len(keys) != len(items):
            raise InputError(
                "keys and items differ in length", found=f"{len(keys)} != {len(items)}"
            )
        self._load()
        first: dict[str, int] = {}
        for index, key in enumerate(keys):
            first.setdefault(key, index)
        todo = [key for key in first if key not in self._vectors]
        pending_keys: list[str] = []
        pending: list[npt.NDArray[np.float16]] = []
        bar = tqdm(total=len(todo), desc=desc, unit="item", leave=False, disable=None)
        try:
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                vectors = np.asarray(encode_batch([items[first[key]] for key in chunk]))
                if vectors.ndim != 2 or vectors.shape[0] != len(chunk):
                    raise InputError(
                        "encoder returned a wrong number of vectors",
                        expected=f"shape ({len(chunk)}, dim)",
                        found=str(vectors.shape),
                    )
                for key, vector in zip(chunk, vectors.astype(np.float16), strict=True):
                    self._vectors[key] = vector
                    pending_keys.append(key)
                    pending.append(vector)
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
        """Return the cached vectors of ``keys`` as float32 (every key must be present)."""
        self._load()
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[key] for key in keys]).astype(np.float32)

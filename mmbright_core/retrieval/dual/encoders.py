"""A retriever's corpus encoders: the jobs a local run encodes and the encoder of each role.

Encoding elsewhere (Ray workers) must give the very vectors of a local run, so a worker
rebuilds the retriever from its registered name and options
(:class:`~mmbright_core.retrieval.runner.ray_engine.EncoderSpec`) and encodes with that
retriever's own model, embedding cache settings and batch size. The caller chooses only
which items go together into one encoder call, and must choose them as the local path does:
transformer outputs may change in the last bits with the batch they were computed in.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mmbright_core.data.images import ImageDecodeError, ImageSource
from mmbright_core.retrieval.base import Retriever, passage_id
from mmbright_core.retrieval.cache.store import EmbeddingCache, content_key
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import TaskData

ONE_CALL = sys.maxsize
"""Items per call of a retriever whose one call holds every item its cache lacks: the local
path and the Ray engine's one shard alike hand the model every text at once."""


class BatchEncoder(Protocol):
    """One of a retriever's encoders, as the local path runs it.

    Attributes:
        cache: The embedding cache its vectors belong to (folder named by the settings).
        chunk: How many items the local path hands to one :meth:`encode` call.
        tokens: A bound on the text truncation, for :func:`cap_text` (0 for images).
    """

    cache: EmbeddingCache
    chunk: int
    tokens: int

    def encode(self, items: Sequence[Any], names: Sequence[str]) -> np.ndarray:
        """Return one float32 vector per item (texts, or image file bytes named by path)."""


@dataclass(frozen=True)
class EncodeJob:
    """One encoding a local run does over a corpus, listed so that it can run elsewhere.

    Attributes:
        role: ``text`` or ``image`` (which of the retriever's encoders).
        keys: Each item's content key, in the order the local run encodes them.
        items: Texts, or image file bytes, parallel to ``keys``.
        names: Image paths, parallel to ``keys`` (for messages); None for texts.
        prefix: The text put before every item (the dense retriever's document prefix).
    """

    role: str
    keys: list[str]
    items: list[Any]
    names: list[str] | None = None
    prefix: str = ""


@runtime_checkable
class CorpusEncoder(Retriever, Protocol):
    """A retriever whose corpus encoding can run elsewhere (the Ray engine): dense, clip.

    The engine asks it what a local run would encode, ships those items to workers, and
    there rebuilds the retriever by name to get the very encoder a local run uses.
    """

    def corpus_jobs(self, data: TaskData, source: ImageSource | None) -> list[EncodeJob]:
        """Return the encodings a local run of ``data`` does, in the local order."""
        ...

    def batch_encoder(self, role: str, prefix: str = "") -> BatchEncoder | None:
        """Return the encoder for ``role`` (texts with ``prefix``), or None if it has none."""
        ...


class CallEncoder:
    """A :class:`BatchEncoder` made of a cache, a call size, a token bound and a function.

    Args:
        cache: The embedding cache the vectors belong to.
        chunk: Items per call of the local path.
        tokens: A bound on the text truncation (0 for images).
        encode: Embeds one call's items (named by ``names``), uncached.
    """

    def __init__(
        self,
        cache: EmbeddingCache,
        chunk: int,
        tokens: int,
        encode: Callable[[Sequence[Any], Sequence[str]], np.ndarray],
    ) -> None:
        self.cache, self.chunk, self.tokens = cache, chunk, tokens
        self._encode = encode

    def encode(self, items: Sequence[Any], names: Sequence[str]) -> np.ndarray:
        """Return one float32 vector per item."""
        return self._encode(items, names)


def passage_jobs(data: TaskData, prefix: str = "") -> list[EncodeJob]:
    """Return the text job of a passage corpus: each passage once, in corpus order.

    Task 4 pairs share their passage's text; Task 3's corpus holds no text.
    """
    if not TASK_TABLE[data.task].corpus_text or not data.corpus:
        return []
    first: dict[str, str] = {}
    for doc in data.corpus:
        first.setdefault(passage_id(doc.doc_id), doc.text)
    texts = list(first.values())
    return [EncodeJob("text", [content_key(t) for t in texts], texts, prefix=prefix)]


def document_bytes(source: ImageSource, domain: str, path: str) -> bytes:
    """Return a corpus image's bytes.

    Raises:
        ImageDecodeError: The source has none (a task's corpus holds decodable images only,
            docs/protocol.md, Per-task protocol).
    """
    raw = source.document_image_bytes(domain, path)
    if raw is None:
        raise ImageDecodeError(path, "missing: the dataset has no bytes for this path")
    return raw

"""A retriever's corpus encoders, rebuilt from a picklable recipe wherever the work runs.

Encoding elsewhere (Ray workers) must give the very vectors of a local run, so a worker
rebuilds the retriever from its registered name and options and encodes with that
retriever's own model, embedding cache settings and batch size. The caller chooses only
which items go together into one encoder call, and must choose them as the local path does:
transformer outputs may change in the last bits with the batch they were computed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mmbright_core.data.images import decode_image
from mmbright_core.errors import InputError
from mmbright_core.retrieval.base import Retriever, get_retriever
from mmbright_core.retrieval.cache import EmbeddingCache
from mmbright_core.retrieval.textcap import DEFAULT_TOKEN_BOUND

ROLES = ("text", "image")


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


class _DenseText:
    """The dense retriever's text encoder (``DenseRetriever.encode_batch``)."""

    def __init__(self, retriever: Any, prefix: str) -> None:
        self.retriever, self.prefix = retriever, prefix
        self.cache = retriever._cache(prefix)
        self.chunk = retriever.chunk
        self.tokens = retriever.max_length or DEFAULT_TOKEN_BOUND

    def encode(self, items: Sequence[Any], names: Sequence[str]) -> np.ndarray:
        return self.retriever.encode_batch(list(items), self.prefix)


class _ClipEncoder:
    """The clip retriever's text or image encoder (``ClipRetriever.embed_*``)."""

    def __init__(self, retriever: Any, role: str) -> None:
        self.retriever, self.role = retriever, role
        self.cache = retriever._cache(role)
        self.chunk = retriever.batch_size
        self.tokens = retriever._context_length() if role == "text" else 0

    def encode(self, items: Sequence[Any], names: Sequence[str]) -> np.ndarray:
        if self.role == "text":
            return self.retriever.embed_texts(list(items))
        images = [decode_image(raw, name) for raw, name in zip(items, names, strict=True)]
        return self.retriever.embed_images(images)


@dataclass(frozen=True)
class EncoderSpec:
    """A picklable recipe for one encoder of a registered retriever.

    Attributes:
        retriever: The registered name (``dense`` or ``clip``).
        options: The retriever's options, as sorted ``(name, value)`` pairs.
        role: ``text`` or ``image``.
        prefix: The text prefix (the dense retriever's document or query prefix).
    """

    retriever: str
    options: tuple[tuple[str, Any], ...]
    role: str = "text"
    prefix: str = ""

    def build_retriever(self) -> Retriever:
        """Build the retriever with the recorded options."""
        return get_retriever(self.retriever, **dict(self.options))

    def build(self, retriever: Retriever | None = None) -> BatchEncoder:
        """Return the encoder (of ``retriever`` if given, else of a freshly built one).

        Raises:
            InputError: The retriever has no encoder for the role.
        """
        built: Any = retriever or self.build_retriever()
        if self.retriever == "dense" and self.role == "text":
            return _DenseText(built, self.prefix)
        if self.retriever == "clip" and self.role in ROLES:
            return _ClipEncoder(built, self.role)
        raise InputError(
            f"no {self.role} encoder to distribute for retriever {self.retriever!r}",
            expected="dense (text) or clip (text, image)",
            found=f"{self.retriever} ({self.role})",
        )

"""An embedder's raw vectors, cached by content: texts, images, joint inputs, corpus files.

:class:`CachedVectors` is the part of :class:`~mmbright_core.retrieval.dual.DualEncoderRetriever`
that turns inputs into the embedder's raw float32 vectors through the content-keyed embedding
cache (:mod:`mmbright_core.retrieval.cache`), keyed by the embedder's ``settings()`` (or its
``cache_settings``), the modality and the role, so that each fusion is computed from cached
parts and a killed run pays nothing twice. It also builds the document encoders the Ray
engine ships (:class:`~mmbright_core.retrieval.encoders.CallEncoder`), which write the same
cache. An image made in memory (the white stand-in of the official CLIP retrievers) is keyed
by its pixels (:func:`image_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import ImageLoader, LazyImages
from mmbright_core.data.images import decode_image
from mmbright_core.retrieval.base import ImageSource
from mmbright_core.retrieval.cache import CacheDtype, EmbeddingCache, content_key
from mmbright_core.retrieval.embedder import Embedder, JointEmbedder, Role, bind
from mmbright_core.retrieval.encoders import BatchEncoder, CallEncoder, document_bytes
from mmbright_core.types import TaskData


def image_key(image: Image.Image) -> str:
    """Return the sha256 of an image's mode, size and pixels (for images made in memory)."""
    header = f"{image.mode}:{image.width}x{image.height}:".encode()
    return content_key(header + image.tobytes())


def white_image() -> Image.Image:
    """Return the white placeholder image: RGB, 224x224, as every official CLIP retriever makes it.

    ``task2_multimodal.py`` ``retrieval_clip`` (a query without image), ``task3_image.py``
    ``retrieval_clip_it2i`` (``np.full((224, 224, 3), 255)``) and ``task4_pair.py``
    ``_safe_open_image(None)`` (``__NO_IMAGE__`` pairs and queries without image).
    """
    return Image.new("RGB", (224, 224), "white")


def asks_white(embedder: object) -> bool:
    """Whether ``embedder``'s recipe for its bound task puts the white image for a missing one.

    An embedder may say so with ``white_stand_in()`` (Jina-CLIP on Task 4,
    ``task4_pair.py`` ``retrieval_jina_clip_it2it``), whatever its fusion's own stand-in.
    """
    own = getattr(embedder, "white_stand_in", None)
    return bool(own()) if callable(own) else False


class CachedVectors:
    """An embedder's raw vectors through the embedding cache (set by the subclass's ``__init__``).

    Attributes:
        embedder: The model.
        cache_root: The embedding cache root.
        cache_dtype: How cached vectors are stored.
        batch_size: Items per embedder call.
    """

    embedder: Embedder
    cache_root: Path
    cache_dtype: CacheDtype
    batch_size: int

    def _cache(self, modality: str, role: Role) -> EmbeddingCache:
        custom = getattr(self.embedder, "cache_settings", None)
        settings: Mapping[str, Any] = (
            custom(modality, role)
            if callable(custom)
            else {"embedder": self.embedder.settings(), "modality": modality, "role": role}
        )
        # An embedder whose answers are paid for writes after every request (api).
        shard = getattr(self.embedder, "cache_shard_size", None)
        sized = {} if shard is None else {"shard_size": int(shard)}
        return EmbeddingCache(self.cache_root, dict(settings), dtype=self.cache_dtype, **sized)

    def bind(self, task: int | None, domain: str | None) -> None:
        """Bind the embedder to a task and domain, if it takes them (``BoundEmbedder``).

        The Ray engine's workers call this before they build their encoders, so that their
        cache keys (the bound settings) are those of the local run.
        """
        bind(self.embedder, task, domain)

    @contextmanager
    def bound(self, data: TaskData) -> Iterator[None]:
        """Bind the embedder to ``data``'s task and domain while the block runs."""
        self.bind(data.task, data.domain)
        try:
            yield
        finally:
            self.bind(None, None)  # settings() then describe the run, not one domain

    def _text_batch(self, role: Role) -> Callable[[list[str]], np.ndarray]:
        return lambda chunk: self.embed_texts(chunk, role)

    def embed_texts(self, texts: Sequence[str], role: Role = "document") -> np.ndarray:
        """Embed one batch of texts, uncached: the embedder's raw float32 vectors."""
        return np.asarray(self.embedder.encode_texts(list(texts), role), dtype=np.float32)

    def embed_images(self, images: Sequence[Image.Image], role: Role = "document") -> np.ndarray:
        """Embed one batch of images, uncached: the embedder's raw float32 vectors.

        ``images`` may be :class:`LazyImages`, passed on as they are: the embedder decodes
        them one at a time as it preprocesses them.
        """
        return np.asarray(self.embedder.encode_images(images, role), dtype=np.float32)

    def encode_texts(self, texts: Sequence[str], role: Role = "document") -> np.ndarray:
        """Return raw float32 text vectors for ``role``, cached by content."""
        keys = [content_key(t) for t in texts]
        cache = self._cache("text", role)
        batch = self._text_batch(role)
        return cache.encode(list(texts), keys, batch, self.batch_size, desc="texts")

    def encode_images(
        self, loaders: Sequence[ImageLoader], keys: Sequence[str], role: Role = "document"
    ) -> np.ndarray:
        """Return raw float32 image vectors, cached; loaders run only on cache misses."""

        def batch(chunk: list[ImageLoader]) -> np.ndarray:
            return self.embed_images(LazyImages(chunk), role)

        cache = self._cache("image", role)
        return cache.encode(loaders, keys, batch, self.batch_size, desc="images")

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Role
    ) -> np.ndarray:
        """Return raw joint vectors of (text, image) inputs (``joint`` rule), cached."""
        embedder = self.embedder
        assert isinstance(embedder, JointEmbedder)  # checked when built
        items = list(zip(texts, images, strict=True))
        keys = [
            content_key(f"{content_key(t)}:{'none' if im is None else image_key(im)}")
            for t, im in items
        ]

        def batch(chunk: list[tuple[str, Image.Image | None]]) -> np.ndarray:
            pairs = list(zip(*chunk, strict=True))
            out = embedder.encode_joint(list(pairs[0]), list(pairs[1]), role)
            return np.asarray(out, dtype=np.float32)

        cache = self._cache("joint", role)
        return cache.encode(items, keys, batch, self.batch_size, desc="joint")

    def document_image_vectors(
        self, domain: str, paths: Sequence[str], source: ImageSource
    ) -> np.ndarray:
        """Return the raw vectors of corpus images (by path), cached by their bytes.

        Raises:
            ImageDecodeError: The source has no bytes for a path.
        """
        raws = [document_bytes(source, domain, path) for path in paths]
        loaders = [partial(decode_image, raw, path) for raw, path in zip(raws, paths, strict=True)]
        return self.encode_images(loaders, [content_key(raw) for raw in raws])

    def white_vector(self) -> np.ndarray:
        """Return the raw vector of the white image, as a ``(1, dim)`` array (cached)."""
        return self.encode_images([white_image], [image_key(white_image())])

    def batch_encoder(self, role: str, prefix: str = "") -> BatchEncoder | None:
        """Return the document text or image encoder (image items are file bytes)."""
        if role == "text":
            batch = self._text_batch("document")
            return CallEncoder(
                self._cache("text", "document"),
                self.batch_size,
                self.text_tokens(),
                lambda items, _: batch(list(items)),
            )
        if role == "image":
            return CallEncoder(
                self._cache("image", "document"), self.batch_size, 0, self._embed_files
            )
        return None

    def text_tokens(self) -> int:
        """Return a bound on the text truncation for shipping texts (0: ship them whole)."""
        return 0

    def _embed_files(self, items: Sequence[bytes], names: Sequence[str]) -> np.ndarray:
        loaders = [partial(decode_image, raw, n) for raw, n in zip(items, names, strict=True)]
        return self.embed_images(LazyImages(loaders))

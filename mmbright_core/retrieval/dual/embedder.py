"""The embedder protocol: what a model provides for the package to run it as a retriever.

A dual-encoder model (a sentence-transformers or transformers model, an MTEB model, an
OpenAI-compatible endpoint, a researcher's own) only turns texts and images into vectors.
Everything else the protocol of docs/protocol.md asks for is the package's: which query
image is read (the image policy), how a query's text and image vectors are fused (the named
rules of :mod:`mmbright_core.retrieval.dual.fusion`), Task 4's pairs, the content-keyed embedding
cache, exclusions before the top-k cut, the ranking rule and the Ray engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from PIL import Image

Role = Literal["query", "document"]
"""Which side of retrieval a text or image is encoded for (instructions and prompts differ)."""

Modality = Literal["text", "image"]


@runtime_checkable
class Embedder(Protocol):
    """A model that encodes texts, and possibly images, into vectors.

    Attributes:
        name: A short name for output folders and labels (``gte-qwen2-7b``...).
        modalities: What it encodes: ``{"text"}`` or ``{"text", "image"}``.
        fusion: The name of the rule in :mod:`mmbright_core.retrieval.dual.fusion` that makes
            one vector of a query's text and image (and of a Task 4 pair).
    """

    name: str
    modalities: frozenset[Modality]
    fusion: str

    def settings(self) -> dict[str, Any]:
        """Return every setting that changes a vector, as JSON-serialisable values.

        The model id and revision or checkpoint hash, pooling, maximum length, instructions
        or prompts per role, dtype...: these key the embedding cache and are recorded in the
        run's ``config.json``.
        """
        ...

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return one raw (not normalised) float32 vector per text, for ``role``.

        The embedder applies its own instruction or prompt for the role.
        """
        ...

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return one raw float32 vector per image (only when ``"image"`` is a modality)."""
        ...


@runtime_checkable
class BoundEmbedder(Embedder, Protocol):
    """An embedder whose vectors depend on the task and domain it encodes for.

    A ``{domain}`` in an instruction (BRIGHT's per-domain configs) or MTEB's task metadata
    (its prompts are resolved per task) need them. The package calls :meth:`bind` before it
    encodes a domain and ``bind(None, None)`` after; while bound, ``settings()`` must name
    what the binding changes (the filled instruction's domain, MTEB's task), since those
    settings key the embedding cache.
    """

    def bind(self, task: int | None, domain: str | None) -> None:
        """Encode for ``task`` on ``domain`` from now on (None, None: for no domain)."""
        ...


def bind(embedder: Embedder, task: int | None, domain: str | None) -> None:
    """Bind ``embedder`` to a task and domain if it takes them (see :class:`BoundEmbedder`)."""
    if isinstance(embedder, BoundEmbedder):
        embedder.bind(task, domain)


@runtime_checkable
class JointEmbedder(Embedder, Protocol):
    """An embedder that encodes a text and an image together (GME, BGE-VL: fusion ``joint``)."""

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Role
    ) -> np.ndarray:
        """Return one raw float32 vector per (text, image) input; None: the text alone."""
        ...

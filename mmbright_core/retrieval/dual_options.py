"""The options every model backend hands its dual encoder, gathered once.

A model backend (``clip``, ``hf``, ``mteb``, ``remote``) builds an embedder from its own
options and runs it under :class:`~mmbright_core.retrieval.dual.DualEncoderRetriever`, whose
options are the same for all of them: which query images are read, what a query without one
gets, where vectors are cached, in what precision, and how they are indexed.
:class:`DualOptions` carries those from the factory to the dual encoder in one piece.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mmbright_core.retrieval.dual import DualEncoderRetriever
from mmbright_core.retrieval.embedder import Embedder
from mmbright_core.retrieval.index import IndexKind


@dataclass(frozen=True)
class DualOptions:
    """How a dual encoder reads query images and caches and indexes vectors.

    Positional in this order (a factory's options, as it names them), so a factory builds
    it in one line.

    Attributes:
        image_policy: Which query images are read (``first``: the released ``images[0]``).
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE``).
        index: Vector index kind (``flat`` exact; ``hnsw`` or ``ivf`` approximate).
        cache_dtype: How cached vectors are stored: ``float32`` or ``float16``.
        batch_size: Items per encoder call.
        no_image: What a query without a decodable image gets (None: the fusion's default).
    """

    image_policy: str = "first"
    cache_dir: str | None = None
    index: IndexKind = "flat"
    cache_dtype: str = "float32"
    batch_size: int = 32
    no_image: str | None = None

    def keywords(self) -> dict[str, Any]:
        """Return the options as :class:`DualEncoderRetriever`'s keywords."""
        return asdict(self)

    def build(self, embedder: Embedder, name: str) -> DualEncoderRetriever:
        """Return the dual encoder that runs ``embedder`` as the retriever ``name``."""
        return DualEncoderRetriever(embedder, name=name, **self.keywords())

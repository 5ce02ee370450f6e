"""CLIP-style dual encoders through open_clip (tasks 1-4), fused as the official harness fuses.

The official CLIP retrievers (``src/retrievers/task2_multimodal.py`` ``retrieval_clip``,
``task3_image.py`` ``retrieval_clip_it2i``, ``task4_pair.py`` ``retrieval_clip_it2it``) add the
RAW outputs of ``get_text_features`` and ``get_image_features`` (projected, not normalised),
halve the sum and L2-normalise it: each tower weighs by its own norm. Normalising each side
first would weigh them 1:1, a different model with different numbers (docs/protocol.md, Fusion
rules). So here:

- query: L2-normalise((raw text + raw image) / 2), the image under the recorded policy;
- Task 1-2 passages: L2-normalise(raw text); Task 3 images: L2-normalise(raw image);
- Task 4 pairs: L2-normalise((raw passage text + raw image) / 2), with the official white
  224x224 RGB image for ``__NO_IMAGE__`` (``task4_pair.py`` ``_safe_open_image(None)``);
- score: 100 x the dot product of the normalised vectors (``task2_multimodal.py``
  ``(query_emb @ doc_emb.T) * 100``, ``task3_image.py`` ``scale=100.0``, ``task4_pair.py``
  ``_compute_topk_scores_chunked`` ``* 100.0``).

The embedding cache keeps the RAW vectors, so every fusion is computed from cached parts. Texts
are truncated to the model's context (77 tokens for CLIP: the official processors truncate with
``max_length=77``, keeping the end-of-text token, as open_clip's tokenizer does). A query with
several images uses ``first`` by default (the released code's ``images[0]``, the first image
that decoded, which produced the published runs); ``concat`` (the paper, MTEB) and ``all`` (the
mean of the raw image embeddings, no official counterpart) are options. A query with no
decodable image gets the white 224x224 image, as every official CLIP retriever does, or, if
asked, its text alone.

The machinery (image policy, fusion, Task 4 pairs, cache, Ray) is
:class:`~mmbright_core.retrieval.dual.encoder.DualEncoderRetriever`'s, the open_clip model
:class:`~mmbright_core.retrieval.backends.open_clip_model.OpenClipEmbedder`'s; this module is the
backend's options. Its fusion is ``raw-mean``
(:mod:`~mmbright_core.retrieval.dual.fusion`), recorded under its earlier name
``mean-raw-then-l2`` so that runs made before keep their configuration.

Known departures: the official code runs Hugging Face's ``CLIPModel``/``CLIPProcessor``, here
open_clip runs the same checkpoint with the same activation (QuickGELU for ``openai`` tags,
:class:`~mmbright_core.retrieval.backends.open_clip_model.OpenClipEmbedder`; its ``encode_text`` /
``encode_image`` are the projected features ``get_text_features`` / ``get_image_features``
return; preprocessing may differ in the last bits of resizing). The ``clip`` preset therefore
runs ``openai/clip-vit-large-patch14`` on the ``hf`` backend, the official path itself
(:mod:`~mmbright_core.retrieval.backends.hf_clip`); this backend is for open_clip's own models. The
official Task 4 retriever also applies ``ImageOps.exif_transpose``
to pair and query images (``task4_pair.py`` ``_safe_open_image``), which tasks 2-3 do not; here
no task rotates by EXIF orientation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.errors import require
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.backends.open_clip_model import (
    AUTO_PRETRAINED,
    OpenClipEmbedder,
    resolve_pretrained,
)
from mmbright_core.retrieval.dual.embedder import Role
from mmbright_core.retrieval.dual.encoder import (
    DualEncoderRetriever,
    DualOptions,
    image_key,
    white_image,
)
from mmbright_core.retrieval.search.index import IndexKind

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RebuildContext, RunConfig

__all__ = ["FUSION", "ClipRetriever", "image_key", "white_image"]

#: The recorded fusion: mean of the raw embeddings, then L2 (the ``raw-mean`` rule).
FUSION = "mean-raw-then-l2"


class ClipRetriever(DualEncoderRetriever):
    """open_clip dual-encoder retrieval with the official text+image fusion (``raw-mean``).

    Args:
        model: An open_clip model name (``ViT-L-14``) or ``local-dir:<folder>`` (a folder with
            ``open_clip_config.json`` and its weights).
        pretrained: A pretrained tag (``openai``), a local checkpoint file, or ``none`` for
            random weights (seeded by ``seed``; for wiring tests, never for quality). The
            default, ``auto``, is ``openai`` for a named model and the folder's own weights
            for ``local-dir:``, which takes no other.
        image_policy: ``first`` (the default: the released code, which made the published
            runs), ``concat`` (the paper, MTEB) or ``all``.
        no_image: ``white`` (a white image, the default) or ``text`` (text embedding only).
        seed: Seed of random weights.
        batch_size: Items per encoder call.
        device: Torch device (``cpu``, ``cuda``).
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        index: Vector index kind (``flat`` exact, by BLAS; ``hnsw`` or ``ivf`` approximate, faiss).
        cache_dtype: How cached embeddings are stored: ``float32`` (the official precision)
            or ``float16`` (half the disk; may reorder near-ties).
    """

    name = "clip"
    tasks = BACKENDS["clip"].tasks

    def __init__(
        self,
        model: str = BACKENDS["clip"].default_model,
        pretrained: str | None = AUTO_PRETRAINED,
        image_policy: str = "first",
        no_image: str = "white",
        seed: int = 0,
        batch_size: int = 32,
        device: str = "cpu",
        cache_dir: str | None = None,
        index: IndexKind = "flat",
        cache_dtype: str = "float32",
    ) -> None:
        self.clip = OpenClipEmbedder(model, resolve_pretrained(model, pretrained), seed, device)
        store = DualOptions(image_policy, cache_dir, index, cache_dtype, batch_size, no_image)
        super().__init__(self.clip, name="clip", **store.keywords())
        self.model, self.pretrained = self.clip.model, self.clip.pretrained
        self.seed, self.device = seed, device

    def settings(self) -> dict[str, Any]:
        """Return model identity, query image handling and fusion (under its recorded name)."""
        return {**super().settings(), "fusion": FUSION}

    def _load(self) -> tuple[Any, Any, Any]:
        return self.clip.load()

    def _context_length(self) -> int:
        return self.clip.context_length()

    def text_tokens(self) -> int:
        """Return the context length: texts are capped to it before they are shipped."""
        return self.clip.context_length()

    def _text_batch(self, role: Role) -> Callable[[list[str]], np.ndarray]:
        # CLIP's vectors do not depend on the role: ``embed_texts`` is called as one call
        # per batch whatever the role, the seam its tests count calls at.
        return lambda chunk: self.embed_texts(chunk)


def rebuild(config: RunConfig, options: dict[str, Any], context: RebuildContext) -> dict[str, Any]:
    """Return the options that rebuild a run's ``clip`` from its configuration."""
    seed = re.match(r"random:seed=(-?\d+):", str(options["weights"]))
    return {
        "model": config.model,
        "pretrained": config.revision or "none",  # None was recorded for random weights
        "seed": int(seed.group(1)) if seed else 0,
        "image_policy": config.image_policy,
        "no_image": config.no_image,
        "index": options["index"],
        "cache_dtype": options["cache_dtype"],
        "cache_dir": context.cache_dir,
        "device": context.device,
    }


def pretrained_tags(model: str) -> list[str]:
    """Return the pretrained tags open_clip's registry knows for ``model`` (``openai``...).

    Raises:
        MissingDependencyError: open_clip is not installed (the ``clip`` extra).
    """
    open_clip = require("open_clip", "the clip retriever", "clip")
    tags: list[str] = open_clip.list_pretrained_tags_by_model(model)
    return tags

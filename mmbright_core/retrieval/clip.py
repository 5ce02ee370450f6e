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
:class:`~mmbright_core.retrieval.dual.DualEncoderRetriever`'s; this module is the open_clip
:class:`OpenClipEmbedder` and its options. Its fusion is ``raw-mean``
(:mod:`~mmbright_core.retrieval.fusion`), recorded under its earlier name
``mean-raw-then-l2`` so that runs made before keep their configuration.

Known departures: the official code runs Hugging Face's ``CLIPModel``/``CLIPProcessor``, here
open_clip runs the same checkpoint (its ``encode_text``/``encode_image`` are the projected
features ``get_text_features``/``get_image_features`` return; preprocessing may differ in the
last bits of resizing). The official Task 4 retriever also applies ``ImageOps.exif_transpose``
to pair and query images (``task4_pair.py`` ``_safe_open_image``), which tasks 2-3 do not; here
no task rotates by EXIF orientation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import each_preprocessed
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import require
from mmbright_core.retrieval.cache import path_sha256
from mmbright_core.retrieval.dual import DualEncoderRetriever
from mmbright_core.retrieval.dual_vectors import image_key, white_image
from mmbright_core.retrieval.embedder import Modality, Role
from mmbright_core.retrieval.index import IndexKind
from mmbright_core.retrieval.model_files import (
    FILE_HINT,
    check_open_clip_folder,
    check_weights_file,
    looks_like_file,
    model_files,
)
from mmbright_core.retrieval.textcap import cap_text

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RunConfig
    from mmbright_core.retrieval.rebuild import RebuildContext

__all__ = ["AUTO_PRETRAINED", "FUSION", "ClipRetriever", "OpenClipEmbedder", "image_key"]
__all__ += ["white_image"]

_LOCAL_DIR = "local-dir:"
#: The default ``pretrained``: ``openai`` for a named model, the folder's own weights for
#: ``local-dir:`` (whose checkpoint open_clip finds itself, ignoring ``pretrained``).
AUTO_PRETRAINED = "auto"
_HUB_DEFAULT = "openai"
#: The recorded fusion: mean of the raw embeddings, then L2 (the ``raw-mean`` rule).
FUSION = "mean-raw-then-l2"
_WHAT = "the open_clip model"
_LOAD_HINT = (
    "Use a local checkpoint file, a local-dir: folder, or weights already in the local cache "
    "(no downloads at run time)."
)


class OpenClipEmbedder:
    """An open_clip model as an :class:`~mmbright_core.retrieval.embedder.Embedder`.

    Its vectors are the raw projected features (``encode_text``, ``encode_image``), the same
    for both roles: CLIP takes no instruction.

    Args:
        model: An open_clip model name or ``local-dir:<folder>``.
        pretrained: A resolved pretrained tag or checkpoint file; None: random or the folder's.
        seed: Seed of random weights.
        device: Torch device.
    """

    modalities: frozenset[Modality] = frozenset({"text", "image"})
    fusion = "raw-mean"

    def __init__(self, model: str, pretrained: str | None, seed: int, device: str) -> None:
        self.model, self.pretrained, self.seed, self.device = model, pretrained, seed, device
        self.name = _label(model, pretrained)
        self._loaded: tuple[Any, Any, Any] | None = None

    def checkpoint(self) -> str | None:
        """Return the sha256 of local weights (a local-dir: folder or checkpoint file)."""
        if self.model.startswith(_LOCAL_DIR):
            return path_sha256(self.model[len(_LOCAL_DIR) :])
        if self.pretrained is not None and Path(self.pretrained).expanduser().is_file():
            return path_sha256(self.pretrained)
        return None

    def weights(self) -> str:
        """Return what the vectors depend on: a hash, a pretrained tag, or the seeded init.

        Random weights' values also depend on the torch and open_clip versions.
        """
        if self.pretrained is None and not self.model.startswith(_LOCAL_DIR):
            open_clip = require("open_clip", "the clip retriever", "clip")
            torch = require("torch", "the clip retriever", "clip")
            versions = f"torch={torch.__version__}:open_clip={open_clip.__version__}"
            return f"random:seed={self.seed}:{versions}"
        return self.checkpoint() or str(self.pretrained)

    def settings(self) -> dict[str, Any]:
        """Return model identity and the text truncation (the context length)."""
        return {
            "model": self.model,
            "revision": self.pretrained,
            "checkpoint_sha256": self.checkpoint(),
            "weights": self.weights(),
            "truncation": self.context_length(),
        }

    def cache_settings(self, modality: str, role: Role) -> dict[str, Any]:
        """Return the cache key: the same for both roles (CLIP takes no instruction)."""
        settings: dict[str, Any] = {
            "encoder": "open_clip",
            "model": self.model,
            "weights": self.weights(),
            "role": modality,
            "output": "raw",  # projected features, not normalised: the fusion needs their norm
        }
        if modality == "text":
            settings["truncation"] = self.context_length()
        else:
            settings["preprocess"] = repr(self.load()[1])
        return settings

    def context_length(self) -> int:
        """Return the text tower's context length (77 for CLIP)."""
        open_clip = require("open_clip", "the clip retriever", "clip")
        if self.model.startswith(_LOCAL_DIR):
            return int(self.load()[2].context_length)
        config = open_clip.get_model_config(self.model)
        if config is None:
            raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
        return int(config.get("text_cfg", {}).get("context_length", 77))

    def load(self) -> tuple[Any, Any, Any]:
        """Return the model, its image preprocessing and its tokenizer (loaded once)."""
        if self._loaded is None:
            open_clip = require("open_clip", "the clip retriever", "clip")
            torch = require("torch", "the clip retriever", "clip")
            if not self.model.startswith(_LOCAL_DIR) and self.model not in open_clip.list_models():
                raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
            source, hint = self._check_files()
            with model_files(_WHAT, source, hint), torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)  # random weights reproduce across runs
                model, _, preprocess = open_clip.create_model_and_transforms(
                    self.model, pretrained=self.pretrained, device=self.device
                )
            model.eval()
            self._loaded = (model, preprocess, open_clip.get_tokenizer(self.model))
        return self._loaded

    def _check_files(self) -> tuple[str, str]:
        """Check local files before open_clip reads them; return what is read, and a hint."""
        if self.model.startswith(_LOCAL_DIR):
            folder = Path(self.model[len(_LOCAL_DIR) :]).expanduser()
            check_open_clip_folder(folder)
            return str(folder), FILE_HINT
        if self.pretrained is not None and looks_like_file(self.pretrained):
            check_weights_file(Path(self.pretrained).expanduser())
            return self.pretrained, FILE_HINT
        return f"{self.model} / {self.pretrained}", _LOAD_HINT

    def encode_texts(self, texts: Sequence[str], role: Role = "document") -> np.ndarray:
        """Return raw ``encode_text`` output, not normalised.

        Texts are capped first (:func:`cap_text` changes no token), then truncated by the
        tokenizer to the context length with the end-of-text token kept last.
        """
        model, _, tokenizer = self.load()
        torch = require("torch", "the clip retriever", "clip")
        tokens = self.context_length()
        with torch.no_grad():
            vectors = model.encode_text(
                tokenizer([cap_text(t, tokens) for t in texts]).to(self.device)
            )
        return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)

    def encode_images(self, images: Sequence[Image.Image], role: Role = "document") -> np.ndarray:
        """Return raw ``encode_image`` output of images (decoded one at a time if lazy)."""
        model, preprocess, _ = self.load()
        torch = require("torch", "the clip retriever", "clip")
        pixels = torch.stack(each_preprocessed(images, preprocess)).to(self.device)
        with torch.no_grad():
            vectors = model.encode_image(pixels)
        return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)


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
    tasks = frozenset({1, 2, 3, 4})

    def __init__(
        self,
        model: str = "ViT-L-14",
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
        self.clip = OpenClipEmbedder(model, _resolve_pretrained(model, pretrained), seed, device)
        super().__init__(
            self.clip,
            name="clip",
            image_policy=image_policy,
            no_image=no_image,
            cache_dir=cache_dir,
            index=index,
            cache_dtype=cache_dtype,
            batch_size=batch_size,
        )
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


def _label(model: str, pretrained: str | None) -> str:
    """Return ``<model>-<pretrained>`` (``ViT-L-14-openai``; ``random`` for no weights)."""
    if model.startswith(_LOCAL_DIR):
        return Path(model[len(_LOCAL_DIR) :]).name
    tag = "random" if pretrained is None else Path(pretrained).stem
    return f"{model}-{tag}"


def _resolve_pretrained(model: str, pretrained: str | None) -> str | None:
    # None, "" and "none" mean random weights; "auto" the model's natural weights.
    local = model.startswith(_LOCAL_DIR)
    if pretrained == AUTO_PRETRAINED:
        return None if local else _HUB_DEFAULT
    chosen = None if pretrained in (None, "", "none") else pretrained
    if local and chosen is not None:
        raise InputError(
            "a local-dir: model carries its own weights",
            found=f"pretrained={pretrained!r}",
            hint="Leave --pretrained out.",
        )
    return chosen


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

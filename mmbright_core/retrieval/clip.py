"""CLIP-style dual encoders through open_clip (tasks 1-4), fused as the official harness fuses.

The official CLIP retrievers (``src/retrievers/task2_multimodal.py`` ``retrieval_clip``,
``task3_image.py`` ``retrieval_clip_it2i``, ``task4_pair.py`` ``retrieval_clip_it2it``) add the
RAW outputs of ``get_text_features`` and ``get_image_features`` (projected, not normalised),
halve the sum and L2-normalise it: each tower weighs by its own norm. Normalising each side
first would weigh them 1:1, a different model with different numbers (SPEC §3). So here:

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

Known departures: the official code runs Hugging Face's ``CLIPModel``/``CLIPProcessor``, here
open_clip runs the same checkpoint (its ``encode_text``/``encode_image`` are the projected
features ``get_text_features``/``get_image_features`` return; preprocessing may differ in the
last bits of resizing). The official Task 4 retriever also applies ``ImageOps.exif_transpose``
to pair and query images (``task4_pair.py`` ``_safe_open_image``), which tasks 2-3 do not; here
no task rotates by EXIF orientation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.images import (
    POLICIES,
    ImageDecodeError,
    QueryImages,
    decode_image,
    query_images,
)
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import ImageSource, check_k, check_task, passage_id, require
from mmbright_core.retrieval.cache import (
    EmbeddingCache,
    check_dtype,
    content_key,
    default_cache_dir,
    path_sha256,
)
from mmbright_core.retrieval.encoders import (
    BatchEncoder,
    CallEncoder,
    EncodeJob,
    document_bytes,
    passage_jobs,
)
from mmbright_core.retrieval.index import Groups, IndexKind, l2_normalise, rank_vectors
from mmbright_core.retrieval.textcap import cap_text
from mmbright_core.types import Query, TaskData

ImageLoader = Callable[[], Image.Image]
_LOCAL_DIR = "local-dir:"
_NO_IMAGE_MODES = ("white", "text")
#: The default ``pretrained``: ``openai`` for a named model, the folder's own weights for
#: ``local-dir:`` (whose checkpoint open_clip finds itself, ignoring ``pretrained``).
AUTO_PRETRAINED = "auto"
_HUB_DEFAULT = "openai"
#: The recorded fusion: mean of the raw embeddings, then L2 (see the module docstring).
FUSION = "mean-raw-then-l2"
# What open_clip's factory (``_find_checkpoint_in_dir``) loads from a local-dir: folder.
_CHECKPOINT_SUFFIXES = (".safetensors", ".bin", ".pth")


def image_key(image: Image.Image) -> str:
    """Return the sha256 of an image's mode, size and pixels (for images made in memory)."""
    header = f"{image.mode}:{image.width}x{image.height}:".encode()
    return content_key(header + image.tobytes())


def _same(image: Image.Image) -> Image.Image:
    return image


def white_image() -> Image.Image:
    """Return the white placeholder image: RGB, 224x224, as every official CLIP retriever makes it.

    ``task2_multimodal.py`` ``retrieval_clip`` (a query without image), ``task3_image.py``
    ``retrieval_clip_it2i`` (``np.full((224, 224, 3), 255)``) and ``task4_pair.py``
    ``_safe_open_image(None)`` (``__NO_IMAGE__`` pairs and queries without image).
    """
    return Image.new("RGB", (224, 224), "white")


class ClipRetriever:
    """open_clip dual-encoder retrieval with the official text+image fusion.

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
        if image_policy not in POLICIES:
            raise UnknownNameError("image policy", image_policy, POLICIES)
        if no_image not in _NO_IMAGE_MODES:
            raise UnknownNameError("no-image mode", no_image, _NO_IMAGE_MODES)
        self.model = model
        self.pretrained = _resolve_pretrained(model, pretrained)
        self.image_policy, self.no_image, self.seed = image_policy, no_image, seed
        self.batch_size, self.device, self.index = batch_size, device, index
        self.cache_dtype = check_dtype(cache_dtype)
        self.cache_root = default_cache_dir(cache_dir)
        self._loaded: tuple[Any, Any, Any] | None = None

    def label(self) -> str:
        """Return ``<model>-<pretrained>`` (``ViT-L-14-openai``; ``random`` for no weights)."""
        if self.model.startswith(_LOCAL_DIR):
            return Path(self.model[len(_LOCAL_DIR) :]).name
        tag = "random" if self.pretrained is None else Path(self.pretrained).stem
        return f"{self.model}-{tag}"

    def _checkpoint(self) -> str | None:
        if self.model.startswith(_LOCAL_DIR):
            return path_sha256(self.model[len(_LOCAL_DIR) :])
        if self.pretrained is not None and Path(self.pretrained).expanduser().is_file():
            return path_sha256(self.pretrained)
        return None

    def _weights(self) -> str:
        # What the vectors depend on: a hash, a pretrained tag, or the seeded random init
        # (whose values also depend on the torch and open_clip versions).
        if self.pretrained is None and not self.model.startswith(_LOCAL_DIR):
            open_clip = require("open_clip", "the clip retriever", "clip")
            torch = require("torch", "the clip retriever", "clip")
            versions = f"torch={torch.__version__}:open_clip={open_clip.__version__}"
            return f"random:seed={self.seed}:{versions}"
        return self._checkpoint() or str(self.pretrained)

    def settings(self) -> dict[str, Any]:
        """Return model identity, query image handling and fusion."""
        return {
            "model": self.model,
            "revision": self.pretrained,
            "checkpoint_sha256": self._checkpoint(),
            "weights": self._weights(),
            "image_policy": self.image_policy,
            "no_image": self.no_image,
            "truncation": self._context_length(),
            "fusion": FUSION,
            "index": self.index,
            "cache_dtype": self.cache_dtype,
        }

    def _context_length(self) -> int:
        open_clip = require("open_clip", "the clip retriever", "clip")
        if self.model.startswith(_LOCAL_DIR):
            return int(self._load()[2].context_length)
        config = open_clip.get_model_config(self.model)
        if config is None:
            raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
        return int(config.get("text_cfg", {}).get("context_length", 77))

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            open_clip = require("open_clip", "the clip retriever", "clip")
            torch = require("torch", "the clip retriever", "clip")
            if not self.model.startswith(_LOCAL_DIR) and self.model not in open_clip.list_models():
                raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
            if self.model.startswith(_LOCAL_DIR):
                _check_local_dir(Path(self.model[len(_LOCAL_DIR) :]).expanduser())
            try:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(self.seed)  # random weights reproduce across runs
                    model, _, preprocess = open_clip.create_model_and_transforms(
                        self.model, pretrained=self.pretrained, device=self.device
                    )
            except (RuntimeError, OSError, ValueError) as err:
                raise InputError(
                    "cannot load the open_clip model",
                    found=f"{self.model} / {self.pretrained}: {err}",
                    hint="Use a local checkpoint file, a local-dir: folder, or weights already "
                    "in the local cache (no downloads at run time).",
                ) from err
            model.eval()
            self._loaded = (model, preprocess, open_clip.get_tokenizer(self.model))
        return self._loaded

    def _cache(self, role: str) -> EmbeddingCache:
        settings: dict[str, Any] = {
            "encoder": "open_clip",
            "model": self.model,
            "weights": self._weights(),
            "role": role,
            "output": "raw",  # projected features, not normalised: the fusion needs their norm
        }
        if role == "text":
            settings["truncation"] = self._context_length()
        else:
            settings["preprocess"] = repr(self._load()[1])
        return EmbeddingCache(self.cache_root, settings, dtype=self.cache_dtype)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed one batch of texts, uncached: raw ``encode_text`` output, not normalised.

        Texts are capped first (:func:`cap_text` changes no token), then truncated by the
        tokenizer to the context length with the end-of-text token kept last.
        """
        model, _, tokenizer = self._load()
        torch = require("torch", "the clip retriever", "clip")
        tokens = self._context_length()
        with torch.no_grad():
            vectors = model.encode_text(
                tokenizer([cap_text(t, tokens) for t in texts]).to(self.device)
            )
        return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)

    def embed_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Embed one batch of decoded images, uncached: raw ``encode_image`` output."""
        model, preprocess, _ = self._load()
        torch = require("torch", "the clip retriever", "clip")
        pixels = torch.stack([preprocess(image) for image in images]).to(self.device)
        with torch.no_grad():
            vectors = model.encode_image(pixels)
        return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Return raw float32 text embeddings (truncated to the model's context), cached."""
        keys = [content_key(t) for t in texts]
        cache = self._cache("text")
        return cache.encode(texts, keys, self.embed_texts, self.batch_size, desc="clip texts")

    def encode_images(self, loaders: Sequence[ImageLoader], keys: Sequence[str]) -> np.ndarray:
        """Return raw float32 image embeddings, cached; loaders run only on cache misses."""

        def batch(chunk: list[ImageLoader]) -> np.ndarray:
            return self.embed_images([load() for load in chunk])

        return self._cache("image").encode(
            loaders, keys, batch, self.batch_size, desc="clip images"
        )

    def corpus_jobs(self, data: TaskData, source: ImageSource | None) -> list[EncodeJob]:
        """Return the passage texts and corpus images a local run encodes (for the Ray engine).

        Task 3 encodes its corpus images in corpus order, Task 4 its distinct images sorted.
        """
        jobs = passage_jobs(data)
        if data.task in (3, 4) and source is not None:
            if data.task == 3:
                paths = [d.doc_id if d.image is None else d.image.path for d in data.corpus]
            else:
                paths = sorted({d.image.path for d in data.corpus if d.image is not None})
            raw = [document_bytes(source, data.domain, path) for path in paths]
            jobs.append(EncodeJob("image", [content_key(r) for r in raw], raw, paths))
        return jobs

    def batch_encoder(self, role: str, prefix: str = "") -> BatchEncoder | None:
        """Return the text or image encoder (:meth:`embed_texts`, :meth:`embed_images`).

        Image items are file bytes, decoded here; texts take no prefix.
        """
        if role == "text":
            return CallEncoder(
                self._cache(role),
                self.batch_size,
                self._context_length(),
                lambda items, _: self.embed_texts(list(items)),
            )
        if role == "image":
            return CallEncoder(self._cache(role), self.batch_size, 0, self._embed_files)
        return None

    def _embed_files(self, items: Sequence[bytes], names: Sequence[str]) -> np.ndarray:
        return self.embed_images(
            [decode_image(raw, n) for raw, n in zip(items, names, strict=True)]
        )

    def encode_queries(self, queries: tuple[Query, ...], source: ImageSource | None) -> np.ndarray:
        """Return L2-normalised query embeddings: the fusion of the raw text and image embeddings.

        Each query's image is chosen by the image policy (``all``: the mean of its images' raw
        embeddings); without a source (Task 1) a query is its normalised text embedding.
        """
        texts = self.encode_texts([q.text for q in queries])
        if source is None:
            return l2_normalise(texts)
        images = [self.query_pictures(q, source).images for q in queries]
        flat = [image for found in images for image in found]
        flat_vectors = self.encode_images(
            [partial(_same, im) for im in flat], [image_key(im) for im in flat]
        )
        out, start = [], 0
        for text, found in zip(texts, images, strict=True):
            if not found:
                out.append(l2_normalise(text))  # no_image == "text": the text alone
                continue
            image = flat_vectors[start : start + len(found)].mean(axis=0)
            start += len(found)
            out.append(fuse(text, image))
        return np.stack(out)

    def query_pictures(self, query: Query, source: ImageSource) -> QueryImages:
        """Return the images a query's text is fused with, and the query images left out.

        The image policy chooses among the images that decode; a query with none gets the
        white image (``no_image="white"``) or none at all (``"text"``: its text alone).
        """
        found = query_images(source, query, self.image_policy)
        if not found.images and self.no_image == "white":
            found.images = [white_image()]
        return found

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank passages (tasks 1-2), images (Task 3) or pairs (Task 4) for every query.

        Args:
            data: The task's data for one domain.
            source: Image bytes for the queries and the corpus (required for tasks 2-4).
            k: How many documents to keep per query, after exclusions.

        Returns:
            query_id -> doc_id -> score (100 x the dot product of the normalised vectors).
        """
        check_task(self, data.task)
        check_k(k)
        if data.task > 1 and source is None:
            raise InputError(
                f"task {data.task} needs image bytes",
                found="no source",
                hint="Pass the data source to retrieve().",
            )
        if not data.corpus or not data.queries:
            return {q.query_id: {} for q in data.queries}
        queries = self.encode_queries(data.queries, source if data.task > 1 else None)
        identity = Groups.from_keys([d.doc_id for d in data.corpus])
        if data.task == 3:
            return rank_vectors(
                data, identity, self._corpus_images(data, source), queries, k, self.index
            )
        if data.task == 4:
            return rank_vectors(data, identity, self._pairs(data, source), queries, k, self.index)
        passages = l2_normalise(self.encode_texts([d.text for d in data.corpus]))
        return rank_vectors(data, identity, passages, queries, k, self.index)

    def _corpus_images(self, data: TaskData, source: Any) -> np.ndarray:
        paths = [d.doc_id if d.image is None else d.image.path for d in data.corpus]
        return l2_normalise(self.document_image_vectors(data.domain, paths, source))

    def document_image_vectors(
        self, domain: str, paths: Sequence[str], source: ImageSource
    ) -> np.ndarray:
        """Return the raw embeddings of corpus images (by path), cached by their bytes.

        Raises:
            ImageDecodeError: The source has no bytes for a path.
        """
        loaders, keys = [], []
        for path in paths:
            raw = source.document_image_bytes(domain, path)
            if raw is None:  # the task's corpus holds decodable images only (SPEC §3)
                raise ImageDecodeError(path, "missing: the dataset has no bytes for this path")
            loaders.append(partial(decode_image, raw, path))
            keys.append(content_key(raw))
        return self.encode_images(loaders, keys)

    def white_vector(self) -> np.ndarray:
        """Return the raw embedding of the white image, as a ``(1, dim)`` array (cached)."""
        return self.encode_images([white_image], [image_key(white_image())])

    def _pairs(self, data: TaskData, source: Any) -> np.ndarray:
        passages = Groups.from_keys([passage_id(d.doc_id) for d in data.corpus])
        texts = self.encode_texts(
            [data.corpus[i].text for i in passages.members[passages.offsets[:-1]]]
        )
        paths = sorted({d.image.path for d in data.corpus if d.image is not None})
        row = {path: i for i, path in enumerate(paths)}
        # reshape: a domain without images gives an empty (0, 0) block.
        images = np.vstack(
            [
                self.document_image_vectors(data.domain, paths, source).reshape(-1, texts.shape[1]),
                self.white_vector(),
            ]
        )
        image_of = [row[d.image.path] if d.image is not None else len(paths) for d in data.corpus]
        return fuse(texts[passages.unit_of_doc], images[image_of])


def fuse(text: np.ndarray, image: np.ndarray) -> np.ndarray:
    """Return L2-normalise((raw text + raw image) / 2), row by row (the official fusion)."""
    return l2_normalise((np.asarray(text, np.float32) + np.asarray(image, np.float32)) / 2)


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


def _check_local_dir(folder: Path) -> None:
    # open_clip only warns when a local-dir: folder holds no weights, then runs with random
    # ones: refuse that instead of scoring a random model under the folder's name.
    config = folder / "open_clip_config.json"
    weights = [p for p in folder.glob("*") if p.suffix in _CHECKPOINT_SUFFIXES]
    if not config.is_file() or not weights:
        raise InputError(
            "not an open_clip local-dir: model folder",
            expected="open_clip_config.json and a weights file (.safetensors, .bin or .pth)",
            found=", ".join(sorted(p.name for p in folder.glob("*"))) or "nothing",
            source=str(folder),
        )

"""Models whose own hub code encodes, called as the official harness calls them.

``src/retrievers/task2_multimodal.py`` of the released harness loads four multimodal models
with ``trust_remote_code=True`` and calls into their code; each call is an interface named by
the catalogue preset (``interface``), and each becomes an
:class:`~mmbright_core.retrieval.embedder.Embedder` behind
:class:`~mmbright_core.retrieval.dual.DualEncoderRetriever` (cache, exclusions, cut, Ray,
attribution where the fusion is linear):

- ``encode-text-image`` (``retrieval_jina_clip``): ``AutoModel`` with the model's
  ``encode_text(texts)`` and ``encode_image(images)``; fusion ``zero-image``;
- ``text-vision-pair`` (``retrieval_nomic_vision``): a text model (mean pooling, layer norm,
  ``search_query: `` before queries, passages cut at 8,000 characters) and an image model
  (its first token), each ``AutoModel`` with hub code; fusion ``normalised-mean``;
- ``encode-images-text`` (``retrieval_bge_vl``): ``AutoModel`` with ``set_processor(model)``
  and ``encode(images=PATH, text=TEXT)`` (its images are read from files), texts cut at 150
  characters and cut shorter while the model raises ``size of tensor``; fusion ``joint``
  (:mod:`.remote_bge`);
- ``st-dicts`` (``retrieval_gme_qwen2_vl``): a sentence-transformers model with hub code,
  ``encode`` of ``{"text": ..., "image": ...}`` dicts, texts cut at 4,000 characters,
  normalised; fusion ``joint`` (:mod:`.remote_st`);
- ``encode-instruction`` (``retrieval_reasonir``, ``src/retrievers/task1_text.py``): the
  model's ``encode(texts, instruction=, batch_size=, max_length=)``; text only
  (:mod:`.remote_text`);
- ``sentence-embedding`` (``retrieval_m2``): ``AutoModelForSequenceClassification`` with a
  second hub id's tokenizer, its output's ``sentence_embedding``; text only
  (:mod:`.remote_text`).

Nothing here loads without ``trust_remote_code=True``, which only ``--trust-remote-code``
gives (:mod:`.remote_code`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import require
from mmbright_core.retrieval.embedder import Modality, Role
from mmbright_core.retrieval.hf import (
    HFTextEmbedder,
    checkpoint_of,
    load_model,
    load_pretrained,
    load_transformers,
    model_label,
)
from mmbright_core.retrieval.index import IndexKind
from mmbright_core.retrieval.remote_code import trusted


def to_vectors(output: Any) -> np.ndarray:
    """Return a model's output (a tensor or an array) as a float32 array, one row per input."""
    if hasattr(output, "detach"):
        output = output.detach().float().cpu().numpy()
    vectors = np.asarray(output, dtype=np.float32)
    return vectors.reshape(1, -1) if vectors.ndim == 1 else vectors


def inference(call: Callable[[], Any]) -> np.ndarray:
    """Run ``call`` without gradients and return its vectors (:func:`to_vectors`)."""
    torch = require("torch", "the remote retriever", "hf")
    with torch.inference_mode():
        return to_vectors(call())


@contextmanager
def image_files(images: Sequence[Image.Image | None]) -> Iterator[list[str | None]]:
    """Write each image as RGB PNG to a temporary file, as the official code hands them over.

    The hub code of BGE-VL opens image paths; PNG keeps every pixel, so its input equals the
    official ``images[0].convert('RGB').save(tmp, format='PNG')``.
    """
    with tempfile.TemporaryDirectory(prefix="mmbright-images-") as folder:
        paths: list[str | None] = []
        for number, image in enumerate(images):
            if image is None:
                paths.append(None)
                continue
            path = Path(folder) / f"{number}.png"
            image.convert("RGB").save(path, format="PNG")
            paths.append(str(path))
        yield paths


class HubModel:
    """What every hub-code embedder shares: the model's identity, loading and settings.

    Args:
        model: A hub id or a local folder holding the model and its code.
        interface: The catalogue's name of the call into the code.
        revision: The hub revision (it pins the code as well as the weights).
        dtype: Weights' dtype; vectors are float32.
        batch_size: Items per call.
        device: Torch device (default: ``cuda`` when available, else ``cpu``).
    """

    modalities: frozenset[Modality] = frozenset({"text", "image"})
    fusion = "joint"

    def __init__(
        self,
        model: str,
        interface: str,
        revision: str | None = None,
        dtype: str = "float32",
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        self.model_id, self.interface, self.revision = str(model), interface, revision
        self.trust = trusted(self.model_id, True)
        self.dtype, self.batch_size, self.device = dtype, batch_size, device
        self.name = model_label(self.model_id)
        self._model: Any = None

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, the interface called and that hub code runs."""
        return {
            "model": self.model_id,
            "revision": self.revision,
            "checkpoint_sha256": checkpoint_of(self.model_id),
            "interface": self.interface,
            "dtype": self.dtype,
            **self.trust,
        }

    def loaded(self) -> Any:
        """Return the ``AutoModel`` with its hub code, loaded on first use."""
        if self._model is None:
            self._model = load_model(self.model_id, self.revision, self.dtype, self.device, True)
        return self._model


class EncodeTextImage(HubModel):
    """Jina-CLIP's interface: ``encode_text(texts)`` and ``encode_image(images)``."""

    fusion = "zero-image"

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the model's text vectors (the same call for queries and passages)."""
        return inference(lambda: self.loaded().encode_text(list(texts)))

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return the model's image vectors of the RGB images."""
        rgb = [image.convert("RGB") for image in images]
        return inference(lambda: self.loaded().encode_image(rgb))


class TextVisionPair(HubModel):
    """Nomic's interface: a text model and an image model of one space, side by side.

    Args:
        model: The text model (``nomic-embed-text-v1.5``).
        image_model: The image model (``nomic-embed-vision-v1.5``).
        text_options: :class:`~mmbright_core.retrieval.hf.HFTextEmbedder`'s options
            (pooling, truncation, instructions, character cut, layer norm).
        **common: :class:`HubModel`'s options.
    """

    fusion = "normalised-mean"

    def __init__(self, model: str, image_model: str, text_options: dict[str, Any], **common: Any):
        super().__init__(model, **common)
        self.image_model = str(image_model)
        trusted(self.image_model, True)  # the operator's switch covers the image model too
        shared = {
            k: common[k] for k in ("revision", "dtype", "batch_size", "device") if k in common
        }
        self.text = HFTextEmbedder(self.model_id, trust_remote_code=True, **text_options, **shared)
        transformers = load_transformers()
        self.processor = load_pretrained(transformers.AutoImageProcessor, self.image_model, None)
        self._vision: Any = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Bind the text model's instructions to a domain (``{domain}``)."""
        self.text.bind(task, domain)

    def settings(self) -> dict[str, Any]:
        """Return both models' identities and the text model's recipe."""
        return {
            **self.text.settings(),
            "interface": self.interface,
            "image_model": self.image_model,
            "image_checkpoint_sha256": checkpoint_of(self.image_model),
        }

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the text model's mean-pooled, layer-normalised vectors."""
        return self.text.encode_texts(texts, role)

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return the image model's first-token state of each RGB image."""
        if self._vision is None:
            self._vision = load_model(self.image_model, None, self.dtype, self.device, True)
        vision = self._vision
        pixels = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
        inputs = {key: value.to(vision.device) for key, value in pixels.items()}
        return inference(lambda: vision(**inputs).last_hidden_state[:, 0])


INTERFACE_OPTIONS: dict[str, tuple[str, ...]] = {
    "encode-text-image": (),
    "text-vision-pair": (
        "image_model",
        "pooling",
        "max_length",
        "query_instruction",
        "document_instruction",
        "document_char_limit",
        "layer_norm",
    ),
    "encode-images-text": ("text_char_limit",),
    "st-dicts": ("text_char_limit", "max_length"),
    "encode-instruction": ("max_length", "query_instruction", "document_instruction"),
    "sentence-embedding": ("tokenizer", "max_length", "query_instruction"),
}
"""Each interface the ``remote`` backend calls, and the options of its recipe."""


def hub_embedder(interface: str, model: str, options: dict[str, Any]) -> Any:
    """Build the embedder of ``interface`` for ``model`` from the factory's options.

    Raises:
        UnknownNameError: An interface the ``remote`` backend does not call.
        InputError: An option the interface does not take.
    """
    common = {k: options.pop(k) for k in ("revision", "dtype", "batch_size", "device")}
    common["interface"] = interface
    if interface not in INTERFACE_OPTIONS:
        raise UnknownNameError("remote interface", interface, INTERFACE_OPTIONS)
    taken = INTERFACE_OPTIONS[interface]
    given = {k: v for k, v in options.items() if v not in (None, "")}
    extra = sorted(set(given) - set(taken))
    if extra:
        raise InputError(
            f"the {interface} interface takes no {', '.join(extra)}",
            found=str(model),
            hint=f"It takes {', '.join(taken) or 'no further options'}.",
        )
    if interface == "encode-text-image":
        return EncodeTextImage(model, **common)
    if interface == "encode-images-text":
        from mmbright_core.retrieval.remote_bge import EncodeImagesText

        return EncodeImagesText(model, **given, **common)
    if interface == "st-dicts":
        from mmbright_core.retrieval.remote_st import SentenceDicts

        return SentenceDicts(model, **given, **common)
    if interface in ("encode-instruction", "sentence-embedding"):
        from mmbright_core.retrieval import remote_text

        if interface == "encode-instruction":
            return remote_text.EncodeInstruction(model, **given, **common)
        return remote_text.SentenceEmbedding(model, **given, **common)
    image_model = given.pop("image_model", None)
    if image_model is None:
        raise InputError("the text-vision-pair interface needs image_model", found=str(model))
    return TextVisionPair(model, image_model, given, **common)


def remote_retriever(
    model: str,
    interface: str,
    trust_remote_code: bool = False,
    revision: str | None = None,
    dtype: str = "float32",
    batch_size: int = 32,
    device: str | None = None,
    image_policy: str = "first",
    cache_dir: str | None = None,
    index: IndexKind = "flat",
    cache_dtype: str = "float32",
    image_model: str | None = None,
    pooling: str | None = None,
    max_length: int | None = None,
    query_instruction: str | None = None,
    document_instruction: str | None = None,
    document_char_limit: int | None = None,
    layer_norm: bool | None = None,
    text_char_limit: int | None = None,
    tokenizer: str | None = None,
) -> Any:
    """Build the ``remote`` retriever: a model's own hub code under the package's protocol.

    Args:
        model: A hub id or a local folder holding the model and its code.
        interface: The call into its code (one of :data:`INTERFACE_OPTIONS`).
        trust_remote_code: Must be True: this backend runs nothing else.
        revision: The hub revision (it pins the code as well as the weights).
        dtype: Weights' dtype; vectors are float32.
        batch_size: Items per call.
        device: Torch device (default: ``cuda`` when available, else ``cpu``).
        image_policy: Which query images are read (``first``: the released ``images[0]``).
        cache_dir: Embedding cache root.
        index: Vector index kind.
        cache_dtype: ``float32`` or ``float16``.
        image_model: ``text-vision-pair``: the image model beside the text model.
        pooling: ``text-vision-pair``: the text model's pooling (Nomic's ``mean``).
        max_length: Token truncation (``text-vision-pair``, ``st-dicts``, and the text
            interfaces, whose default is the official 32,768).
        query_instruction: Put before (``encode-instruction``: handed with) every query.
        document_instruction: Put before (``encode-instruction``: handed with) every passage.
        document_char_limit: ``text-vision-pair``: cut passages at this many characters.
        layer_norm: ``text-vision-pair``: layer-normalise the pooled text vector.
        text_char_limit: ``encode-images-text`` and ``st-dicts``: the character cut.
        tokenizer: ``sentence-embedding``: the tokenizer's hub id or folder.

    Raises:
        InputError: No ``trust_remote_code``, a forbidding operator, or a bad option.
    """
    if not trust_remote_code:
        raise InputError(
            "the remote backend runs a model's own code from the hub",
            found=f"--retriever remote --model {model} without --trust-remote-code",
            hint="Add --trust-remote-code to run it.",
        )
    from mmbright_core.retrieval.dual import DualEncoderRetriever

    options = {"revision": revision, "dtype": dtype, "batch_size": batch_size, "device": device}
    options |= {"image_model": image_model, "pooling": pooling, "max_length": max_length}
    options |= {"query_instruction": query_instruction, "document_char_limit": document_char_limit}
    options |= {"document_instruction": document_instruction, "layer_norm": layer_norm}
    options |= {"text_char_limit": text_char_limit, "tokenizer": tokenizer}
    embedder = hub_embedder(interface, str(model), options)
    return DualEncoderRetriever(
        embedder,
        name="remote",
        image_policy=image_policy,
        cache_dir=cache_dir,
        index=index,
        cache_dtype=cache_dtype,
        batch_size=batch_size,
    )

"""GME's interface: a sentence-transformers model with hub code, encoding text/image dicts.

``retrieval_gme_qwen2_vl`` (``src/retrievers/task2_multimodal.py``) loads
``SentenceTransformer(model, trust_remote_code=True)`` and encodes passages as strings cut at
4,000 characters, a query with an image as ``{"text": text[:4000], "image": PATH}`` (the first
image saved as PNG) and one without as its text, every vector normalised
(``normalize_embeddings=True``); ``retrieval_gme_it2i`` encodes corpus images as
``{"image": PATH}``. The hub module reads an image given as a path or a PIL image alike and
converts it to RGB, so the RGB image is handed over as it is.

The hub module makes one text template per batch and refuses a batch that mixes inputs with
and without an image, so a query with an image is encoded alone, as the official code does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.retrieval.backends.hf_model import IMAGE_PROCESSOR
from mmbright_core.retrieval.backends.hub_code.shared import (
    HubModel,
    pin_image_processor,
    to_vectors,
)
from mmbright_core.retrieval.backends.sentence_models import load_sentence_transformer
from mmbright_core.retrieval.dual.embedder import Role


class SentenceDicts(HubModel):
    """A sentence-transformers model with hub code that encodes ``{"text", "image"}`` dicts.

    Args:
        model: A hub id or a local folder holding the model and its code.
        text_char_limit: Cut every text at this many characters (the official 4,000).
        max_length: Token truncation (default: the model's own ``max_seq_length``).
        **common: :class:`~mmbright_core.retrieval.backends.hub_code.interfaces.HubModel`'s options.
    """

    def __init__(
        self,
        model: str,
        text_char_limit: int | None = None,
        max_length: int | None = None,
        **common: Any,
    ) -> None:
        super().__init__(model, **common)
        self.text_char_limit, self.max_length = text_char_limit, max_length

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, its text cut, truncation and image processor."""
        out = {**super().settings(), "text_char_limit": self.text_char_limit}
        return {**out, "truncation": self.max_length, "image_processor": IMAGE_PROCESSOR}

    def _load(self) -> Any:
        """Return the sentence-transformers model with its hub code, loaded on first use.

        The image processor of its first module's processor (GME's Qwen2-VL processor, with
        the module's pixel bounds) is put on PIL's path, as transformers 4.51.3 (the official
        pin) ran it (:func:`.shared.pin_image_processor`).
        """
        if self._model is None:
            model = load_sentence_transformer(
                self.model_id, self.revision, self.device, self.max_length, **self.trust
            )
            pin_image_processor(model[0], self.model_id)
            self._model = model
        return self._model

    def _encode(self, inputs: list[Any]) -> np.ndarray:
        if not inputs:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self._load().encode(
            inputs,
            batch_size=self.batch_size,
            convert_to_tensor=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return to_vectors(vectors)

    def _cut(self, text: str) -> str:
        return text[: self.text_char_limit]

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the normalised vectors of the texts, cut, as strings."""
        return self._encode([self._cut(text) for text in texts])

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return the normalised vectors of ``{"image": ...}`` inputs."""
        return self._encode([{"image": image.convert("RGB")} for image in images])

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Role
    ) -> np.ndarray:
        """Return one vector per text and image: a dict with an image alone, texts batched."""
        rows: list[np.ndarray | None] = [None] * len(texts)
        alone = [i for i, image in enumerate(images) if image is None]
        for i, vector in zip(
            alone, self.encode_texts([texts[i] for i in alone], role), strict=True
        ):
            rows[i] = vector
        for i, image in enumerate(images):
            if image is not None:
                joint = {"text": self._cut(texts[i]), "image": image.convert("RGB")}
                rows[i] = self._encode([joint])[0]
        return np.stack([row for row in rows if row is not None]) if rows else np.zeros((0, 0))

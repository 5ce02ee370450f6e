"""CLIP and SigLIP through transformers' models and processors, as the official code runs them.

``src/retrievers/task2_multimodal.py`` runs ``retrieval_clip`` on ``CLIPModel`` +
``CLIPProcessor`` (texts ``padding=True, truncation=True``, passages ``max_length=77``; the text
features from ``input_ids`` and ``attention_mask``) and ``retrieval_siglip`` on
``AutoModel`` + ``AutoProcessor`` for ``google/siglip-so400m-patch14-384`` (texts
``padding="max_length", truncation=True``; the text features from ``input_ids`` alone, as
SigLIP was trained). Images go through the processor after ``convert("RGB")``, so the resize and
crop are Hugging Face's, not open_clip's (the ``clip`` backend's known departure).

The vectors are the raw projected features (``get_text_features`` / ``get_image_features``);
fusion ``raw-mean`` averages and normalises them (docs/protocol.md, "Dual-encoder fusion").
Official SigLIP gives a query without image a white 384x384 image and CLIP a white 224x224 one:
the processor resizes either to the same all-white input, so the one white image of the fusion
rule gives the same vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import each_preprocessed
from mmbright_core.errors import UnknownNameError
from mmbright_core.retrieval.embedder import Modality, Role
from mmbright_core.retrieval.hf_model import (
    HFModel,
    as_float32,
    in_batches,
    load_torch,
    load_transformers,
    torch_dtype,
)
from mmbright_core.retrieval.textcap import cap_text

#: model_type -> (text padding, the tokenizer outputs the text tower reads), per the official
#: ``retrieval_clip`` and ``retrieval_siglip``.
FAMILIES: dict[str, tuple[bool | str, tuple[str, ...]]] = {
    "clip": (True, ("input_ids", "attention_mask")),
    "siglip": ("max_length", ("input_ids",)),
}


def features(output: Any) -> Any:
    """Return the projected features a ``get_*_features`` call gave.

    transformers 4 returns the tensor; transformers 5 an output whose ``pooler_output`` holds it.
    """
    return getattr(output, "pooler_output", output)


class HFClipEmbedder(HFModel):
    """A CLIP or SigLIP model with its Hugging Face processor (fusion ``raw-mean``).

    Args:
        model: A hub id or a local folder with the model and its processor.
        max_length: Text truncation in tokens (default: the tokenizer's, 77 for CLIP, 64 for
            SigLIP so400m).
        **common: :class:`~mmbright_core.retrieval.hf_model.HFModel`'s options (revision,
            dtype, batch size, device).
    """

    modalities: frozenset[Modality] = frozenset({"text", "image"})
    fusion = "raw-mean"

    def __init__(self, model: str, max_length: int | None = None, **common: Any) -> None:
        super().__init__(model, **common)
        load_transformers()  # a missing extra is said first
        torch_dtype(self.dtype)
        self.family = str(self.pretrained("AutoConfig").model_type)
        if self.family not in FAMILIES:
            raise UnknownNameError("CLIP-style model family", self.family, FAMILIES)
        self.processor = self.pretrained("AutoProcessor")
        tokenizer = self.processor.tokenizer
        self.max_length = int(max_length or tokenizer.model_max_length)

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, family, truncation and dtype."""
        padding, keys = FAMILIES[self.family]
        return {
            **self.identity(),
            "family": self.family,
            "truncation": self.max_length,
            "text_padding": padding,
            "text_inputs": list(keys),
            "dtype": self.dtype,
            "preprocessing": "transformers",
        }

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return raw projected text features (the same for queries and passages)."""
        capped = [cap_text(text, self.max_length) for text in texts]
        return in_batches(capped, self.batch_size, self._text_batch)

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return raw projected image features of the RGB images, resized by the processor.

        Each image is decoded (when lazy), converted and preprocessed alone, so one full-size
        image at most is in memory; the processor treats every image of a batch alike, so
        the pixel values equal those of the whole batch processed at once.
        """
        return in_batches(images, self.batch_size, self._image_batch)

    def _text_batch(self, texts: Sequence[str]) -> np.ndarray:
        padding, keys = FAMILIES[self.family]
        batch = self.processor.tokenizer(
            list(texts),
            padding=padding,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        model = self._load()
        inputs = {key: batch[key].to(model.device) for key in keys}
        return self._run(lambda: model.get_text_features(**inputs))

    def _image_batch(self, images: Sequence[Image.Image]) -> np.ndarray:
        torch = load_torch()
        model = self._load()
        pixels = torch.cat(each_preprocessed(images, self._pixels))
        values = pixels.to(model.device, dtype=torch_dtype(self.dtype))
        return self._run(lambda: model.get_image_features(pixel_values=values))

    def _pixels(self, image: Image.Image) -> Any:
        processed = self.processor.image_processor(
            images=[image.convert("RGB")], return_tensors="pt"
        )
        return processed["pixel_values"]

    def _run(self, forward: Any) -> np.ndarray:
        with load_torch().inference_mode():
            vectors = features(forward())
        return as_float32(vectors)

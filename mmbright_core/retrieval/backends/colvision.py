"""ColPali and ColQwen2 as transformers defines them: one vector per image patch and text token.

``ColPaliForRetrieval`` and ``ColQwen2ForRetrieval`` (transformers) return ``embeddings``
already L2-normalised, one per input position; their processors make a query from its text
(``processor(text=...)``) and a document from its image (``processor(images=...)``), as the
model cards' usage does. The positions the attention mask leaves out are padding and are
dropped. A document's row in the cache holds the most tokens an image can give: the
processor's patches (ColPali's ``image_seq_length``; ColQwen2's pixel budget over its
merged patch area) plus :data:`TEXT_TOKENS` for the processor's own prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mmbright_core.retrieval.backends.hf_model import load_torch, load_transformers

#: The model types this module runs, and their transformers classes.
CLASSES = {"colpali": "ColPaliForRetrieval", "colqwen2": "ColQwen2ForRetrieval"}
#: Room a document row keeps beside its image patches for the processor's prompt tokens.
TEXT_TOKENS = 32


def model_type(folder: Path) -> str | None:
    """Return the folder's model type if this module runs it (``colpali``, ``colqwen2``)."""
    try:
        given = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kind = given.get("model_type") if isinstance(given, dict) else None
    return kind if kind in CLASSES else None


class ColVision:
    """A ColPali or ColQwen2 model and its processor, loaded on first use.

    Args:
        folder: The model folder.
        kind: Its model type (:func:`model_type`).
        device: The torch device.
        batch_size: Inputs per model call.
    """

    def __init__(self, folder: Path, kind: str, device: str, batch_size: int) -> None:
        self.folder, self.kind = folder, kind
        self.device, self.batch_size = device, batch_size
        self._processor: Any = None
        self._model: Any = None

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            transformers = load_transformers()
            model = getattr(transformers, CLASSES[self.kind]).from_pretrained(self.folder)
            self._model = model.to(self.device).eval()
        return self.processor(), self._model

    def processor(self) -> Any:
        """Return the model's processor (loaded once, without the model)."""
        if self._processor is None:
            self._processor = load_transformers().AutoProcessor.from_pretrained(self.folder)
        return self._processor

    def width(self) -> int:
        """Return the most tokens one image's document gives (its row's width)."""
        processor = self.processor()
        if self.kind == "colpali":
            return int(processor.image_seq_length) + TEXT_TOKENS
        images = processor.image_processor
        area = (images.patch_size * images.merge_size) ** 2
        # transformers 5 keeps the pixel budget as the size's longest_edge (max_pixels).
        budget = images.size.get("longest_edge") or images.size.get("max_pixels")
        return -(-int(budget) // area) + TEXT_TOKENS

    def encode_queries(self, texts: list[str]) -> list[np.ndarray]:
        """Return each query text's token vectors (padding dropped), float32."""
        processor, _ = self._load()
        out: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = processor(
                text=texts[start : start + self.batch_size], return_tensors="pt", padding=True
            )
            out.extend(self._embed(batch))
        return out

    def encode_images(self, images: list[Any]) -> list[np.ndarray]:
        """Return each image's patch and prompt token vectors (padding dropped), float32."""
        processor, _ = self._load()
        out: list[np.ndarray] = []
        for start in range(0, len(images), self.batch_size):
            batch = processor(images=images[start : start + self.batch_size], return_tensors="pt")
            out.extend(self._embed(batch))
        return out

    def _embed(self, batch: Any) -> list[np.ndarray]:
        torch = load_torch()
        _, model = self._load()
        with torch.inference_mode():
            vectors = model(**batch.to(self.device)).embeddings.float().cpu()
        keep = batch["attention_mask"].bool().cpu()
        return [vectors[row][keep[row]].numpy() for row in range(len(vectors))]

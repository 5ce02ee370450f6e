"""Numpy embedders for the dual-encoder tests: texts hashed into buckets, images as pixels.

Tiny, exact and quick, so that every fusion rule can be checked against its formula; the
module also serves as a plugin (``toy_embedders:make``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

DIM = 16


def text_vector(text: str, role: str) -> np.ndarray:
    """Words hashed into DIM buckets, plus 1 in a bucket that tells the roles apart."""
    out = np.zeros(DIM, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        out[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % DIM] += 1
    out[0 if role == "query" else 1] += 1
    return out


def image_vector(image: Image.Image) -> np.ndarray:
    """The 4x4 grey thumbnail's pixels, scaled up 3x: image norms dwarf text norms."""
    small = image.convert("L").resize((4, 4), Image.Resampling.BILINEAR)
    return 3 * np.asarray(small, dtype=np.float32).reshape(DIM) / 255 + 0.5


class ToyEmbedder:
    """A text+image embedder whose fusion rule is chosen."""

    modalities = frozenset({"text", "image"})

    def __init__(self, fusion: str = "raw-mean") -> None:
        self.fusion, self.name = fusion, f"toy-{fusion}"

    def settings(self) -> dict[str, Any]:
        return {"model": "toy", "dim": DIM}

    def encode_texts(self, texts: Sequence[str], role: str) -> np.ndarray:
        return np.stack([text_vector(t, role) for t in texts]) if texts else np.zeros((0, DIM))

    def encode_images(self, images: Sequence[Image.Image], role: str) -> np.ndarray:
        return np.stack([image_vector(im) for im in images]) if images else np.zeros((0, DIM))


class ToyJoint(ToyEmbedder):
    """Encodes a text and an image together: their elementwise product plus the text."""

    def __init__(self) -> None:
        super().__init__("joint")

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: str
    ) -> np.ndarray:
        rows = []
        for text, image in zip(texts, images, strict=True):
            t = text_vector(text, role)
            rows.append(t if image is None else t * image_vector(image) + t)
        return np.stack(rows)


def make(fusion: str = "raw-mean") -> ToyEmbedder:
    """The plugin factory."""
    return ToyJoint() if fusion == "joint" else ToyEmbedder(fusion)

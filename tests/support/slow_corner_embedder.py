"""The corner plugin (:mod:`corner_embedder`), slowed: each image takes a while to encode.

A test-only ``Embedder`` for work that must still be running when the test acts on it: an
occlusion of a 16x16 grid encodes 256 masked copies, in batches of the retriever's batch
size (32), so it takes about 26 seconds, and each batch about 3. Its own name and settings
keep its caches apart from the corner plugin's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from corner_embedder import CornerEmbedder
from PIL import Image

#: Seconds each image takes to encode.
DELAY = 0.1


class SlowCornerEmbedder(CornerEmbedder):
    """:class:`~corner_embedder.CornerEmbedder`, sleeping :data:`DELAY` seconds per image."""

    name = "slow-corner"

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "model": "slow-corner"}

    def encode_images(self, images: Sequence[Image.Image], role: str) -> np.ndarray:
        time.sleep(DELAY * len(images))
        return super().encode_images(images, role)


def make() -> SlowCornerEmbedder:
    """The plugin factory (``slow_corner_embedder:make``)."""
    return SlowCornerEmbedder()


SPEC = "slow_corner_embedder:make"

"""A plugin ``Embedder`` whose image vector depends only on the image's top-left quarter.

The quarter's 4x4 grey thumbnail, scaled as :mod:`toy_embedders` scales its images: a region
attribution of its scores must find every non-zero cell over that quarter.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from toy_embedders import DIM, text_vector


def quarter(image: Image.Image) -> tuple[int, int, int, int]:
    """The box of the top-left quarter: ``(0, 0, width // 2, height // 2)``."""
    return (0, 0, max(image.width // 2, 1), max(image.height // 2, 1))


class CornerEmbedder:
    """Texts hashed into buckets; images seen only through their top-left quarter."""

    name = "corner"
    modalities = frozenset({"text", "image"})
    fusion = "raw-mean"

    def settings(self) -> dict[str, Any]:
        return {"model": "corner", "dim": DIM}

    def encode_texts(self, texts: Sequence[str], role: str) -> np.ndarray:
        return np.stack([text_vector(t, role) for t in texts]) if texts else np.zeros((0, DIM))

    def encode_images(self, images: Sequence[Image.Image], role: str) -> np.ndarray:
        rows = []
        for image in images:
            corner = image.crop(quarter(image)).convert("L")
            small = corner.resize((4, 4), Image.Resampling.BILINEAR)
            rows.append(3 * np.asarray(small, dtype=np.float32).reshape(DIM) / 255 + 0.5)
        return np.stack(rows) if rows else np.zeros((0, DIM))


def make() -> CornerEmbedder:
    """The plugin factory (``corner_embedder:make``)."""
    return CornerEmbedder()


SPEC = "corner_embedder:make"


def demo_run(out: Path, task: int = 2, spec: str = SPEC) -> Path:
    """Run plugin ``spec`` (this one by default) on the demo's biology queries of ``task``.

    The run is made under ``out``, its embeddings cached under ``out / "cache"``; the run's
    folder is returned.
    """
    from mmbright_core.cli import main

    args = ["run", "--retriever", spec, "--source", "demo", "--task", str(task)]
    cache = ["--cache-dir", str(out / "cache")]
    assert main([*args, "--domain", "biology", "--out", str(out / "runs"), *cache]) == 0
    (folder,) = (out / "runs").iterdir()
    return folder

"""What the fidelity tests of the hub-code presets share: the demo's images and the preset.

The official retrievers of ``src/retrievers/task2_multimodal.py`` and ``task4_pair.py`` read
the query images as the PIL images of the dataset (``images[0]``) and the Task 4 pair images
from their files; :func:`pil` decodes the demo's bytes as such an image. :func:`preset` builds
a hub-code preset through the package's own path (catalogue entry, resolution, factory) with
a tiny stand-in folder in place of the hub model. :func:`ultra_safe_truncate` and
:func:`nomic_text` are the official helpers both tasks call, transcribed.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.catalogue.preset_run import resolve
from mmbright_core.retrieval.catalogue.presets import get_preset


def pil(raw: bytes) -> Image.Image:
    """Return the image of ``raw``, fully loaded, in its own mode."""
    image = Image.open(io.BytesIO(raw))
    image.load()
    return image


def first_images(source: Any, queries: Any) -> list[Image.Image | None]:
    """Return each query's first image (the released ``images[0]``), None for none."""
    return [
        pil(source.query_image_bytes(q.domain, q.images[0].path)) if q.images else None
        for q in queries
    ]


def preset(name: str, task: int, folder: Path, cache: Path, **extra: Any) -> Any:
    """Return the retriever of preset ``name`` on ``task`` with the model at ``folder``."""
    resolved = resolve(get_preset(name), task, trust_remote_code=True)
    options = {**resolved.options, "model": str(folder), "device": "cpu", "cache_dir": str(cache)}
    return get_retriever(resolved.retriever, **{**options, **extra})


def tensor(vectors: Any) -> Any:
    """Return a model's output (a tensor or an array) as a tensor."""
    import torch

    return vectors if hasattr(vectors, "detach") else torch.from_numpy(np.asarray(vectors))


def ultra_safe_truncate(text: str, max_chars: int = 150) -> str:
    """``retrieval_bge_vl``'s (and ``retrieval_bge_vl_large_it2it``'s) ``ultra_safe_truncate``."""
    text = (text or "").strip()
    if len(text) > max_chars:
        text = text[:max_chars]
        last_space = text.rfind(" ")
        if last_space > max_chars * 0.7:
            text = text[:last_space]
    return text.strip()


def nomic_text(folder: Path, texts: list[str]) -> np.ndarray:
    """Nomic's text vectors as ``retrieval_nomic_vision`` and ``retrieval_nomic_it2it`` make them.

    One batch: the tokenizer with padding, truncation at 8,192 tokens, mean pooling over the
    mask, layer norm, L2 norm.
    """
    import torch
    import torch.nn.functional as F
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)
    enc = tokenizer(texts, padding=True, truncation=True, return_tensors="pt", max_length=8192)
    with torch.no_grad():
        out = model(**enc)
    mask = enc["attention_mask"].unsqueeze(-1).expand(out[0].size()).float()
    pooled = torch.sum(out[0] * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
    pooled = F.layer_norm(pooled, normalized_shape=(pooled.shape[1],))
    return F.normalize(pooled, p=2, dim=1).numpy()

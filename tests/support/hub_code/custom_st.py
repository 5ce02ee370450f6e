"""A tiny stand-in of GME's sentence-transformers module: strings and text/image dicts.

Copied into a sentence-transformers folder whose ``modules.json`` names it, so it loads only
with ``trust_remote_code=True``. Like GME's module it takes a string, ``{"text": ...}``,
``{"image": ...}`` or both, and refuses a batch mixing inputs with and without an image.
"""

from typing import ClassVar

import numpy as np
import torch
from PIL import Image
from sentence_transformers.base.modules.module import Module
from transformers import AutoImageProcessor

#: GME's module's ``min_pixels`` and ``max_pixels`` (256 and 1,280 image tokens of 28 x 28).
PIXEL_BOUNDS = {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28}


class TinyProcessor:
    """What GME's module's processor holds here: the image processor of its folder."""

    def __init__(self, name):
        self.image_processor = AutoImageProcessor.from_pretrained(name, **PIXEL_BOUNDS)


def _features(texts, images):
    text = np.zeros((len(texts), 64), dtype=np.float32)
    for row, value in enumerate(texts):
        for byte in (value or "").encode("utf-8"):
            text[row, byte % 64] += 1.0
    pixels = np.zeros((len(images), 64), dtype=np.float32)
    for row, image in enumerate(images):
        if image is not None:
            opened = Image.open(image) if isinstance(image, str) else image
            grey = np.asarray(opened.convert("L").resize((8, 8)), dtype=np.float32) / 255
            pixels[row] = grey.reshape(64)
    return torch.from_numpy(text), torch.from_numpy(pixels)


class TinyGme(Module):
    """Two linear towers; the sentence embedding is their sum.

    Loaded, it holds ``processor`` with the folder's image processor in GME's pixel bounds,
    as GME's module loads it with transformers' default backend.
    """

    config_keys: ClassVar[list[str]] = ["dim"]
    save_in_root = True
    modalities: ClassVar[list[str]] = ["text", "image", "message"]

    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        generator = torch.Generator().manual_seed(0)
        self.text = torch.nn.Parameter(torch.randn(64, dim, generator=generator))
        self.image = torch.nn.Parameter(torch.randn(64, dim, generator=generator))

    def tokenize(self, texts, **kwargs):
        items = [{"text": t} if isinstance(t, str) else t for t in texts]
        with_image = {"image" in item for item in items}
        if len(with_image) > 1:
            raise ValueError("Could not make a flat list of images")
        text, pixels = _features([i.get("text") for i in items], [i.get("image") for i in items])
        return {"text_features": text, "image_features": pixels}

    def forward(self, features, **kwargs):
        embedding = features["text_features"] @ self.text + features["image_features"] @ self.image
        features["sentence_embedding"] = embedding
        return features

    def get_sentence_embedding_dimension(self):
        return self.dim

    def save(self, output_path, *args, **kwargs):
        self.save_config(output_path)
        self.save_torch_weights(output_path)

    @classmethod
    def load(cls, model_name_or_path, **kwargs):
        module = cls(**cls.load_config(model_name_or_path))
        cls.load_torch_weights(model_name_or_path, model=module)
        module.processor = TinyProcessor(model_name_or_path)
        return module

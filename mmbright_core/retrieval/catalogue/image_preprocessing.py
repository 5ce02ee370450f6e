"""How each image preset's images are resized and normalised before its model sees them.

The official code pins transformers 4.51.3, whose image processors resize with PIL.
transformers 5 builds them on torchvision by default, one or two intensity levels apart on part
of the pixels. The ``hf`` CLIP/SigLIP presets and Nomic-Vision load theirs on PIL's path
(:func:`~mmbright_core.retrieval.backends.hf_model.load_image_processor`); the processors that
the hub code of other models loads itself take transformers' default (docs/protocol.md,
"Image preprocessing").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the catalogue loads only where a preset is asked for
    from mmbright_core.retrieval.catalogue.presets import Preset


class ImagePreprocessing(NamedTuple):
    """A short label (``mmbright models``' column) and what it means (docs/models.md)."""

    label: str
    text: str


_PINNED = ImagePreprocessing(
    "pil",
    "transformers' image processor on PIL's path, as transformers 4.51.3 (the official pin) "
    "runs it (tests/retrieval/backends/test_pixel_goldens.py holds it to that version's pixels)",
)
_DEFAULT = (
    "transformers' default backend: PIL under transformers 4.x (the official pin, 4.51.3), "
    "torchvision under 5.x, whose resize differs by one or two intensity levels on part of the "
    "pixels"
)

#: backend or hub-code interface -> its image preprocessing.
BY_CALL: dict[str, ImagePreprocessing] = {
    "hf": _PINNED,
    "text-vision-pair": _PINNED,
    "encode-text-image": ImagePreprocessing(
        "model-code",
        "the image processor of the model's hub code (its own transforms), whichever "
        "transformers runs it",
    ),
    "encode-images-text": ImagePreprocessing(
        "transformers-default",
        f"the processor the model's set_processor loads (AutoProcessor): {_DEFAULT}",
    ),
    "st-dicts": ImagePreprocessing(
        "transformers-default",
        f"Qwen2-VL's processor, loaded by the model's sentence-transformers module: {_DEFAULT}",
    ),
}


def image_preprocessing(preset: Preset) -> ImagePreprocessing | None:
    """Return how ``preset`` prepares its images (None: a text-only preset)."""
    if preset.fusion == "text":
        return None
    return BY_CALL[preset.interface or preset.backend]

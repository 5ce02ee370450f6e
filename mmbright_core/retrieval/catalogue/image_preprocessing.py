"""How each image preset's images are resized and normalised before its model sees them.

The official code pins transformers 4.51.3, whose image processors resize with PIL.
transformers 5 builds them on torchvision by default, one or two intensity levels apart on part
of the pixels. The ``hf`` CLIP/SigLIP presets and Nomic-Vision load theirs on PIL's path
(:func:`~mmbright_core.retrieval.backends.hf_model.load_image_processor`), and the processors
that BGE-VL's and GME's hub code loads itself are rebuilt on it with the same settings
(:func:`~mmbright_core.retrieval.backends.hf_model.on_pil_path`); Jina-CLIP's hub code applies
its own transforms (docs/protocol.md, "Image preprocessing").
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
        "pil",
        "the CLIP image processor that the model's set_processor loads (AutoProcessor), "
        "rebuilt with its settings on PIL's path, as transformers 4.51.3 (the official pin) "
        "runs it (tests/retrieval/backends/test_pixel_goldens.py holds it to that version's "
        "pixels)",
    ),
    "st-dicts": ImagePreprocessing(
        "pil",
        "Qwen2-VL's image processor with the pixel bounds of the model's sentence-transformers "
        "module (256 to 1,280 image tokens), rebuilt with those settings on PIL's path, as "
        "transformers 4.51.3 (the official pin) runs it (tests/retrieval/backends/"
        "test_pixel_goldens.py holds it to that version's pixels)",
    ),
}


def image_preprocessing(preset: Preset) -> ImagePreprocessing | None:
    """Return how ``preset`` prepares its images (None: a text-only preset)."""
    if preset.fusion == "text":
        return None
    return BY_CALL[preset.interface or preset.backend]

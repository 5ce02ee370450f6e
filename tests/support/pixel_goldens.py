"""Golden pixels of the image processors as transformers 4.51.3 (the official code's pin) runs them.

Run once with transformers 4.51.3, Pillow and numpy installed (torch is not needed)::

    python tests/support/pixel_goldens.py [OUT.npz]

It writes :data:`GOLDEN` (or ``OUT.npz``): for each preprocessor configuration of
:data:`CONFIGS` (the ``preprocessor_config.json`` each hub model publishes) and each image of
:func:`images_of` it, the intensity levels (0-255) behind the processor's ``pixel_values``, as
4.51.3's ``AutoImageProcessor`` gives them where the official code (or the model's own code,
with what it passes: :data:`LOAD_OPTIONS`) loads the model's processor (its default, no
``use_fast``), with the versions that made them. Qwen2-VL's flattened patches are laid back
into the image first (:func:`frames`). The tests build the same
images and configurations from this module and compare the package's own processors with the
golden; a slow one reruns this script under the Python that ``PINNED_TRANSFORMERS_PYTHON``
names and compares its output with the committed file.

The levels are what the resize and crop produce: ``pixel_values`` is those levels rescaled by
1/255 and normalised with the configuration's mean and standard deviation, and :func:`levels`
inverts that (the script checks the inversion gives the processor's floats back). They are
stored as their steps along each row (:func:`packed`), which compress far better.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

GOLDEN = Path(__file__).parents[1] / "retrieval" / "backends" / "goldens" / "pixels.npz"

_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

#: name -> the ``preprocessor_config.json`` the hub model publishes.
CONFIGS: dict[str, dict[str, Any]] = {
    # openai/clip-vit-large-patch14
    "clip": {
        "crop_size": 224,
        "do_center_crop": True,
        "do_normalize": True,
        "do_resize": True,
        "feature_extractor_type": "CLIPFeatureExtractor",
        "image_mean": _CLIP_MEAN,
        "image_std": _CLIP_STD,
        "resample": 3,
        "size": 224,
    },
    # google/siglip-so400m-patch14-384
    "siglip": {
        "do_normalize": True,
        "do_rescale": True,
        "do_resize": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_processor_type": "SiglipImageProcessor",
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "SiglipProcessor",
        "resample": 3,
        "rescale_factor": 0.00392156862745098,
        "size": {"height": 384, "width": 384},
    },
    # nomic-ai/nomic-embed-vision-v1.5
    "nomic": {
        "crop_size": {"height": 224, "width": 224},
        "do_center_crop": True,
        "do_convert_rgb": True,
        "do_normalize": True,
        "do_rescale": True,
        "do_resize": True,
        "image_mean": _CLIP_MEAN,
        "image_processor_type": "CLIPImageProcessor",
        "image_std": _CLIP_STD,
        "resample": 3,
        "rescale_factor": 0.00392156862745098,
        "size": {"shortest_edge": 224},
    },
    # Alibaba-NLP/gme-Qwen2-VL-2B-Instruct (and -7B): Qwen2-VL-Instruct's configuration
    "qwen2-vl": {
        "min_pixels": 3136,
        "max_pixels": 12845056,
        "patch_size": 14,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": _CLIP_MEAN,
        "image_std": _CLIP_STD,
        "image_processor_type": "Qwen2VLImageProcessor",
        "processor_class": "Qwen2VLProcessor",
    },
}

#: name -> what the model's code passes to ``from_pretrained`` with the configuration.
LOAD_OPTIONS: dict[str, dict[str, Any]] = {
    # GME's sentence-transformers module (custom_st.py): AutoProcessor.from_pretrained(model,
    # min_pixels=min_image_tokens * 28 * 28, max_pixels=max_image_tokens * 28 * 28), its
    # defaults 256 and 1280 image tokens.
    "qwen2-vl": {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28},
}


def as_pinned() -> dict[str, Any]:
    """The ``from_pretrained`` keyword giving, in the installed transformers, 4.51.3's processor.

    transformers 5 picks torchvision unless asked for PIL; 4.x picks PIL where ``use_fast`` is
    off. ``tests/retrieval/backends/test_pixel_goldens.py`` holds the package's processors to
    the golden; the tests that transcribe the official code load their processors with this.
    """
    import transformers

    major = int(str(transformers.__version__).split(".")[0])
    return {"backend": "pil"} if major >= 5 else {"use_fast": False}


def _photo(width: int, height: int, seed: int, noise: float = 0.0) -> np.ndarray:
    """A photo-like RGB array: two crossing gradients, a bright disc, stripes, and noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    red = 255 * x / max(width - 1, 1)
    green = 255 * y / max(height - 1, 1)
    disc = ((x - width / 3) ** 2 + (y - height / 2) ** 2) < (min(width, height) / 4) ** 2
    blue = 128 + 100 * np.sin(x / 17.0) * np.cos(y / 23.0) + 90 * disc
    rgb = np.stack([red, green, blue], axis=-1) + rng.normal(0, noise, (height, width, 3))
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def images() -> dict[str, Image.Image]:
    """The test images, built the same way on every run (no file, no EXIF)."""
    rgba = np.dstack([_photo(301, 257, 3), np.linspace(0, 255, 301 * 257).reshape(257, 301)])
    palette = Image.fromarray((_photo(129, 97, 4)[..., 0] // 16).astype(np.uint8), mode="P")
    palette.putpalette([channel for i in range(16) for channel in (i * 16, 255 - i * 16, i * 7)])
    return {
        "photo": Image.fromarray(_photo(640, 480, 1, noise=1)),
        "rgba": Image.fromarray(rgba.astype(np.uint8), mode="RGBA"),
        "palette": palette,
        "tall": Image.fromarray(_photo(61, 700, 5)),
        "wide": Image.fromarray(_photo(800, 53, 6)),
        "small": Image.fromarray(_photo(30, 20, 7, noise=6)),
    }


def images_of(name: str) -> dict[str, Image.Image]:
    """The test images that configuration ``name``'s processor takes.

    Qwen2-VL's processor refuses a side under its factor (28 pixels); GME's module never hands
    it one (it first resizes every image to multiples of 28 with PIL), so those are left out.
    """
    config = CONFIGS[name]
    factor = config.get("patch_size", 1) * config.get("merge_size", 1)
    return {label: im for label, im in images().items() if min(im.size) >= factor}


def write_config(folder: Path, name: str) -> None:
    """Write configuration ``name`` as ``folder/preprocessor_config.json``."""
    (folder / "preprocessor_config.json").write_text(json.dumps(CONFIGS[name]))


def config_folder(root: Path, name: str) -> Path:
    """Write configuration ``name`` as ``root/name/preprocessor_config.json``; return the folder."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    write_config(folder, name)
    return folder


def load_options(name: str) -> dict[str, Any]:
    """Return what the model's code passes to ``from_pretrained`` with configuration ``name``."""
    return LOAD_OPTIONS.get(name, {})


def frames(values: Any, name: str) -> np.ndarray:
    """Return a processor's one-image output as images (frames, channels first).

    ``values`` is the processor's output (``pixel_values`` as numpy arrays or tensors): one
    image, or for Qwen2-VL flattened patches with ``image_grid_thw``, the image repeated over
    its temporal patch. The patches are laid back: the inverse of the processor's ``reshape`` to
    ``(t, temporal, c, h/m, m, p, w/m, m, p)`` and ``transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)``.
    """
    pixels = np.asarray(values["pixel_values"])
    if "image_grid_thw" not in values:
        return pixels[:1]
    t, h, w = (int(n) for n in np.asarray(values["image_grid_thw"])[0])
    config = CONFIGS[name]
    p, m, temporal = config["patch_size"], config["merge_size"], config["temporal_patch_size"]
    shaped = pixels.reshape(t, h // m, w // m, m, m, 3, temporal, p, p)
    return shaped.transpose(0, 6, 5, 1, 3, 7, 2, 4, 8).reshape(t * temporal, 3, h * p, w * p)


def pixel_levels(values: Any, name: str) -> np.ndarray:
    """Return the intensity levels (channels first, uint8) of a processor's one-image output."""
    return levels(frames(values, name)[0], name)


def _normalisation(name: str) -> tuple[np.ndarray, np.ndarray]:
    config = CONFIGS[name]
    shape = (3, 1, 1)
    return (
        np.asarray(config["image_mean"]).reshape(shape),
        np.asarray(config["image_std"]).reshape(shape),
    )


def levels(pixel_values: np.ndarray, name: str) -> np.ndarray:
    """Return the intensity levels (channels first, uint8) behind one image's ``pixel_values``."""
    mean, std = _normalisation(name)
    scaled = (np.asarray(pixel_values, dtype=np.float64) * std + mean) * 255
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def normalised(level_values: np.ndarray, name: str) -> np.ndarray:
    """Return the ``pixel_values`` of intensity levels (the processor's rescale and normalise)."""
    mean, std = _normalisation(name)
    return (level_values / 255 - mean) / std


def same_pixels(values: Any, found: np.ndarray, name: str) -> bool:
    """Whether every frame of the processor's output is what levels ``found`` give, normalised."""
    expected = normalised(found, name)
    return all(np.allclose(frame, expected, atol=1e-5) for frame in frames(values, name))


def packed(level_values: np.ndarray) -> np.ndarray:
    """Return levels as their steps along each row (mod 256), which compress far better."""
    return np.diff(level_values, axis=-1, prepend=np.uint8(0))


def unpacked(steps: np.ndarray) -> np.ndarray:
    """Return the levels of :func:`packed` steps."""
    return np.cumsum(steps, axis=-1, dtype=np.uint8)


def golden(path: Path = GOLDEN) -> dict[str, np.ndarray]:
    """Return the golden levels by ``config/image`` name, and the versions that made them."""
    with np.load(path) as stored:
        return {
            key: unpacked(stored[key]) if stored[key].ndim == 3 else stored[key]
            for key in stored.files
        }


def main() -> None:
    """Write :data:`GOLDEN` (or the path given) with the installed transformers (4.51.3)."""
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN
    import PIL
    import transformers

    out: dict[str, Any] = {
        "transformers_version": np.asarray(transformers.__version__),
        "pillow_version": np.asarray(PIL.__version__),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name in CONFIGS:
            processor = transformers.AutoImageProcessor.from_pretrained(
                config_folder(Path(tmp), name), **load_options(name)
            )
            out[f"{name}/processor"] = np.asarray(type(processor).__name__)
            for label, image in images_of(name).items():
                values = processor(images=[image.convert("RGB")], return_tensors="np")
                found = pixel_levels(values, name)
                if not same_pixels(values, found, name):
                    sys.exit(f"{name}/{label}: the pixel values are not whole levels")
                if not np.array_equal(unpacked(packed(found)), found):
                    sys.exit(f"{name}/{label}: the packing loses levels")
                out[f"{name}/{label}"] = packed(found)
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(target, **out)
    size = target.stat().st_size
    print(f"wrote {target} ({size} bytes) with transformers {transformers.__version__}")


if __name__ == "__main__":
    main()

"""The image processors give the pixels transformers 4.51.3, the official code's pin, gave.

The golden (``goldens/pixels.npz``) was written by ``tests/support/pixel_goldens.py`` run with
transformers 4.51.3 itself, over images and hub preprocessor configurations that module builds.
Here the same images go through the processor the package builds from a model folder holding
that configuration (:func:`~mmbright_core.retrieval.backends.hf_model.load_image_processor`,
which the ``hf`` CLIP/SigLIP and Nomic-Vision embedders call), as those embedders call it, and
through the processor that BGE-VL's and GME's hub code loads itself, once the package's
embedder has loaded the model (tiny stand-ins of that code, ``tests/support/hub_code/``, load
it from the folder as the hub code does).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pixel_goldens
import pytest

from mmbright_core.cli import main
from mmbright_core.retrieval.backends.hf_model import IMAGE_PROCESSOR, load_image_processor

pytest.importorskip("transformers")
GOLDEN = pixel_goldens.golden()
HF_CONFIGS = ("clip", "nomic", "siglip")
"""The configurations of the ``hf`` CLIP/SigLIP presets and Nomic-Vision."""


def test_the_golden_was_made_by_the_official_transformers() -> None:
    assert str(GOLDEN["transformers_version"]) == "4.51.3"


def _differing(processor: object, config: str) -> dict[str, int]:
    """Return, by image, how many levels of ``processor``'s pixels differ from the golden's."""
    differing = {}
    for label, image in pixel_goldens.images_of(config).items():
        values = processor(images=[image.convert("RGB")], return_tensors="pt")  # type: ignore[operator]
        values = {key: value.numpy() for key, value in values.items()}
        expected = GOLDEN[f"{config}/{label}"]
        found = pixel_goldens.pixel_levels(values, config)
        if found.shape != expected.shape:
            differing[label] = -1  # another size
        elif not np.array_equal(found, expected):
            differing[label] = int(np.count_nonzero(found != expected))
        else:
            assert pixel_goldens.same_pixels(values, expected, config)
    return differing


@pytest.mark.parametrize("config", HF_CONFIGS)
def test_the_pixels_are_those_of_transformers_4_51_3(config: str, tmp_path: Path) -> None:
    processor = load_image_processor(str(pixel_goldens.config_folder(tmp_path, config)), None)
    assert _differing(processor, config) == {}, f"{config}: levels differing from 4.51.3's"


def test_bge_vl_pixels_are_those_of_transformers_4_51_3(tmp_path: Path) -> None:
    # BAAI/BGE-VL-base and -large publish CLIP's preprocessor configuration at 224 (that of
    # openai/clip-vit-base-patch16 and clip-vit-large-patch14, "clip" here); their
    # set_processor loads it with AutoProcessor.
    import tiny_remote

    from mmbright_core.retrieval.backends.hub_code.bge import EncodeImagesText

    folder = tiny_remote.hub_model(tmp_path / "bge", "TinyBgeVl", max_chars=140)
    embedder = EncodeImagesText(str(folder), interface="encode-images-text", device="cpu")
    processor = embedder._load().processor.image_processor
    assert _differing(processor, "clip") == {}, "BGE-VL: levels differing from 4.51.3's"
    assert embedder.settings()["image_processor"] == IMAGE_PROCESSOR


def test_gme_pixels_are_those_of_transformers_4_51_3(tmp_path: Path) -> None:
    # GME's sentence-transformers module loads Qwen2-VL's processor with its pixel bounds
    # (pixel_goldens.LOAD_OPTIONS), as the stand-in module does from the folder.
    import tiny_remote

    from mmbright_core.retrieval.backends.hub_code.st import SentenceDicts

    folder = tiny_remote.gme_folder(tmp_path / "gme")
    embedder = SentenceDicts(str(folder), interface="st-dicts", device="cpu")
    processor = embedder._load()[0].processor.image_processor
    assert _differing(processor, "qwen2-vl") == {}, "GME: levels differing from 4.51.3's"
    assert embedder.settings()["image_processor"] == IMAGE_PROCESSOR


@pytest.mark.slow
def test_the_pinned_transformers_writes_the_committed_golden(tmp_path: Path) -> None:
    # PINNED_TRANSFORMERS_PYTHON: a Python with transformers 4.51.3, Pillow and numpy.
    python = os.environ.get("PINNED_TRANSFORMERS_PYTHON")
    if not python:
        pytest.skip("set PINNED_TRANSFORMERS_PYTHON to a Python with transformers 4.51.3")
    written = tmp_path / "pixels.npz"
    script = Path(pixel_goldens.__file__)
    subprocess.run([python, str(script), str(written)], check=True, capture_output=True)
    fresh = pixel_goldens.golden(written)
    assert sorted(fresh) == sorted(GOLDEN)
    for key, levels in GOLDEN.items():
        assert np.array_equal(fresh[key], levels), key


def _settings_holding(tree: object, key: str) -> list[object]:
    """Every value of ``key`` anywhere in a JSON tree."""
    if isinstance(tree, dict):
        found = [tree[key]] if key in tree else []
        return found + [v for value in tree.values() for v in _settings_holding(value, key)]
    if isinstance(tree, list):
        return [v for value in tree for v in _settings_holding(value, key)]
    return []


def test_a_run_records_its_image_processor(tiny_hf: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "--source", "demo", "--task", "2", "--domain", "biology", "--k", "5"]
    args += ["--retriever", "hf", "--model", str(tiny_hf["clip"]), "--device", "cpu"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 0
    (config_file,) = out.glob("*/config.json")
    recorded = _settings_holding(json.loads(config_file.read_text()), "image_processor")
    assert recorded == ["transformers, PIL backend (as transformers 4.51.3)"]

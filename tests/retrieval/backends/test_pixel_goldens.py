"""The image processors give the pixels transformers 4.51.3, the official code's pin, gave.

The golden (``goldens/pixels.npz``) was written by ``tests/support/pixel_goldens.py`` run with
transformers 4.51.3 itself, over images and hub preprocessor configurations that module builds.
Here the same images go through the processor the package builds from a model folder holding
that configuration (:func:`~mmbright_core.retrieval.backends.hf_model.load_image_processor`,
which the ``hf`` CLIP/SigLIP and Nomic-Vision embedders call), as those embedders call it.
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
from mmbright_core.retrieval.backends.hf_model import load_image_processor

pytest.importorskip("transformers")
GOLDEN = pixel_goldens.golden()


def test_the_golden_was_made_by_the_official_transformers() -> None:
    assert str(GOLDEN["transformers_version"]) == "4.51.3"


@pytest.mark.parametrize("config", sorted(pixel_goldens.CONFIGS))
def test_the_pixels_are_those_of_transformers_4_51_3(config: str, tmp_path: Path) -> None:
    processor = load_image_processor(str(pixel_goldens.config_folder(tmp_path, config)), None)
    differing = {}
    for label, image in pixel_goldens.images().items():
        values = processor(images=[image.convert("RGB")], return_tensors="pt")["pixel_values"]
        pixels = values[0].numpy()
        expected = GOLDEN[f"{config}/{label}"]
        found = pixel_goldens.levels(pixels, config)
        if not np.array_equal(found, expected):
            differing[label] = int(np.count_nonzero(found != expected))
        else:
            assert np.allclose(pixels, pixel_goldens.normalised(expected, config), atol=1e-5)
    assert differing == {}, f"{config}: levels differing from 4.51.3's, by image"


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

"""remote_hub: what every hub-code embedder shares (vectors back, images as files, trust)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.code_gate import ENV
from mmbright_core.retrieval.backends.hub_code.shared import (
    HubModel,
    image_files,
    pin_image_processor,
    to_vectors,
)


def test_one_vector_becomes_one_row_and_a_tensor_an_array() -> None:
    torch = pytest.importorskip("torch")
    assert to_vectors([1, 2, 3]).shape == (1, 3)
    half = torch.ones((2, 4), dtype=torch.float16)
    out = to_vectors(half)
    assert out.dtype == np.float32 and out.shape == (2, 4)


def test_images_are_handed_over_as_rgb_pngs_that_go_away_after() -> None:
    grey = Image.new("L", (3, 2), 128)
    with image_files([grey, None]) as paths:
        first, second = paths
        assert second is None and first is not None and first.endswith(".png")
        with Image.open(first) as saved:
            assert saved.mode == "RGB" and saved.size == (3, 2)
            assert saved.getpixel((0, 0)) == (128, 128, 128)
    assert not Path(first).exists()


def test_a_hub_model_records_its_interface_and_that_its_code_runs(tmp_path: Path) -> None:
    model = HubModel(str(tmp_path), "encode-text-image", dtype="bfloat16")
    settings = model.settings()
    assert settings["interface"] == "encode-text-image" and settings["dtype"] == "bfloat16"
    assert settings["trust_remote_code"] is True and settings["model"] == str(tmp_path)


def test_the_operator_can_forbid_a_hub_model(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(ENV, "0")
    with pytest.raises(InputError, match="forbidden"):
        HubModel(str(tmp_path), "encode-text-image")


def test_a_model_whose_code_keeps_no_image_processor_is_refused_in_one_line() -> None:
    class Module:
        processor = None

    with pytest.raises(InputError) as caught:
        pin_image_processor(Module(), "some/model")
    assert "no processor.image_processor on Module" in str(caught.value)
    assert "\n" not in str(caught.value)

"""hf_model: loading a transformers model, its identity, and batching its inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.backends.hf_model import (
    HFModel,
    checkpoint_of,
    in_batches,
    load_pretrained,
    load_transformers,
    model_label,
    torch_dtype,
)


def test_a_model_is_named_by_its_folder_or_the_last_part_of_its_hub_id(tmp_path: Path) -> None:
    assert model_label("org/some-model") == "some-model"
    assert model_label(f"{tmp_path}/weights/") == "weights"


def test_a_local_model_is_known_by_its_files_and_a_hub_id_by_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    first = checkpoint_of(str(folder))
    assert first is not None and len(first) == 64
    (folder / "config.json").write_text('{"changed": 1}')
    assert checkpoint_of(str(folder)) != first
    assert checkpoint_of("org/not-a-folder") is None
    assert HFModel(str(folder)).identity() == {
        "model": str(folder),
        "revision": None,
        "checkpoint_sha256": checkpoint_of(str(folder)),
    }


def test_an_unknown_dtype_names_the_choices() -> None:
    with pytest.raises(UnknownNameError, match="bfloat16"):
        torch_dtype("int8")
    assert str(torch_dtype("float16")) == "torch.float16"


def test_batches_are_slices_and_none_is_an_empty_matrix() -> None:
    seen: list[list[int]] = []

    def encode(chunk: list[int]) -> np.ndarray:
        seen.append(list(chunk))
        return np.array([[float(x)] for x in chunk], dtype=np.float32)

    out = in_batches([1, 2, 3, 4, 5], 2, encode)
    assert seen == [[1, 2], [3, 4], [5]]
    assert out.ravel().tolist() == [1, 2, 3, 4, 5]
    assert in_batches([], 2, encode).shape == (0, 0)


def test_a_model_neither_local_nor_cached_says_how_to_give_one(tmp_path: Path) -> None:
    transformers = load_transformers()
    with pytest.raises(InputError, match="local model folder") as err:
        load_pretrained(transformers.AutoConfig, "nobody/no-such-model-here", None)
    assert "nobody/no-such-model-here" in str(err.value)

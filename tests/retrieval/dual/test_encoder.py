"""DualOptions: a model backend's image, cache and index options reach its dual encoder."""

from __future__ import annotations

from pathlib import Path

import pytest
from toy_embedders import ToyEmbedder

from mmbright_core.errors import UnknownNameError
from mmbright_core.retrieval.dual.encoder import DualEncoderRetriever, DualOptions


def test_every_option_reaches_the_dual_encoder(tmp_path: Path) -> None:
    options = DualOptions("concat", str(tmp_path), "hnsw", "float16", 7, "text")
    built = options.build(ToyEmbedder(), "toy")
    assert isinstance(built, DualEncoderRetriever) and built.name == "toy"
    assert (built.image_policy, built.no_image) == ("concat", "text")
    assert (built.index, built.cache_dtype, built.batch_size) == ("hnsw", "float16", 7)
    assert built.cache_root == tmp_path


def test_the_defaults_are_the_dual_encoders_own(tmp_path: Path) -> None:
    built = DualOptions(cache_dir=str(tmp_path)).build(ToyEmbedder(), "toy")
    plain = DualEncoderRetriever(ToyEmbedder(), name="toy", cache_dir=str(tmp_path))
    assert built.settings() == plain.settings()
    assert (built.batch_size, built.no_image) == (plain.batch_size, plain.no_image)


def test_a_bad_option_is_refused_by_the_dual_encoder(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="image policy"):
        DualOptions("second", str(tmp_path)).build(ToyEmbedder(), "toy")

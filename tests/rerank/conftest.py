"""What the rerank tests share: a tiny cross-encoder built offline."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> Path:
    """A one-layer random-weight relevance model (``tests/support/tiny_hf.py``)."""
    pytest.importorskip("sentence_transformers")
    import tiny_hf

    return tiny_hf.cross_encoder_model(tmp_path_factory.mktemp("tiny-ce"), demo_texts)

"""open_clip_model: which weights an open_clip model loads, and how they are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.errors import InputError
from mmbright_core.retrieval.open_clip_model import (
    AUTO_PRETRAINED,
    OpenClipEmbedder,
    resolve_pretrained,
)


@pytest.mark.parametrize(
    ("model", "pretrained", "resolved"),
    [
        ("ViT-B-32", AUTO_PRETRAINED, "openai"),
        ("local-dir:/models/clip", AUTO_PRETRAINED, None),
        ("ViT-B-32", "none", None),
        ("ViT-B-32", "", None),
        ("ViT-B-32", None, None),
        ("ViT-B-32", "laion2b_s34b_b79k", "laion2b_s34b_b79k"),
    ],
)
def test_auto_is_the_models_natural_weights_and_none_random(model, pretrained, resolved):
    assert resolve_pretrained(model, pretrained) == resolved


def test_a_local_folder_takes_no_other_weights():
    with pytest.raises(InputError, match="carries its own weights"):
        resolve_pretrained("local-dir:/models/clip", "openai")


def test_local_weights_are_known_by_their_hash_and_named_by_their_file(tmp_path: Path):
    weights = tmp_path / "tuned.bin"
    weights.write_bytes(b"weights")
    embedder = OpenClipEmbedder("ViT-B-32", str(weights), seed=0, device="cpu")
    assert embedder.name == "ViT-B-32-tuned"
    assert embedder.checkpoint() is not None and embedder.weights() == embedder.checkpoint()
    tagged = OpenClipEmbedder("ViT-B-32", "openai", seed=0, device="cpu")
    assert (tagged.name, tagged.checkpoint(), tagged.weights()) == (
        "ViT-B-32-openai",
        None,
        "openai",
    )


def test_random_weights_are_named_random_and_known_by_their_seed():
    pytest.importorskip("open_clip")
    embedder = OpenClipEmbedder("ViT-B-32", None, seed=5, device="cpu")
    assert embedder.name == "ViT-B-32-random"
    assert embedder.weights().startswith("random:seed=5:torch=")

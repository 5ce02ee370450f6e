"""open_clip_model: which weights an open_clip model loads, and how they are known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.open_clip_model import (
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


def _registry_pairs(open_clip) -> list[tuple[str, str, bool, bool]]:
    """Each (model, tag, tag trained with QuickGELU, config builds QuickGELU) open_clip knows."""
    pairs = []
    for model, tag in open_clip.list_pretrained():
        config = open_clip.get_model_config(model)
        if config is not None:
            trained = bool(open_clip.get_pretrained_cfg(model, tag).get("quick_gelu", False))
            pairs.append((model, tag, trained, bool(config.get("quick_gelu", False))))
    return pairs


def test_every_tag_trained_with_quick_gelu_runs_it_and_others_their_configs():
    open_clip = pytest.importorskip("open_clip")
    pairs = _registry_pairs(open_clip)
    # The registry's facts this rests on: OpenAI's weights need QuickGELU, ViT-L-14 builds GELU.
    assert ("ViT-L-14", "openai", True, False) in pairs
    assert all(trained for model, tag, trained, _ in pairs if tag == "openai")
    for model, tag, trained, built in pairs:
        embedder = OpenClipEmbedder(model, tag, seed=0, device="cpu")
        expected = "quick_gelu" if trained or built else "gelu"
        assert embedder.activation == expected, (model, tag)
    # A checkpoint file or random weights: the config's own activation.
    assert OpenClipEmbedder("ViT-L-14", "/weights/clip.pt", 0, "cpu").activation == "gelu"
    assert OpenClipEmbedder("ViT-L-14-quickgelu", None, 0, "cpu").activation == "quick_gelu"


@pytest.mark.slow
def test_openai_tagged_weights_found_offline_rank_task2_as_the_quick_gelu_model(
    tiny_clip: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Weights placed where open_clip finds ViT-L-14's OpenAI weights offline (the hub cache
    entry its registry names) run with QuickGELU, as the official ``retrieval_clip`` runs
    OpenAI's CLIP (``hidden_act: quick_gelu``); the model open_clip's config builds (GELU)
    ranks otherwise."""
    open_clip = pytest.importorskip("open_clip")
    torch = pytest.importorskip("torch")
    constants = pytest.importorskip("huggingface_hub.constants")
    from mmbright_core.data.images import query_images
    from mmbright_core.data.sources import open_source
    from mmbright_core.retrieval import get_retriever

    # The tag as the registry lists ViT-L-14's OpenAI weights, for the tiny architecture.
    tag = open_clip.get_pretrained_cfg("ViT-L-14", "openai")
    monkeypatch.setitem(open_clip.pretrained._PRETRAINED, tiny_clip, {"openai": tag})
    repo = tag["hf_hub"].rstrip("/")  # timm/vit_large_patch14_clip_224.openai
    cache = tmp_path / "hub"
    entry = cache / f"models--{repo.replace('/', '--')}"
    snapshot = entry / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text("0" * 40)
    torch.manual_seed(0)
    weights = snapshot / "open_clip_pytorch_model.bin"
    torch.save(open_clip.create_model(tiny_clip).state_dict(), weights)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    def reference(quick_gelu: bool) -> dict[str, list[str]]:
        # task2_multimodal.py retrieval_clip: L2((raw text + raw first image) / 2) against
        # L2(raw passage text), scores x 100.
        model, _, preprocess = open_clip.create_model_and_transforms(
            tiny_clip, pretrained=str(weights), force_quick_gelu=quick_gelu
        )
        tokenizer = open_clip.get_tokenizer(tiny_clip)
        model.eval()
        pictures = [query_images(source, q, "first").images[0] for q in data.queries]
        with torch.no_grad():
            text = model.encode_text(tokenizer([q.text for q in data.queries]))
            image = model.encode_image(torch.stack([preprocess(p) for p in pictures]))
            passages = model.encode_text(tokenizer([d.text for d in data.corpus]))
        unit = torch.nn.functional.normalize
        scores = 100 * unit((text + image) / 2, dim=1) @ unit(passages, dim=1).T
        ids = [d.doc_id for d in data.corpus]
        return {
            q.query_id: [ids[i] for i in torch.argsort(row, descending=True, stable=True)[:10]]
            for q, row in zip(data.queries, scores, strict=True)
        }

    source = open_source("demo")
    data = source.task(2, "biology")
    clip = get_retriever("clip", model=tiny_clip, pretrained="openai", cache_dir=str(tmp_path))
    run = clip.retrieve(data, source, 10)
    ranked = {query_id: list(docs) for query_id, docs in run.items()}
    assert ranked == reference(quick_gelu=True)
    assert ranked != reference(quick_gelu=False)
    assert clip.settings()["activation"] == "quick_gelu"
    built = clip.clip.load()[0]
    assert any(isinstance(m, open_clip.transformer.QuickGELU) for m in built.modules())
    assert not any(isinstance(m, torch.nn.GELU) for m in built.modules())


@pytest.mark.slow
def test_a_mismatch_open_clip_still_reports_is_said_loudly(
    tiny_clip: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A QuickGELU config given a tag the registry does not mark so (as ``roberta-ViT-B-32`` /
    ``laion2b_s12b_b32k``): the run goes on as the config says, with a warning that says so."""
    open_clip = pytest.importorskip("open_clip")
    torch = pytest.importorskip("torch")
    from tiny_clip import TINY_CLIP_CONFIG

    from mmbright_core.errors import InputWarning

    name = f"{tiny_clip}-quickgelu"
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps({**TINY_CLIP_CONFIG, "quick_gelu": True}))
    open_clip.add_model_config(config)
    weights = tmp_path / "tuned.pt"
    torch.save(open_clip.create_model(name).state_dict(), weights)
    monkeypatch.setitem(open_clip.pretrained._PRETRAINED, name, {"tuned": {"file": str(weights)}})
    embedder = OpenClipEmbedder(name, "tuned", seed=0, device="cpu")
    with pytest.warns(InputWarning, match=r"QuickGELU mismatch.*runs with its config's activation"):
        embedder.load()
    assert embedder.activation == "quick_gelu"

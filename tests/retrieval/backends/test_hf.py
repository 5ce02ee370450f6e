"""The hf embedders against the official recipes computed directly with transformers.

Each expected vector is computed one text at a time, unpadded, so the pooling under padding
(right for BERT and Mistral, left for Qwen2) is checked against its plain definition: the last
token's state, the mean of all states, the first state.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from PIL import Image

from mmbright_core.errors import InputError, MissingDependencyError, UnknownNameError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.backends.hf import HFTextEmbedder
from mmbright_core.retrieval.backends.hf_clip import HFClipEmbedder

transformers = pytest.importorskip("transformers")
pytestmark = [pytest.mark.models]

TEXTS = [
    "How do tardigrades survive drying out?",
    "Which projection keeps areas in a GIS layer?",
    "cells",
]
INSTRUCTION = "Instruct: Given a {domain} post, retrieve relevant passages\nQuery: "


def _states(folder, text: str) -> torch.Tensor:
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    with torch.inference_mode():
        return model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]


@pytest.mark.parametrize(
    ("family", "pooling", "pick"),
    [
        ("mistral", "last-token", lambda h: h[-1]),
        ("qwen2", "last-token", lambda h: h[-1]),
        ("bert", "mean", lambda h: h.mean(dim=0)),
        ("bert", "cls", lambda h: h[0]),
    ],
)
def test_pooling_equals_the_recipe_on_unpadded_texts(tiny_hf, family, pooling, pick):
    embedder = HFTextEmbedder(str(tiny_hf[family]), pooling=pooling, batch_size=3)
    got = embedder.encode_texts(TEXTS, "document")
    expected = np.stack([pick(_states(tiny_hf[family], t)).numpy() for t in TEXTS])
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_decoders_pool_the_last_token_by_default_and_encoders_the_mean(tiny_hf):
    assert HFTextEmbedder(str(tiny_hf["mistral"])).pooling == "last-token"
    assert HFTextEmbedder(str(tiny_hf["qwen2"])).pooling == "last-token"
    assert HFTextEmbedder(str(tiny_hf["bert"])).pooling == "mean"


def test_query_instruction_is_concatenated_with_the_domain_documents_get_none(tiny_hf):
    embedder = HFTextEmbedder(str(tiny_hf["mistral"]), query_instruction=INSTRUCTION)
    embedder.bind(1, "biology")
    query = embedder.encode_texts(TEXTS[:1], "query")[0]
    filled = INSTRUCTION.replace("{domain}", "biology") + TEXTS[0]
    np.testing.assert_allclose(query, _states(tiny_hf["mistral"], filled)[-1], atol=1e-5)
    passage = embedder.encode_texts(TEXTS[:1], "document")[0]
    np.testing.assert_allclose(passage, _states(tiny_hf["mistral"], TEXTS[0])[-1], atol=1e-5)
    assert not np.allclose(query, passage)


def test_an_unbound_task_field_is_refused(tiny_hf):
    embedder = HFTextEmbedder(str(tiny_hf["bert"]), query_instruction=INSTRUCTION)
    with pytest.raises(InputError, match="no domain is bound"):
        embedder.encode_texts(TEXTS, "query")


def test_truncation_keeps_the_first_tokens(tiny_hf):
    embedder = HFTextEmbedder(str(tiny_hf["bert"]), pooling="cls", max_length=4)
    long = "tardigrades survive drying out for years"
    got = embedder.encode_texts([long], "document")[0]
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_hf["bert"])
    ids = tokenizer(long, max_length=4, truncation=True, return_tensors="pt")
    assert ids["input_ids"].shape[1] == 4
    model = transformers.AutoModel.from_pretrained(tiny_hf["bert"]).eval()
    with torch.inference_mode():
        expected = model(**ids).last_hidden_state[0, 0]
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_settings_hold_what_changes_a_vector(tiny_hf):
    base = HFTextEmbedder(str(tiny_hf["qwen2"]))
    settings = base.settings()
    assert len(settings["checkpoint_sha256"]) == 64
    assert settings["pooling"] == "last-token" and settings["dtype"] == "float32"
    assert settings["truncation"] == 64 and "instruction_domain" not in settings
    instructed = HFTextEmbedder(str(tiny_hf["qwen2"]), query_instruction=INSTRUCTION)
    instructed.bind(1, "gis")
    assert instructed.settings()["query_instruction"] == INSTRUCTION
    assert instructed.settings()["instruction_domain"] == "gis"
    bf16 = HFTextEmbedder(str(tiny_hf["qwen2"]), dtype="bfloat16")
    assert bf16.settings()["dtype"] == "bfloat16"
    assert bf16.encode_texts(TEXTS, "query").dtype == np.float32


@pytest.mark.parametrize(("option", "value"), [("pooling", "max"), ("dtype", "int8")])
def test_unknown_pooling_or_dtype_names_the_choices(tiny_hf, option, value):
    with pytest.raises(UnknownNameError):
        HFTextEmbedder(str(tiny_hf["bert"]), **{option: value})


def test_a_missing_model_says_how_to_give_one(tmp_path):
    with pytest.raises(InputError, match="local model folder"):
        HFTextEmbedder(str(tmp_path / "nowhere"))


def test_clip_text_and_image_features_are_the_raw_projections(tiny_hf):
    embedder = HFClipEmbedder(str(tiny_hf["clip"]))
    model = transformers.CLIPModel.from_pretrained(tiny_hf["clip"]).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_hf["clip"])
    with torch.inference_mode():
        expected = [
            model.get_text_features(**tokenizer(t, return_tensors="pt")).pooler_output[0]
            for t in TEXTS
        ]
    np.testing.assert_allclose(embedder.encode_texts(TEXTS, "query"), np.stack(expected), atol=1e-5)
    assert embedder.fusion == "raw-mean" and embedder.modalities == {"text", "image"}
    assert embedder.settings()["truncation"] == 77


def _solid_pixels(colour: tuple[int, int, int], mean: list[float], std: list[float]):
    # A resize of a one-colour image is that colour, so HF's resize needs no imitation here.
    values = (np.array(colour) / 255.0 - np.array(mean)) / np.array(std)
    return torch.tensor(values, dtype=torch.float32)[None, :, None, None].expand(1, 3, 32, 32)


def test_siglip_pads_texts_to_max_length_and_reads_no_attention_mask(tiny_hf):
    embedder = HFClipEmbedder(str(tiny_hf["siglip"]))
    model = transformers.SiglipModel.from_pretrained(tiny_hf["siglip"]).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_hf["siglip"])
    ids = tokenizer(TEXTS[2], padding="max_length", max_length=16, return_tensors="pt")
    with torch.inference_mode():
        padded = model.get_text_features(input_ids=ids["input_ids"]).pooler_output[0]
        short = model.get_text_features(**tokenizer(TEXTS[2], return_tensors="pt"))
    got = embedder.encode_texts(TEXTS[2:], "query")[0]  # Task 2's queries: no mask
    np.testing.assert_allclose(got, padded, atol=1e-5)
    assert not np.allclose(got, short.pooler_output[0], atol=1e-3)


def test_siglip_images_are_normalised_as_its_processor_says(tiny_hf):
    embedder = HFClipEmbedder(str(tiny_hf["siglip"]))
    model = transformers.SiglipModel.from_pretrained(tiny_hf["siglip"]).eval()
    image = Image.new("RGBA", (57, 23), (200, 40, 90, 128))
    pixels = _solid_pixels((200, 40, 90), [0.5] * 3, [0.5] * 3)
    with torch.inference_mode():
        expected = model.get_image_features(pixel_values=pixels).pooler_output[0]
    np.testing.assert_allclose(embedder.encode_images([image], "query")[0], expected, atol=1e-4)


def test_clip_style_models_refuse_text_model_options(tiny_hf):
    with pytest.raises(InputError, match="takes no pooling, query_instruction"):
        get_retriever("hf", model=str(tiny_hf["clip"]), pooling="mean", query_instruction="Q: ")


def test_missing_transformers_names_the_hf_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'mmbright\[hf\]'"):
        get_retriever("hf", model="any/model")

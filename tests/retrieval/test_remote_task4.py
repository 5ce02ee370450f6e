"""Task 4 of the hub-code presets: each official ``task4_pair.py`` recipe, on local stand-ins.

The preset's vectors, built from its catalogue entry with a tiny stand-in of the hub code in
place of the hub model, must equal the official function's, transcribed here within 1e-5:

- ``retrieval_jina_clip_it2it``: passage and query fused as ``normalize((encode_text +
  encode_image) / 2)``, a ``__NO_IMAGE__`` pair and a query without an image with the white
  224x224 image (``_safe_open_image(None)``), not a zero vector;
- ``retrieval_nomic_it2it``: a query's text cut at 8,000 characters before its
  ``search_query: `` prefix.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.catalogue import get_preset
from mmbright_core.retrieval.preset_run import resolve

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")
pytestmark = [pytest.mark.models]
DOMAIN = "gis"


def _pil(raw: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(raw))
    image.load()
    return image


def _preset(name: str, folder: Path, cache: Path, **extra: Any) -> Any:
    resolved = resolve(get_preset(name), 4, trust_remote_code=True)
    options = {**resolved.options, "model": str(folder), "device": "cpu", "cache_dir": str(cache)}
    return get_retriever(resolved.retriever, **{**options, **extra})


def _tensor(vectors: Any) -> Any:
    return vectors if hasattr(vectors, "detach") else torch.from_numpy(np.asarray(vectors))


def _white() -> Image.Image:
    return Image.new("RGB", (224, 224), color="white")


def test_jina_clip_task4_puts_the_white_image_for_every_missing_one(tiny_remote, tmp_path):
    source = open_source("demo")
    data = source.task(4, DOMAIN)
    assert any(d.image is None for d in data.corpus), "the demo has __NO_IMAGE__ pairs"
    retriever = _preset("jina-clip", tiny_remote["jina"], tmp_path)
    with retriever.bound(data), torch.no_grad():
        queries = retriever.encode_queries(data.queries, source)
        corpus = retriever.corpus_vectors(data, source)
    model = transformers.AutoModel.from_pretrained(tiny_remote["jina"], trust_remote_code=True)
    images = [
        _white() if d.image is None else _pil(source.document_image_bytes(DOMAIN, d.image.path))
        for d in data.corpus
    ]
    texts = [d.text for d in data.corpus]
    t = _tensor(model.encode_text(texts)).float()
    i = _tensor(model.encode_image([im.convert("RGB") for im in images])).float()
    expected_corpus = F.normalize((t + i) / 2.0, p=2, dim=1).numpy()
    pictures = [
        _pil(source.query_image_bytes(DOMAIN, q.images[0].path)).convert("RGB")
        if q.images
        else _white()
        for q in data.queries
    ]
    qt = _tensor(model.encode_text([q.text for q in data.queries])).float()
    qi = _tensor(model.encode_image(pictures)).float()
    expected_queries = F.normalize((qt + qi) / 2.0, p=2, dim=1).numpy()
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)
    np.testing.assert_allclose(queries, expected_queries, atol=1e-5)


def _nomic_text(folder: Path, texts: list[str]) -> np.ndarray:
    # retrieval_nomic_it2it: mean pooling over the mask, layer norm, L2 norm, max_length 8192.
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)
    enc = tokenizer(texts, padding=True, truncation=True, return_tensors="pt", max_length=8192)
    with torch.no_grad():
        out = model(**enc)
    mask = enc["attention_mask"].unsqueeze(-1).expand(out[0].size()).float()
    pooled = torch.sum(out[0] * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
    pooled = F.layer_norm(pooled, normalized_shape=(pooled.shape[1],))
    return F.normalize(pooled, p=2, dim=1).numpy()


def test_nomic_vision_task4_cuts_query_texts_at_8000_characters(tiny_remote, tmp_path):
    source = open_source("demo")
    data = source.task(4, DOMAIN)
    words = " ".join(q.text for q in data.queries)
    long_text = (words + " ") * (9000 // len(words) + 2)
    assert len(long_text) > 9000
    query = dataclasses.replace(data.queries[0], text=long_text, images=())
    retriever = _preset(
        "nomic-vision",
        tiny_remote["nomic-text"],
        tmp_path,
        image_model=str(tiny_remote["nomic-vision"]),
    )
    with retriever.bound(data), torch.no_grad():
        got = retriever.encode_queries((query,), source)
    folder = tiny_remote["nomic-text"]
    expected = _nomic_text(folder, [f"search_query: {long_text[:8000]}"])
    uncut = _nomic_text(folder, [f"search_query: {long_text}"])
    assert np.abs(expected - uncut).max() > 1e-4  # the cut moves the vector
    np.testing.assert_allclose(got, expected, atol=1e-5)

"""Task 2 of the hub-code presets: each official ``task2_multimodal.py`` recipe, vector by vector.

The preset's query and passage vectors, built through its catalogue entry with a tiny stand-in
of the hub code in place of the hub model (``tests/support/hub_code/``, loaded only with
``trust_remote_code=True`` as the hub's is), must equal those the official function computes
with the same model, transcribed here within 1e-5:

- ``retrieval_jina_clip``: passages ``encode_text`` in batches of 8; a query the mean of its
  text vector and its first image's (``encode_image([img])``), a zero vector for a query
  without an image, normalised;
- ``retrieval_nomic_vision``: passages cut at 8,000 characters, mean-pooled, layer-normed; a
  query ``search_query: `` and its text alone, its image's first token, normalised, averaged,
  normalised again (a query without an image is its text);
- ``retrieval_bge_vl`` (``bge-vl-large``): every text alone through ``ultra_safe_truncate`` at
  150 characters and the shorter cuts while the model raises ``size of tensor`` (the stand-in
  raises it past 140 characters, so both branches run), a query's image saved as PNG and
  handed over by its path;
- ``retrieval_gme_qwen2_vl``: passages as strings cut at 4,000 characters in batches of 8, a
  query alone as ``{"text", "image": PNG path}`` or its text, ``normalize_embeddings=True``.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from official_hub import first_images, nomic_text, preset, tensor, ultra_safe_truncate
from pixel_goldens import as_pinned

from mmbright_core.data.sources import open_source

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")
pytestmark = [pytest.mark.models]
DOMAIN = "gis"
BATCH = 8  # the official functions' default batch_size


def _vectors(name: str, folder: Path, cache: Path, **extra: object) -> tuple:
    """Return the demo's task, its queries' first images and the preset's vectors.

    Every demo query has an image, so one more query is the last one without its images.
    """
    source = open_source("demo")
    data = source.task(2, DOMAIN)
    last = data.queries[-1]
    imageless = dataclasses.replace(last, query_id=f"{last.query_id}-text", images=())
    data = dataclasses.replace(data, queries=(*data.queries, imageless))
    retriever = preset(name, 2, folder, cache, **extra)
    with retriever.bound(data), torch.no_grad():
        queries = retriever.encode_queries(data.queries, source)
        corpus = retriever.corpus_vectors(data, source)
    images = first_images(source, data.queries)
    assert images[-1] is None and all(images[:-1]), "queries with and without an image"
    return data, images, queries, corpus


def test_jina_clip_task2_is_retrieval_jina_clip(tiny_remote, tmp_path):
    data, images, queries, corpus = _vectors("jina-clip", tiny_remote["jina"], tmp_path)
    model = transformers.AutoModel.from_pretrained(tiny_remote["jina"], trust_remote_code=True)
    texts = [d.text for d in data.corpus]
    rows = [tensor(model.encode_text(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)]
    expected_corpus = F.normalize(torch.cat(rows).float(), p=2, dim=1).numpy()
    fused = []
    for i in range(0, len(data.queries), BATCH):
        batch_texts = [q.text for q in data.queries[i : i + BATCH]]
        batch_images = [im.convert("RGB") if im else None for im in images[i : i + BATCH]]
        text_embeds = tensor(model.encode_text(batch_texts)).detach().cpu()
        image_embeds = torch.stack(
            [
                tensor(model.encode_image([img])).detach().cpu()[0]
                if img is not None
                else torch.zeros_like(text_embeds[0])
                for img in batch_images
            ]
        )
        fused.append(F.normalize((text_embeds + image_embeds) / 2, p=2, dim=1))
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)
    np.testing.assert_allclose(queries, torch.cat(fused).numpy(), atol=1e-5)


def test_nomic_vision_task2_is_retrieval_nomic_vision(tiny_remote, tmp_path):
    text_folder, vision_folder = tiny_remote["nomic-text"], tiny_remote["nomic-vision"]
    data, images, queries, corpus = _vectors(
        "nomic-vision", text_folder, tmp_path, image_model=str(vision_folder)
    )
    texts = [d.text[:8000] for d in data.corpus]
    rows = [nomic_text(text_folder, texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
    expected_corpus = F.normalize(torch.from_numpy(np.concatenate(rows)), p=2, dim=1).numpy()
    processor = transformers.AutoImageProcessor.from_pretrained(vision_folder, **as_pinned())
    vision = transformers.AutoModel.from_pretrained(vision_folder, trust_remote_code=True).eval()
    expected_queries = []
    for query, image in zip(data.queries, images, strict=True):
        text_emb = torch.from_numpy(nomic_text(text_folder, [f"search_query: {query.text}"]))
        if image is None:
            expected_queries.append(text_emb)
            continue
        image = image.convert("RGB") if image.mode != "RGB" else image  # load_query_images
        with torch.no_grad():
            img_emb = vision(**processor(image, return_tensors="pt")).last_hidden_state[:, 0]
        img_emb = F.normalize(img_emb, p=2, dim=1)
        expected_queries.append(F.normalize((text_emb + img_emb) / 2, p=2, dim=1))
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)
    np.testing.assert_allclose(queries, torch.cat(expected_queries).numpy(), atol=1e-5)


def _first_fitting(limits: list[int], encode):
    """``retrieval_bge_vl``'s cut ladder: ``encode(limit)`` of the first limit whose text fits.

    A limit is passed over when the model says the tensor sizes do not match (the text is
    too long for it); None when none fits.
    """
    for char_limit in limits:
        try:
            return encode(char_limit)
        except RuntimeError as e:
            if "size of tensor" not in str(e):
                raise
    return None


def _bge_documents(model, documents: list[str]) -> np.ndarray:
    # retrieval_bge_vl, "DOCUMENT EMBEDDINGS": each passage alone, the cut ladder.
    def passage(doc_text: str, char_limit: int):
        truncated_text = ultra_safe_truncate(doc_text, max_chars=char_limit)
        if len(truncated_text.strip()) < 5:
            truncated_text = doc_text[:40].strip()
        return model.encode(text=truncated_text)

    rows = []
    for doc_text in documents:
        embedding = _first_fitting([150, 120, 100, 80, 60, 40], partial(passage, doc_text))
        if embedding is None:
            truncated_text = doc_text[:20].strip()
            if len(truncated_text) < 3:
                truncated_text = "document"
            embedding = model.encode(text=truncated_text)
        rows.append(F.normalize(tensor(embedding).reshape(1, -1), p=2, dim=1))
    return F.normalize(torch.cat(rows), p=2, dim=1).numpy()


def _bge_queries(model, texts: list[str], images: list, folder: Path) -> np.ndarray:
    # retrieval_bge_vl, "ENCODE QUERIES": the image saved as PNG, handed over by its path.
    def query(number: int, query_text: str, image, char_limit: int):
        truncated_query = ultra_safe_truncate(query_text, max_chars=char_limit)
        if len(truncated_query.strip()) < 3:
            truncated_query = query_text[:20].strip()
        if image is None:
            return model.encode(text=truncated_query)
        tmp_path = folder / f"{number}.png"
        image.convert("RGB").save(tmp_path, format="PNG")
        return model.encode(images=str(tmp_path), text=truncated_query)

    rows = []
    for number, (query_text, image) in enumerate(zip(texts, images, strict=True)):
        limits = [150, 120, 100, 80, 60, 40, 20]
        query_emb = _first_fitting(limits, partial(query, number, query_text, image))
        if query_emb is None:
            truncated_query = query_text[:15].strip() if query_text.strip() else "query"
            query_emb = model.encode(text=truncated_query)
        rows.append(F.normalize(tensor(query_emb).reshape(1, -1), p=2, dim=1))
    return torch.cat(rows).numpy()


def test_bge_vl_large_task2_is_retrieval_bge_vl(tmp_path):
    import tiny_remote as build

    folder = build.hub_model(tmp_path / "bge", "TinyBgeVl", max_chars=140)
    data, images, queries, corpus = _vectors("bge-vl-large", folder, tmp_path / "cache")
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)
    model.set_processor(str(folder))
    model.eval()
    texts = [q.text for q in data.queries]
    assert any(len(ultra_safe_truncate(t)) > 140 for t in texts), "the ladder runs"
    assert any(len(ultra_safe_truncate(t)) <= 140 for t in texts), "the first cut fits"
    (tmp_path / "png").mkdir()
    with torch.no_grad():
        expected_corpus = _bge_documents(model, [d.text for d in data.corpus])
        expected_queries = _bge_queries(model, texts, images, tmp_path / "png")
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)
    np.testing.assert_allclose(queries, expected_queries, atol=1e-5)


def test_gme_task2_is_retrieval_gme_qwen2_vl(tiny_remote, tmp_path):
    from sentence_transformers import SentenceTransformer

    data, images, queries, corpus = _vectors("gme-qwen2-vl-2b", tiny_remote["gme"], tmp_path)
    gme = SentenceTransformer(str(tiny_remote["gme"]), trust_remote_code=True, device="cpu")

    def encode(inputs: list) -> np.ndarray:
        out = gme.encode(
            inputs, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False
        )
        return out.cpu().float().numpy()

    texts = [d.text[:4000] for d in data.corpus]
    rows = [encode(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
    expected_corpus = F.normalize(torch.from_numpy(np.concatenate(rows)), p=2, dim=1).numpy()
    expected_queries = []
    for number, (query, image) in enumerate(zip(data.queries, images, strict=True)):
        query_text = query.text[:4000]
        query_input: object = query_text
        if image is not None:
            path = tmp_path / f"query-{number}.png"
            image.convert("RGB").save(path, format="PNG")
            query_input = {"text": query_text, "image": str(path)}
        expected_queries.append(encode([query_input])[0])
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)
    np.testing.assert_allclose(queries, np.stack(expected_queries), atol=1e-5)

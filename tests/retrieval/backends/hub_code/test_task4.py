"""Task 4 of the hub-code presets: each official ``task4_pair.py`` recipe, on local stand-ins.

The preset's vectors, built from its catalogue entry with a tiny stand-in of the hub code in
place of the hub model, must equal the official function's, transcribed here within 1e-5:

- ``retrieval_jina_clip_it2it``: passage and query fused as ``normalize((encode_text +
  encode_image) / 2)``, a ``__NO_IMAGE__`` pair and a query without an image with the white
  224x224 image (``_safe_open_image(None)``), not a zero vector;
- ``retrieval_nomic_it2it``: a query's text cut at 8,000 characters before its
  ``search_query: `` prefix;
- ``retrieval_bge_vl_large_it2it``: every pair and query alone, ``encode(images=[PATH],
  text=[TEXT])`` (the text alone for a ``__NO_IMAGE__`` pair or a query without an image),
  images rewritten as RGB PNGs by ``safe_rgb_path``, texts through ``ultra_safe_truncate`` and
  the cut ladder (150 down to 20 characters, pairs too), a cut under 3 characters replaced by
  the first 20 or ``"document"`` / ``"query"``;
- ``retrieval_gme_qwen2_vl_it2it``: pairs and queries split into those with and without an
  image, each group in batches of 8, texts cut at 4,000 characters, ``normalize_embeddings``.

The official Task 4 run of BGE-VL-large and GME gives every pair the blank image (the
catalogue's ``upstream_bugs``: ``safe_rgb_path`` / ``safe_img_path`` are handed PIL images and
find no such file); mmbright encodes the real pair images, so these tests compute the official
recipe with each pair's real image file, as those functions would read it.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest
from official_hub import first_images, nomic_text, pil, preset, tensor, ultra_safe_truncate
from PIL import Image, ImageOps, UnidentifiedImageError

from mmbright_core.data.sources import open_source

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")
pytestmark = [pytest.mark.models]
DOMAIN = "gis"


def _white() -> Image.Image:
    return Image.new("RGB", (224, 224), color="white")


def test_jina_clip_task4_puts_the_white_image_for_every_missing_one(tiny_remote, tmp_path):
    source = open_source("demo")
    data = source.task(4, DOMAIN)
    assert any(d.image is None for d in data.corpus), "the demo has __NO_IMAGE__ pairs"
    retriever = preset("jina-clip", 4, tiny_remote["jina"], tmp_path)
    with retriever.bound(data), torch.no_grad():
        queries = retriever.encode_queries(data.queries, source)
        corpus = retriever.corpus_vectors(data, source)
    model = transformers.AutoModel.from_pretrained(tiny_remote["jina"], trust_remote_code=True)
    images = [
        _white() if d.image is None else pil(source.document_image_bytes(DOMAIN, d.image.path))
        for d in data.corpus
    ]
    texts = [d.text for d in data.corpus]
    t = tensor(model.encode_text(texts)).float()
    i = tensor(model.encode_image([im.convert("RGB") for im in images])).float()
    expected_corpus = F.normalize((t + i) / 2.0, p=2, dim=1).numpy()
    pictures = [
        pil(source.query_image_bytes(DOMAIN, q.images[0].path)).convert("RGB")
        if q.images
        else _white()
        for q in data.queries
    ]
    qt = tensor(model.encode_text([q.text for q in data.queries])).float()
    qi = tensor(model.encode_image(pictures)).float()
    expected_queries = F.normalize((qt + qi) / 2.0, p=2, dim=1).numpy()
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)
    np.testing.assert_allclose(queries, expected_queries, atol=1e-5)


def test_nomic_vision_task4_cuts_query_texts_at_8000_characters(tiny_remote, tmp_path):
    source = open_source("demo")
    data = source.task(4, DOMAIN)
    words = " ".join(q.text for q in data.queries)
    long_text = (words + " ") * (9000 // len(words) + 2)
    assert len(long_text) > 9000
    query = dataclasses.replace(data.queries[0], text=long_text, images=())
    retriever = preset(
        "nomic-vision",
        4,
        tiny_remote["nomic-text"],
        tmp_path,
        image_model=str(tiny_remote["nomic-vision"]),
    )
    with retriever.bound(data), torch.no_grad():
        got = retriever.encode_queries((query,), source)
    folder = tiny_remote["nomic-text"]
    expected = nomic_text(folder, [f"search_query: {long_text[:8000]}"])
    uncut = nomic_text(folder, [f"search_query: {long_text}"])
    assert np.abs(expected - uncut).max() > 1e-4  # the cut moves the vector
    np.testing.assert_allclose(got, expected, atol=1e-5)


def _pair_files(source, data, folder: Path) -> list[str | None]:
    """Write each pair's image file as the dataset holds it; None for ``__NO_IMAGE__``."""
    folder.mkdir()
    paths: list[str | None] = []
    for number, doc in enumerate(data.corpus):
        if doc.image is None:
            paths.append(None)
            continue
        path = folder / f"{number}{Path(doc.image.path).suffix}"
        path.write_bytes(source.document_image_bytes(DOMAIN, doc.image.path))
        paths.append(str(path))
    return paths


def _query_pngs(source, queries, folder: Path) -> list[str | None]:
    """``first_img.convert('RGB').save(tmp, format='PNG')`` for each query with an image."""
    folder.mkdir()
    paths: list[str | None] = []
    for number, image in enumerate(first_images(source, queries)):
        if image is None:
            paths.append(None)
            continue
        path = folder / f"{number}.png"
        image.convert("RGB").save(path, format="PNG")
        paths.append(str(path))
    return paths


def _with_imageless_query(data):
    # Every demo query has an image: one more is the last one without its images.
    last = data.queries[-1]
    imageless = dataclasses.replace(last, query_id=f"{last.query_id}-text", images=())
    return dataclasses.replace(data, queries=(*data.queries, imageless))


class OfficialBge:
    """``retrieval_bge_vl_large_it2it``'s ``safe_rgb_path`` and ``_encode_one``, one model."""

    def __init__(self, folder: Path, cache: Path) -> None:
        self.model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)
        self.model.set_processor(str(folder))
        self.model.eval()
        cache.mkdir()
        self.blank_path = str(cache / "__blank_fallback.png")  # _ensure_blank_image_file
        Image.new("RGB", (224, 224), color="white").save(self.blank_path)
        self.fixed_dir = cache / "__rgb_fixed"
        self.fixed_dir.mkdir()

    def safe_rgb_path(self, img_path: str | None) -> str:
        if not img_path:
            return self.blank_path
        p = Path(str(img_path))
        if (not p.exists()) or p.suffix.lower() == ".svg":
            return self.blank_path
        fixed = self.fixed_dir / f"{p.parent.name}-{p.stem}.png"  # the md5 key, by name
        if fixed.exists():
            return str(fixed)
        try:
            with Image.open(str(p)) as im:
                im = ImageOps.exif_transpose(im)
                im.load()
                if im.mode in ("P", "RGBA", "LA"):
                    bg = Image.new("RGB", im.size, (255, 255, 255))
                    if im.mode in ("RGBA", "LA"):
                        bg.paste(im, mask=im.split()[-1])
                    else:
                        bg.paste(im)
                    im = bg
                else:
                    im = im.convert("RGB")
                im.info.pop("transparency", None)
                im.save(str(fixed), format="PNG")
            return str(fixed)
        except (UnidentifiedImageError, OSError, ValueError, RuntimeError):
            return self.blank_path

    def encode_one(self, text: str, img_path_or_none: str | None) -> np.ndarray:
        if img_path_or_none is None:
            emb = self.model.encode(text=[text])
        else:
            img_path = self.safe_rgb_path(img_path_or_none)
            try:
                emb = self.model.encode(images=[img_path], text=[text])
            except Exception:
                # The official fallbacks: the image as a file-like PNG, then the text alone.
                try:
                    with Image.open(img_path) as im:
                        im = ImageOps.exif_transpose(im).convert("RGB")
                        buf = io.BytesIO()
                        im.save(buf, format="PNG")
                        buf.seek(0)
                    emb = self.model.encode(images=[buf], text=[text])
                except Exception:
                    emb = self.model.encode(text=[text])
        emb = tensor(emb)
        if emb.ndim == 1:
            emb = emb.view(1, -1)
        emb = F.normalize(emb.float(), p=2, dim=1)
        return emb[0].detach().cpu().numpy()

    def ladder(self, raw: str, img: str | None, fallback: str) -> np.ndarray:
        # The loop over char_limit of the pair docs ("document") and of the queries ("query").
        for char_limit in [150, 120, 100, 80, 60, 40, 20]:
            try:
                tt = ultra_safe_truncate(raw, max_chars=char_limit)
                if len(tt) < 3:
                    tt = (raw or "")[:20].strip() or fallback
                return self.encode_one(tt, img)
            except RuntimeError as e:
                if "size of tensor" not in str(e):
                    raise
        tt = (raw or "")[:15].strip() or fallback
        return self.encode_one(tt, img)


def _normalize_np(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-12)


def test_bge_vl_large_task4_is_retrieval_bge_vl_large_it2it(tmp_path):
    import tiny_remote as build

    source = open_source("demo")
    data = _with_imageless_query(source.task(4, DOMAIN))
    assert any(not d.text.strip() for d in data.corpus), "a pair without text: 'document'"
    folder = build.hub_model(tmp_path / "bge", "TinyBgeVl", max_chars=140)  # the ladder runs
    # Task 2 first, into the same cache: its blank passage ("") must not stand for Task 4's.
    task2 = source.task(2, DOMAIN)
    earlier = preset("bge-vl-large", 2, folder, tmp_path / "cache")
    with earlier.bound(task2), torch.no_grad():
        earlier.corpus_vectors(task2, source)
    retriever = preset("bge-vl-large", 4, folder, tmp_path / "cache")
    with retriever.bound(data), torch.no_grad():
        assert retriever.embedder.settings()["pair_ladder"] is True  # recorded with the run
        queries = retriever.encode_queries(data.queries, source)
        corpus = retriever.corpus_vectors(data, source)
    official = OfficialBge(folder, tmp_path / "official")
    doc_images = _pair_files(source, data, tmp_path / "pairs")
    query_images = _query_pngs(source, data.queries, tmp_path / "queries")
    with torch.no_grad():
        docs = [
            official.ladder(d.text, image, "document")
            for d, image in zip(data.corpus, doc_images, strict=True)
        ]
        expected_queries = [
            official.ladder(q.text, image, "query")
            for q, image in zip(data.queries, query_images, strict=True)
        ]
    np.testing.assert_allclose(corpus, _normalize_np(np.stack(docs)), atol=1e-5)
    np.testing.assert_allclose(queries, np.stack(expected_queries), atol=1e-5)


def _gme_official(gme, texts: list[str], images: list[str | None]) -> np.ndarray:
    # retrieval_gme_qwen2_vl_it2it: no mixed batches; text-only and multimodal, 8 at a time.
    def safe_img_path(p: str | None) -> str:
        assert p is not None  # only the items with an image come here
        with Image.open(p) as im:
            im.load()
        return p

    def encode(inputs: list) -> np.ndarray:
        out = gme.encode(
            inputs, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False
        )
        return out.detach().cpu().float().numpy()

    rows: dict[int, np.ndarray] = {}
    idx_noimg = [j for j, image in enumerate(images) if image is None]
    idx_img = [j for j, image in enumerate(images) if image is not None]
    for i in range(0, len(idx_noimg), 8):
        batch_js = idx_noimg[i : i + 8]
        emb = encode([(texts[j] or "")[:4000] for j in batch_js])
        rows.update(zip(batch_js, emb, strict=True))
    for i in range(0, len(idx_img), 8):
        batch_js = idx_img[i : i + 8]
        inputs = [
            {"text": (texts[j] or "")[:4000], "image": safe_img_path(images[j])} for j in batch_js
        ]
        rows.update(zip(batch_js, encode(inputs), strict=True))
    return np.stack([rows[j] for j in range(len(texts))]).astype(np.float32)


def test_gme_task4_is_retrieval_gme_qwen2_vl_it2it(tiny_remote, tmp_path):
    from sentence_transformers import SentenceTransformer

    source = open_source("demo")
    data = _with_imageless_query(source.task(4, DOMAIN))
    retriever = preset("gme-qwen2-vl-2b", 4, tiny_remote["gme"], tmp_path / "cache")
    with retriever.bound(data), torch.no_grad():
        queries = retriever.encode_queries(data.queries, source)
        corpus = retriever.corpus_vectors(data, source)
    gme = SentenceTransformer(str(tiny_remote["gme"]), trust_remote_code=True, device="cpu")
    doc_images = _pair_files(source, data, tmp_path / "pairs")
    query_images = _query_pngs(source, data.queries, tmp_path / "queries")
    docs = _gme_official(gme, [d.text for d in data.corpus], doc_images)
    expected_queries = _gme_official(gme, [q.text for q in data.queries], query_images)
    np.testing.assert_allclose(corpus, _normalize_np(docs), atol=1e-5)
    np.testing.assert_allclose(queries, expected_queries, atol=1e-5)

"""Caches that verify themselves: a damaged entry is reported, deleted and computed again.

Each case damages a real cache entry written by a real run on the fixture dataset (a BM25
index, CLIP embedding shards, an OCR text) and checks that the next run warns once with the
entry's path, gives exactly the run a fresh cache gives, and that the run after it is silent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mmbright_core.errors import InputError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.cache.store import EmbeddingCache, content_key

Damage = Callable[[Path], None]


def _shuffle(path: Path) -> None:
    array = np.load(path)
    np.save(path, array[np.random.default_rng(0).permutation(len(array))])


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _nan(path: Path) -> None:
    np.save(path, np.full_like(np.load(path), np.nan))


def _five_columns(path: Path) -> None:
    array = np.load(path)
    np.save(path, array[:, :5].copy())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mmbright"]


def _bm25(cache: Path, source, task: int = 1, domain: str = "academia") -> dict:
    return get_retriever("bm25", cache_dir=str(cache)).retrieve(
        source.task(task, domain), source, 10
    )


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("data.npy", _shuffle),
        ("data.npy", _truncate),
        ("indices.npy", _shuffle),
        ("terms.txt", _truncate),
        ("checks.json", _truncate),
    ],
)
def test_a_damaged_bm25_index_is_rebuilt_and_scores_unchanged(
    source, tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, damage: Damage
):
    fresh = _bm25(tmp_path / "fresh", source)
    cache = tmp_path / "cache"
    assert _bm25(cache, source) == fresh
    (folder,) = (cache / "bm25").iterdir()
    damage(folder / name)
    caplog.set_level(logging.WARNING, logger="mmbright")
    assert _bm25(cache, source) == fresh
    (line,) = _warnings(caplog)
    assert f"damaged cache entry {folder}" in line and "computed again" in line
    assert (folder / "checks.json").is_file()  # built again, with its checks
    caplog.clear()
    assert _bm25(cache, source) == fresh and not _warnings(caplog)  # the rerun is silent


def test_an_index_without_checks_is_not_trusted(source, tmp_path: Path, caplog):
    fresh = _bm25(tmp_path, source)
    (folder,) = (tmp_path / "bm25").iterdir()
    (folder / "checks.json").unlink()
    _shuffle(folder / "data.npy")
    caplog.set_level(logging.WARNING, logger="mmbright")
    assert _bm25(tmp_path, source) == fresh
    assert "checks.json is unreadable" in _warnings(caplog)[0]


@pytest.fixture
def clip_run(tiny_clip: str, source) -> Callable[[Path], dict]:
    def run(cache: Path) -> dict:
        clip = get_retriever("clip", model=tiny_clip, pretrained="none", cache_dir=str(cache))
        return clip.retrieve(source.task(3, "academia"), source, 10)

    return run


@pytest.mark.parametrize(
    ("suffix", "damage"),
    [
        (".vectors.npy", _nan),
        (".vectors.npy", _five_columns),
        (".vectors.npy", _shuffle),
        (".vectors.npy", _truncate),
        (".keys.npy", _truncate),
        (".check.json", _truncate),
    ],
)
def test_a_damaged_embedding_shard_is_encoded_again(
    clip_run, tmp_path: Path, caplog: pytest.LogCaptureFixture, suffix: str, damage: Damage
):
    fresh = clip_run(tmp_path / "fresh")
    cache = tmp_path / "cache"
    assert clip_run(cache) == fresh
    shards = sorted((cache / "embeddings").rglob(f"*{suffix}"))
    for path in shards:
        damage(path)
    caplog.set_level(logging.WARNING, logger="mmbright")
    assert clip_run(cache) == fresh
    lines = _warnings(caplog)
    assert len(lines) == len(shards)  # once per shard, each naming its path
    for path, line in zip(shards, sorted(lines), strict=True):
        assert "damaged cache entry" in line and path.name.split(".")[0] in line
    caplog.clear()
    assert clip_run(cache) == fresh and not _warnings(caplog)


def test_a_shard_of_the_format_without_checks_is_not_read(tmp_path: Path):
    cache = EmbeddingCache(tmp_path, {"model": "toy"})
    cache.encode(["alpha"], [content_key("alpha")], lambda texts: np.ones((len(texts), 3)))
    (check,) = cache.folder.glob("*.check.json")
    check.unlink()  # what the earlier format left: vectors and keys only
    assert len(EmbeddingCache(tmp_path, {"model": "toy"})) == 0


def _nan_for(word: str) -> Callable[[list[str]], np.ndarray]:
    def encode(texts: list[str]) -> np.ndarray:
        out = np.ones((len(texts), 3))
        out[[i for i, t in enumerate(texts) if word in t], 1] = np.nan
        return out

    return encode


def test_a_nan_vector_from_a_model_is_an_error_naming_model_and_input(tmp_path: Path):
    cache = EmbeddingCache(tmp_path, {"embedder": {"model": "toy-model", "pretrained": "v2"}})
    texts = ["a fine text", "the broken one", "another"]
    with pytest.raises(InputError) as caught:
        cache.encode(texts, [content_key(t) for t in texts], _nan_for("broken"), batch_size=2)
    message = str(caught.value)
    assert "'toy-model' (pretrained 'v2')" in message and "NaN" in message
    assert "the text 'the broken one'" in message
    assert len(EmbeddingCache(tmp_path, cache.settings)) == 0  # nothing of it was cached


def test_float16_overflow_is_an_infinity_and_refused(tmp_path: Path):
    cache = EmbeddingCache(tmp_path, {"model": "toy"}, dtype="float16")
    with pytest.raises(InputError, match="infinity for the text 'big'"):
        cache.encode(["big"], [content_key("big")], lambda texts: np.full((1, 3), 1e6))


def test_a_nan_image_vector_names_the_image(tiny_clip: str, source, tmp_path: Path, monkeypatch):
    clip = get_retriever("clip", model=tiny_clip, pretrained="none", cache_dir=str(tmp_path))
    real = clip.embed_images

    def nan_documents(images, role="document"):
        vectors = real(images, role)
        return np.full_like(vectors, np.nan) if role == "document" else vectors

    monkeypatch.setattr(clip, "embed_images", nan_documents)
    data = source.task(3, "academia")
    with pytest.raises(InputError, match=f"for the image '{data.corpus[0].doc_id}'"):
        clip.retrieve(data, source, 10)


def test_a_damaged_ocr_text_is_read_again(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    pytest.importorskip("rapidocr_onnxruntime")
    from fixture_dataset import encode

    from mmbright_core.retrieval.backends.ocr_reader import OcrReader

    image = encode((64, 32), "white")
    text = OcrReader(tmp_path).read(image)
    (entry,) = (tmp_path / "ocr").rglob("*.json")
    stored = json.loads(entry.read_text())
    entry.write_text(json.dumps({**stored, "text": "forged words"}))
    caplog.set_level(logging.WARNING, logger="mmbright")
    assert OcrReader(tmp_path).cached(content_key(image)) is None  # not the forged words
    assert f"damaged cache entry {entry}" in _warnings(caplog)[0] and not entry.exists()
    assert OcrReader(tmp_path).read(image) == text

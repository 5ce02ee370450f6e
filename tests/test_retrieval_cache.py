from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmbright_core.retrieval.cache import (
    CACHE_ENV,
    EmbeddingCache,
    content_key,
    default_cache_dir,
    path_sha256,
)

SETTINGS = {"model": "toy", "revision": "r1", "truncation": 8}


class CountingEncoder:
    """Encodes a text as [len, number of vowels, 1/3], counting what it was asked to encode."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.seen: list[str] = []
        self.fail_after = fail_after

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise RuntimeError("interrupted")
        self.seen.extend(texts)
        return np.array([[len(t), sum(c in "aeiou" for c in t), 1 / 3] for t in texts])


def _encode(cache: EmbeddingCache, texts: list[str], encoder: CountingEncoder) -> np.ndarray:
    return cache.encode(texts, [content_key(t) for t in texts], encoder, batch_size=2)


def test_hit_reuses_vectors_from_disk(tmp_path: Path):
    first = CountingEncoder()
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha", "beta", "alpha"], first)
    assert first.seen == ["alpha", "beta"]  # equal content is encoded once
    again = CountingEncoder()
    reread = _encode(EmbeddingCache(tmp_path, SETTINGS), ["beta", "alpha"], again)
    assert again.seen == []
    assert np.array_equal(reread, vectors[[1, 0]])


def test_vectors_are_stored_float16_and_returned_float32(tmp_path: Path):
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha"], CountingEncoder())
    assert vectors.dtype == np.float32
    assert vectors[0, 2] == np.float32(np.float16(1 / 3))  # the same value fresh or cached
    (shard,) = (tmp_path / "embeddings").rglob("*.npz")
    with np.load(shard) as stored:
        assert stored["vectors"].dtype == np.float16


@pytest.mark.parametrize(
    "change", [{"model": "other"}, {"revision": "r2"}, {"truncation": 16}, {"prefix": "q: "}]
)
def test_a_changed_setting_misses(tmp_path: Path, change: dict):
    _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha"], CountingEncoder())
    encoder = CountingEncoder()
    _encode(EmbeddingCache(tmp_path, {**SETTINGS, **change}), ["alpha"], encoder)
    assert encoder.seen == ["alpha"]


def test_a_changed_text_misses(tmp_path: Path):
    _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha"], CountingEncoder())
    encoder = CountingEncoder()
    _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha", "alpha!"], encoder)
    assert encoder.seen == ["alpha!"]


def test_interrupted_encode_keeps_finished_vectors_and_rerun_encodes_the_rest(tmp_path: Path):
    texts = [f"text {i}" for i in range(10)]
    cache = EmbeddingCache(tmp_path, SETTINGS, shard_size=3)
    with pytest.raises(RuntimeError, match="interrupted"):
        _encode(cache, texts, CountingEncoder(fail_after=6))  # three batches of 2 succeed
    assert len(EmbeddingCache(tmp_path, SETTINGS)) == 6
    rerun = CountingEncoder()
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), texts, rerun)
    assert rerun.seen == texts[6:]
    assert vectors[:, 0].tolist() == [len(t) for t in texts]
    assert not list(tmp_path.rglob("*.tmp"))


def test_memory_only_cache_writes_nothing(tmp_path: Path):
    cache = EmbeddingCache(None, SETTINGS)
    _encode(cache, ["alpha"], CountingEncoder())
    assert len(cache) == 1 and not list(tmp_path.iterdir())


def test_cache_dir_argument_then_environment_then_home(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert default_cache_dir(tmp_path / "arg") == tmp_path / "arg"
    assert default_cache_dir() == tmp_path / "env"
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_dir() == Path.home() / ".cache" / "mmbright"


def test_path_sha256_of_file_and_folder(tmp_path: Path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "w.bin").write_bytes(b"weights")
    assert path_sha256(tmp_path / "m" / "w.bin") == content_key(b"weights")
    before = path_sha256(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{}")
    assert path_sha256(tmp_path / "m") != before

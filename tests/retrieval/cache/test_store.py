from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from mmbright_core.errors import UnknownNameError
from mmbright_core.retrieval.cache import shards as cache_module
from mmbright_core.retrieval.cache.shards import shard_name, write_shard
from mmbright_core.retrieval.cache.store import (
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


def test_vectors_are_stored_float32_by_default_and_returned_float32(tmp_path: Path):
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha"], CountingEncoder())
    assert vectors.dtype == np.float32
    assert vectors[0, 2] == np.float32(1 / 3)  # the encoder's float32 value, not rounded
    (shard,) = (tmp_path / "embeddings").rglob("*.vectors.npy")
    assert np.load(shard).dtype == np.float32
    assert EmbeddingCache(tmp_path, SETTINGS).settings["dtype"] == "float32"


def test_float16_is_an_explicit_option_in_a_folder_of_its_own(tmp_path: Path):
    half = EmbeddingCache(tmp_path, SETTINGS, dtype="float16")
    vectors = _encode(half, ["alpha"], CountingEncoder())
    assert vectors.dtype == np.float32
    assert vectors[0, 2] == np.float32(np.float16(1 / 3))  # the same value fresh or cached
    assert np.load(next(half.folder.glob("*.vectors.npy"))).dtype == np.float16
    full = EmbeddingCache(tmp_path, SETTINGS)
    assert full.folder != half.folder and half.settings["dtype"] == "float16"
    with pytest.raises(UnknownNameError, match="cache dtype"):
        EmbeddingCache(tmp_path, SETTINGS, dtype="bfloat16")


def test_a_float16_cache_is_never_reused_by_a_float32_run(tmp_path: Path):
    _encode(
        EmbeddingCache(tmp_path, SETTINGS, dtype="float16"), ["alpha", "beta"], CountingEncoder()
    )
    encoder = CountingEncoder()
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha", "beta"], encoder)
    assert encoder.seen == ["alpha", "beta"]  # encoded again
    assert vectors[0, 2] == np.float32(1 / 3)  # float32-exact


def test_a_shard_of_another_dtype_in_the_folder_is_ignored_and_rewritten(tmp_path: Path):
    # However it got there, float16 vectors are never handed out by a float32 cache.
    cache = EmbeddingCache(tmp_path, SETTINGS)
    keys = [content_key("alpha")]
    half = EmbeddingCache(tmp_path, SETTINGS, dtype="float16")
    write_shard(cache.folder, shard_name(keys), keys, np.array([[5, 1, 1 / 3]]), half.settings)
    encoder = CountingEncoder()
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha"], encoder)
    assert encoder.seen == ["alpha"] and vectors[0, 2] == np.float32(1 / 3)
    assert np.load(next(cache.folder.glob("*.vectors.npy"))).dtype == np.float32
    again = CountingEncoder()
    assert _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha"], again)[0, 2] == np.float32(1 / 3)
    assert again.seen == []


def test_gathered_vectors_are_read_from_memory_maps(tmp_path: Path, monkeypatch):
    texts = [f"text {i}" for i in range(7)]
    fresh = _encode(EmbeddingCache(tmp_path, SETTINGS, shard_size=2), texts, CountingEncoder())
    opened: list[object] = []
    original = np.load

    def spy(path, *args, **kwargs):
        loaded = original(path, *args, **kwargs)
        if str(path).endswith(".vectors.npy"):
            opened.append(loaded)
        return loaded

    monkeypatch.setattr(cache_module.np, "load", spy)
    order = [5, 0, 6, 0, 3]
    gathered = EmbeddingCache(tmp_path, SETTINGS).lookup([content_key(texts[i]) for i in order])
    assert gathered.dtype == np.float32 and np.array_equal(gathered, fresh[order])
    assert opened and all(isinstance(array, np.memmap) for array in opened)


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


def test_a_shard_whose_keys_were_not_written_is_ignored_and_rewritten(tmp_path: Path, monkeypatch):
    original = cache_module.atomic_write_bytes

    def dies_before_keys(path, data):
        if str(path).endswith(".keys.npy"):
            raise OSError("disk full")
        return original(path, data)

    texts = ["alpha", "beta", "gamma"]
    monkeypatch.setattr(cache_module, "atomic_write_bytes", dies_before_keys)
    with pytest.raises(OSError, match="disk full"):
        _encode(EmbeddingCache(tmp_path, SETTINGS), texts, CountingEncoder())
    monkeypatch.setattr(cache_module, "atomic_write_bytes", original)
    folder = EmbeddingCache(tmp_path, SETTINGS).folder
    (orphan,) = folder.glob("*.vectors.npy")
    assert not list(folder.glob("*.keys.npy")) and len(EmbeddingCache(tmp_path, SETTINGS)) == 0
    rerun = CountingEncoder()
    vectors = _encode(EmbeddingCache(tmp_path, SETTINGS), texts, rerun)
    assert rerun.seen == texts and vectors[:, 0].tolist() == [5, 4, 5]
    assert list(folder.glob("*.vectors.npy")) == [orphan]  # the same shard, written again
    assert len(list(folder.glob("*.keys.npy"))) == 1


def test_shards_written_after_the_index_was_built_are_found(tmp_path: Path):
    reader = EmbeddingCache(tmp_path, SETTINGS)
    assert len(reader) == 0
    _encode(EmbeddingCache(tmp_path, SETTINGS), ["alpha", "beta"], CountingEncoder())
    encoder = CountingEncoder()
    assert _encode(reader, ["beta", "alpha"], encoder)[:, 0].tolist() == [4, 5]
    assert encoder.seen == []


def test_gathering_a_few_rows_does_not_read_the_cache_into_memory(tmp_path: Path):
    rows, dim, per_shard = 200_000, 384, 100_000
    half = EmbeddingCache(tmp_path, SETTINGS, dtype="float16")  # random bits: any value
    folder = half.folder
    rng = np.random.default_rng(7)
    picks = np.sort(rng.choice(rows, size=64, replace=False))
    keys = [f"{i:064x}" for i in range(rows)]
    expected = np.empty((len(picks), dim), dtype=np.float16)
    for start in range(0, rows, per_shard):
        shard_keys = keys[start : start + per_shard]
        # Random bit patterns below 0x7800 are finite positive float16 values.
        vectors = rng.integers(0, 0x7800, (per_shard, dim), dtype=np.uint16).view(np.float16)
        inside = (picks >= start) & (picks < start + per_shard)
        expected[inside] = vectors[picks[inside] - start]
        write_shard(folder, shard_name(shard_keys), shard_keys, vectors, half.settings)
    del vectors
    size = sum(p.stat().st_size for p in folder.glob("*.vectors.npy"))
    cache = EmbeddingCache(tmp_path, SETTINGS, dtype="float16")
    assert len(cache) == rows  # the index, from the keys files
    # numpy reports its array buffers to tracemalloc; pages of a memory map are not allocations.
    tracemalloc.start()
    try:
        gathered = cache.lookup([keys[i] for i in picks[::-1]])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size >= rows * dim * 2 and peak < size / 100  # one shard read whole is half the size
    assert np.array_equal(gathered, expected[::-1].astype(np.float32))


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

"""Shard planning, shard files in the cache, and the run command's engine options (no Ray)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mmbright_core.cli.engine_options import add_engine_arguments, with_engine
from mmbright_core.data.sources import FolderSource
from mmbright_core.errors import InputError
from mmbright_core.retrieval.cache.store import EmbeddingCache, content_key
from mmbright_core.retrieval.runner.engines import RayEncodingRetriever
from mmbright_core.retrieval.runner.ray_engine import RayEngine, encode_shard, plan_shards


class CountingEncoder:
    """Encodes text ``t`` as ``[len(t), i]`` (i: position in its call) and logs each call."""

    def __init__(self, root: Path, chunk: int, tokens: int = 0) -> None:
        self.cache = EmbeddingCache(root, {"encoder": "counting"})
        self.chunk, self.tokens = chunk, tokens
        self.calls: list[list[str]] = []

    def encode(self, items: Sequence[Any], names: Sequence[str]) -> np.ndarray:
        self.calls.append(list(items))
        return np.array([[len(t), i] for i, t in enumerate(items)], dtype=np.float32)


def _texts(n: int) -> tuple[list[str], list[str]]:
    texts = [f"passage {i}" for i in range(n)]
    return [content_key(t) for t in texts], texts


def test_shards_are_whole_local_calls_over_first_occurrences(tmp_path: Path) -> None:
    keys, texts = _texts(10)
    encoder = CountingEncoder(tmp_path, chunk=3)
    shards = plan_shards(keys + keys[:4], texts + texts[:4], encoder, shard_items=7)
    # 7 rounds down to 6 items = two calls of 3; the repeated keys are encoded once.
    assert [s.keys for s in shards] == [keys[:6], keys[6:]]
    assert [s.index for s in shards] == [0, 1] and shards[0].items == texts[:6]


def test_a_stored_shard_is_read_by_the_local_cache_and_skipped_next_time(tmp_path: Path) -> None:
    keys, texts = _texts(10)
    encoder = CountingEncoder(tmp_path, chunk=3)
    first, second = plan_shards(keys, texts, encoder, shard_items=6)
    assert encode_shard(encoder, first) == 6
    assert encoder.calls == [texts[0:3], texts[3:6]]  # the local path's calls
    cache = EmbeddingCache(tmp_path, {"encoder": "counting"})
    assert cache.lookup(keys[:6]).tolist() == [[len(t), i % 3] for i, t in enumerate(texts[:6])]
    left = plan_shards(keys, texts, encoder, shard_items=6)
    assert [s.index for s in left] == [second.index]
    assert encode_shard(encoder, left[0]) == 4
    assert plan_shards(keys, texts, encoder, shard_items=6) == []


def test_keys_cached_by_a_local_run_are_not_stored_twice(tmp_path: Path) -> None:
    keys, texts = _texts(6)
    encoder = CountingEncoder(tmp_path, chunk=3)
    local = EmbeddingCache(tmp_path, {"encoder": "counting"})
    local.encode(texts[:2], keys[:2], lambda chunk: encoder.encode(chunk, []), batch_size=3)
    (shard,) = plan_shards(keys, texts, encoder, shard_items=6)
    assert shard.fresh == [False, False, True, True, True, True]
    assert encode_shard(encoder, shard) == 4  # the batch is whole, only new keys are stored


def test_texts_travel_capped(tmp_path: Path) -> None:
    long_text = " ".join(["word"] * 100)
    (shard,) = plan_shards([content_key(long_text)], [long_text], CountingEncoder(tmp_path, 1, 5))
    assert shard.items == [" ".join(["word"] * 10)] and shard.keys == [content_key(long_text)]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_engine_arguments(parser)
    return parser.parse_args(list(argv))


def test_engine_options(tmp_path: Path) -> None:
    assert with_engine("bm25", {}, _args()).name == "bm25"
    with pytest.raises(InputError, match="need --engine ray"):
        with_engine("bm25", {}, _args("--workers", "2"))
    with pytest.raises(InputError, match="cannot encode for retriever 'bm25'"):
        with_engine("bm25", {}, _args("--engine", "ray"))
    with pytest.raises(InputError, match="worker settings"):
        with_engine("dense", {}, _args("--engine", "ray", "--workers", "0"))
    ray = with_engine("dense", {"cache_dir": str(tmp_path)}, _args("--engine", "ray"))
    assert isinstance(ray, RayEncodingRetriever) and ray.engine == RayEngine()


def test_dense_jobs_encode_each_passage_once_in_corpus_order(
    fixture_dir: Path, tmp_path: Path
) -> None:
    source = FolderSource(fixture_dir)
    engine = RayEngine(gpus_per_worker=0.5)
    options = {"cache_dir": str(tmp_path), "document_prefix": "doc: "}
    retriever = RayEncodingRetriever("dense", options, engine)
    data = source.task(4, "academia")
    ((spec, keys, items, names),) = retriever.jobs(data, source)
    passages = list(dict.fromkeys(d.doc_id.split("|||")[0] for d in data.corpus))
    text_of = {d.doc_id.split("|||")[0]: d.text for d in data.corpus}
    assert items == [text_of[p] for p in passages] and names is None
    assert keys == [content_key(t) for t in items]
    assert spec.prefix == "doc: " and dict(spec.options)["device"] == "cuda"
    assert retriever.settings() == retriever.inner.settings()

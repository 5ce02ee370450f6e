"""The Ray engine takes any registered retriever that is a CorpusEncoder, and refuses others.

Eligibility is the protocol, never a list of names: a third-party retriever with
``corpus_jobs`` and ``batch_encoder`` is encoded on Ray, one without them is refused.
No Ray instance is started: building the wrapper and listing its jobs need none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.random_rank import RandomRetriever
from mmbright_core.retrieval.cache.store import EmbeddingCache, content_key
from mmbright_core.retrieval.dual.encoders import (
    BatchEncoder,
    CallEncoder,
    CorpusEncoder,
    EncodeJob,
)
from mmbright_core.retrieval.registry import register_retriever
from mmbright_core.retrieval.runner.engines import RayEncodingRetriever
from mmbright_core.retrieval.runner.ray_engine import EncoderSpec, RayEngine
from mmbright_core.types import Document, Query, TaskData


class LengthRetriever:
    """Embeds a text as ``[len(text)]``; its whole corpus is one text job."""

    name = "length"
    tasks = frozenset({1})

    def __init__(self, cache_dir: str) -> None:
        self.cache_dir = cache_dir

    def label(self) -> str:
        return "length"

    def settings(self) -> dict[str, Any]:
        return {}

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        return {q.query_id: {} for q in data.queries}

    def corpus_jobs(self, data: TaskData, source: ImageSource | None) -> list[EncodeJob]:
        texts = [d.text for d in data.corpus]
        return [EncodeJob("text", [content_key(t) for t in texts], texts, prefix="doc: ")]

    def batch_encoder(self, role: str, prefix: str = "") -> BatchEncoder | None:
        if role != "text":
            return None
        cache = EmbeddingCache(Path(self.cache_dir), {"encoder": "length", "prefix": prefix})
        return CallEncoder(cache, 2, 0, self._lengths)

    def _lengths(self, items: Sequence[str], names: Sequence[str]) -> np.ndarray:
        return np.array([[len(t)] for t in items], dtype=np.float32)


def _data() -> TaskData:
    corpus = (Document("a", "one"), Document("b", "three"))
    return TaskData(1, "biology", "paper", (Query("q", "biology", "text"),), corpus, {}, {})


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    from mmbright_core.retrieval import registry

    monkeypatch.setattr(registry, "_EXTRA", {})  # registrations end with the test
    register_retriever("length", LengthRetriever)
    register_retriever("random-3p", lambda: RandomRetriever(seed=1))


@pytest.mark.usefixtures("registered")
def test_a_third_party_corpus_encoder_is_accepted(tmp_path: Path) -> None:
    retriever = RayEncodingRetriever("length", {"cache_dir": str(tmp_path)}, RayEngine())
    assert isinstance(retriever.inner, CorpusEncoder)
    ((spec, keys, items, names),) = retriever.jobs(_data(), None)
    options = (("cache_dir", str(tmp_path)),)
    data = _data()
    # The spec carries the task and domain, so that a worker binds its embedder as the run does.
    assert spec == EncoderSpec("length", options, "text", "doc: ", data.task, data.domain)
    assert items == ["one", "three"] and names is None
    assert keys == [content_key("one"), content_key("three")]
    encoder = spec.build()  # as a worker rebuilds it: by registered name and options
    assert encoder.chunk == 2 and encoder.encode(items, []).tolist() == [[3.0], [5.0]]
    with pytest.raises(InputError, match="no image encoder to distribute for retriever 'length'"):
        EncoderSpec("length", spec.options, "image").build()


@pytest.mark.usefixtures("registered")
def test_a_retriever_without_the_protocol_is_refused() -> None:
    assert not isinstance(RandomRetriever(), CorpusEncoder)
    with pytest.raises(InputError, match="cannot encode for retriever 'random-3p'"):
        RayEncodingRetriever("random-3p", {}, RayEngine())
    with pytest.raises(InputError, match="no text encoder to distribute for retriever 'random-3p'"):
        EncoderSpec("random-3p", ()).build()

"""Dense prompts and instructions, checked against sentence-transformers called directly.

The model is a sentence-transformers wrapper (mean pooling) around the tiny random BERT of
``tests/support/tiny_hf.py``, with one named prompt, so nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner.ray_engine import EncoderSpec
from mmbright_core.types import Document, Query, TaskData

st = pytest.importorskip("sentence_transformers")
pytestmark = [pytest.mark.models]

PASSAGES = {"d/a_1.txt": "cells divide", "d/b_1.txt": "maps of the gis layer"}
QUERY = "how do cells divide"


@pytest.fixture(scope="module")
def st_model(tiny_hf, tmp_path_factory) -> Path:
    # A plain transformers folder loads as Transformer + mean Pooling.
    model = st.SentenceTransformer(str(tiny_hf["bert"]), device="cpu")
    model.prompts = {"query": "query: "}
    folder = tmp_path_factory.mktemp("st-tiny") / "tiny-bert-st"
    model.save(str(folder))
    return folder


def _data() -> TaskData:
    corpus = tuple(Document(pid, text) for pid, text in PASSAGES.items())
    return TaskData(1, "biology", "paper", (Query("q0", "biology", QUERY),), corpus, {}, {})


def _direct(folder: Path, text: str, **options) -> np.ndarray:
    model = st.SentenceTransformer(str(folder), device="cpu")
    if "include" in options:
        model.set_pooling_include_prompt(options.pop("include"))
    return model.encode([text], normalize_embeddings=True, **options)[0]


def _scores(folder: Path, tmp_path: Path, **options) -> dict[str, float]:
    dense = get_retriever("dense", model=str(folder), cache_dir=str(tmp_path), **options)
    return dense.retrieve(_data(), None, 10)["q0"]


def _expected(folder: Path, query: np.ndarray) -> dict[str, float]:
    return {pid: 100 * float(query @ _direct(folder, text)) for pid, text in PASSAGES.items()}


@pytest.mark.parametrize(
    ("options", "direct"),
    [
        ({"query_prompt": "Ask about {domain}: "}, {"prompt": "Ask about biology: "}),
        ({"query_prompt_name": "query"}, {"prompt_name": "query"}),
        (
            {"query_prompt": "Represent: ", "pooling_include_prompt": False},
            {"prompt": "Represent: ", "include": False},
        ),
        ({"query_prefix": "Search the {domain} passages: "}, {}),
    ],
)
def test_query_prompts_give_the_vectors_sentence_transformers_gives(
    st_model, tmp_path, options, direct
):
    text = QUERY if "query_prefix" not in options else "Search the biology passages: " + QUERY
    expected = _expected(st_model, _direct(st_model, text, **direct))
    got = _scores(st_model, tmp_path, **options)
    assert got == pytest.approx(expected, abs=1e-3)
    assert got != pytest.approx(_scores(st_model, tmp_path / "plain"), abs=1e-3)


def test_a_document_prompt_applies_to_passages_only(st_model, tmp_path):
    got = _scores(st_model, tmp_path, document_prompt="passage: ")
    query = _direct(st_model, QUERY)
    expected = {
        pid: 100 * float(query @ _direct(st_model, text, prompt="passage: "))
        for pid, text in PASSAGES.items()
    }
    assert got == pytest.approx(expected, abs=1e-3)


def test_prompts_are_recorded_only_when_set(st_model, tmp_path):
    plain = get_retriever("dense", model=str(st_model), cache_dir=str(tmp_path)).settings()
    assert not {key for key in plain if "prompt" in key}
    prompted = get_retriever(
        "dense",
        model=str(st_model),
        cache_dir=str(tmp_path),
        query_prompt_name="query",
        pooling_include_prompt=False,
    ).settings()
    assert prompted["query_prompt_name"] == "query"
    assert prompted["pooling_include_prompt"] is False
    assert "document_prompt" not in prompted


def test_a_worker_fills_the_passage_prompts_domain_as_the_local_run(st_model, tmp_path):
    # A Ray worker rebuilds the retriever from its options and the spec's domain.
    options = {"model": str(st_model), "cache_dir": str(tmp_path)}
    options["document_prompt"] = "A {domain}: "
    spec = EncoderSpec("dense", tuple(sorted(options.items())), "text", "", 1, "biology")
    encoder = spec.build()
    texts = list(PASSAGES.values())
    local = get_retriever("dense", **options)
    local.corpus_jobs(_data(), None)  # binds the domain, as a local run does
    # The worker's vectors go where the local run looks for them.
    assert encoder.cache.folder == local.batch_encoder("text").cache.folder
    expected = [_direct(st_model, text, prompt="A biology: ") for text in texts]
    assert np.allclose(encoder.encode(texts, []), expected, atol=1e-6)


def _passage_cache(folder: Path, tmp_path: Path, **options) -> Path:
    dense = get_retriever("dense", model=str(folder), cache_dir=str(tmp_path), **options)
    return dense.batch_encoder("text").cache.folder


def test_an_empty_prompt_shares_the_plain_runs_cache(st_model, tmp_path):
    # instructor's official instructions are empty: its passages are the plain model's.
    plain = _passage_cache(st_model, tmp_path)
    empty = {"document_prompt": "", "pooling_include_prompt": False}
    assert _passage_cache(st_model, tmp_path, **empty) == plain
    assert _passage_cache(st_model, tmp_path, document_prompt="passage: ") != plain

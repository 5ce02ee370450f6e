from __future__ import annotations

import math

import pytest

from mmbright_core.errors import InputError
from mmbright_core.retrieval import get_retriever
from mmbright_core.types import Document, ImageRef, Query, TaskData


def _task(texts, queries, task=1, excluded=None):
    corpus = tuple(Document(f"d/{i}.txt", text) for i, text in enumerate(texts))
    qs = tuple(Query(f"q{i}", "d", text) for i, text in enumerate(queries))
    return TaskData(task, "d", "paper", qs, corpus, {}, excluded or {})


def test_lucene_bm25_arithmetic_with_plain_tokens():
    data = _task(["apple banana", "apple apple cherry", "cherry"], ["apple"])
    run = get_retriever("bm25", stemmer="none", stopwords="none").retrieve(data, None, 10)
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # N=3 passages, 2 contain "apple"
    avgdl = (2 + 3 + 1) / 3
    expected = {
        "d/1.txt": idf * 2 / (2 + 0.9 * (1 - 0.4 + 0.4 * 3 / avgdl)),
        "d/0.txt": idf * 1 / (1 + 0.9 * (1 - 0.4 + 0.4 * 2 / avgdl)),
    }
    assert list(run["q0"]) == list(expected)
    assert list(run["q0"].values()) == pytest.approx(list(expected.values()), rel=1e-6)


def test_default_analyzer_stems_and_drops_stop_words():
    data = _task(["The cat runs home", "a dog sleeps"], ["running cats", "the of and"])
    run = get_retriever("bm25").retrieve(data, None, 10)
    assert list(run["q0"]) == ["d/0.txt"]
    assert run["q1"] == {}  # only stop words: nothing matches, not even empty passages


def test_empty_passage_is_never_retrieved():
    data = _task(["", "cats"], ["cats"])
    assert list(get_retriever("bm25").retrieve(data, None, 10)["q0"]) == ["d/1.txt"]


def test_exclusions_are_removed_before_the_cut():
    texts = ["cat cat cat", "cat cat", "cat", "dog"]
    data = _task(texts, ["cat"], excluded={"q0": frozenset({"d/0.txt"})})
    run = get_retriever("bm25").retrieve(data, None, 2)
    assert list(run["q0"]) == ["d/1.txt", "d/2.txt"]


def test_task4_pairs_share_their_passage_score_and_tie_by_id():
    passages = {"d/a_1.txt": "cat cat", "d/b_1.txt": "cat and dog"}
    images = ("__NO_IMAGE__", "d/d_a_0001/image_1.png", "d/d_a_0001/image_2.png")
    corpus = tuple(
        Document(f"{pid}|||{image}", text, None if image == "__NO_IMAGE__" else ImageRef(image))
        for pid, text in passages.items()
        for image in images
    )
    excluded = {"q0": frozenset({"d/a_1.txt|||d/d_a_0001/image_2.png"})}
    data = TaskData(4, "d", "paper", (Query("q0", "d", "cat"),), corpus, {}, excluded)
    run = get_retriever("bm25").retrieve(data, None, 3)["q0"]
    assert list(run) == [
        "d/a_1.txt|||d/d_a_0001/image_1.png",
        "d/a_1.txt|||__NO_IMAGE__",
        "d/b_1.txt|||d/d_a_0001/image_2.png",
    ]
    assert run["d/a_1.txt|||__NO_IMAGE__"] == run["d/a_1.txt|||d/d_a_0001/image_1.png"]


def test_empty_corpus_gives_empty_rankings():
    assert get_retriever("bm25").retrieve(_task([], ["cat"]), None, 5) == {"q0": {}}


def test_bad_parameters_and_stemmer():
    with pytest.raises(InputError, match="k1 >= 0"):
        get_retriever("bm25", b=2.0)
    with pytest.raises(InputError, match="unknown stemmer"):
        get_retriever("bm25", stemmer="klingon").retrieve(_task(["a"], ["a"]), None, 1)

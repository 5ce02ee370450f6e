from __future__ import annotations

import math

import numpy as np
import pytest
from gensim_bm25 import official_index
from hostile import A1, hostile_copy
from hypothesis import given, settings
from hypothesis import strategies as st

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.lexical import bm25_index
from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer
from mmbright_core.retrieval.lexical.bm25_index import BM25Index
from mmbright_core.types import Document, ImageRef, Query, TaskData


def _task(texts, queries, task=1, excluded=None):
    corpus = tuple(Document(f"d/{i}.txt", text) for i, text in enumerate(texts))
    qs = tuple(Query(f"q{i}", "d", text) for i, text in enumerate(queries))
    return TaskData(task, "d", "paper", qs, corpus, {}, excluded or {})


def _gensim_scores(corpus_tokens, query_tokens):
    """The official recipe (BRIGHT retrievers.py retrieval_bm25), on already analysed text."""
    dictionary, model, index = official_index(corpus_tokens)
    out = []
    for tokens in query_tokens:
        bow = dictionary.doc2bow(tokens)
        out.append(np.asarray(index[model[bow]], dtype=np.float64) if bow else None)
    return out


def _assert_equal_to_gensim(corpus_tokens, query_tokens):
    index = BM25Index.build(corpus_tokens, 0.9, 0.4)
    for tokens, expected in zip(
        query_tokens, _gensim_scores(corpus_tokens, query_tokens), strict=True
    ):
        found = index.scores(tokens, "gensim")
        if expected is None:  # no query term in the corpus: every passage scores 0
            assert not found.any()
        else:
            np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-6)


def test_official_formula_written_out():
    # Passages "apple banana", "apple apple cherry", "cherry"; query "apple apple grape".
    data = _task(["apple banana", "apple apple cherry", "cherry"], ["apple apple grape"])
    run = get_retriever("bm25").retrieve(data, None, 10)["q0"]
    n, avgdl, k1, b = 3, (2 + 3 + 1) / 3, 0.9, 0.4
    idf = math.log(n + 1) - math.log(2 + 0.5)  # 2 of 3 passages hold "appl"

    def sat(tf, length):
        return tf / (tf + k1 * (1 - b + b * length / avgdl))

    query = idf * sat(2, 2)  # "grape" is not in the corpus: the query's length is 2, not 3
    assert list(run) == ["d/1.txt", "d/0.txt", "d/2.txt"]  # the zero-scoring passage stays
    assert run["d/1.txt"] == pytest.approx(query * idf * sat(2, 3), rel=1e-6)
    assert run["d/0.txt"] == pytest.approx(query * idf * sat(1, 2), rel=1e-6)
    assert run["d/2.txt"] == 0.0


def test_lucene_scoring_is_an_explicit_option():
    data = _task(["apple banana", "apple apple cherry", "cherry"], ["apple apple"])
    run = get_retriever("bm25", scoring="lucene").retrieve(data, None, 10)["q0"]
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    avgdl = 2.0
    # Lucene counts the repeated query term twice and uses idf once.
    expected = 2 * idf * 2 / (2 + 0.9 * (1 - 0.4 + 0.4 * 3 / avgdl))
    assert run["d/1.txt"] == pytest.approx(expected, rel=1e-6)
    assert get_retriever("bm25", scoring="lucene").settings()["scoring"] == "lucene"
    assert get_retriever("bm25").settings()["scoring"] == "gensim"


def _assert_equal_to_gensim_on(name: str, task: int) -> None:
    """Every domain of one task of a source, analysed as the backend does, against gensim."""
    source = open_source(name)
    analyzer = EnglishAnalyzer()
    for domain in source.domains():
        data = source.task(task, domain)
        corpus = [analyzer.analyze(d.text) for d in data.corpus]
        queries = [analyzer.analyze(q.text) for q in data.queries]
        _assert_equal_to_gensim(corpus, queries)


def test_equal_to_gensim_on_the_demo():
    _assert_equal_to_gensim_on("demo", 2)


def test_equal_to_gensim_on_the_fixture(fixture_dir):
    _assert_equal_to_gensim_on(str(fixture_dir), 1)


_WORDS = st.sampled_from([f"w{i}" for i in range(12)])


@settings(max_examples=80, deadline=None)
@given(
    corpus=st.lists(st.lists(_WORDS, max_size=15), min_size=1, max_size=12),
    queries=st.lists(st.lists(_WORDS | st.just("unseen"), max_size=10), min_size=1, max_size=4),
)
def test_equal_to_gensim_on_generated_corpora(corpus, queries):
    if not any(corpus):
        return  # gensim divides by a zero average length; BM25Index uses 1
    _assert_equal_to_gensim(corpus, queries)


def test_retriever_scores_equal_gensim_end_to_end():
    texts = ["The cats' toys were running", "A dog's bone", "", "Running dogs and cats"]
    queries = ["running cats", "the of and", "bone bone dog"]
    data = _task(texts, queries)
    run = get_retriever("bm25").retrieve(data, None, 10)
    analyzer = EnglishAnalyzer()
    expected = _gensim_scores(
        [analyzer.analyze(t) for t in texts], [analyzer.analyze(q) for q in queries]
    )
    for i, scores in enumerate(expected):
        found = run[f"q{i}"]
        assert len(found) == len(texts)  # every passage is scored, as officially
        want = np.zeros(len(texts)) if scores is None else scores
        got = np.array([found[f"d/{j}.txt"] for j in range(len(texts))])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_exclusions_are_removed_before_the_cut():
    texts = ["cat cat cat", "cat cat", "cat", "dog"]
    data = _task(texts, ["cat"], excluded={"q0": frozenset({"d/0.txt"})})
    run = get_retriever("bm25").retrieve(data, None, 2)
    assert list(run["q0"]) == ["d/1.txt", "d/2.txt"]


def test_zero_scores_fill_the_cut_in_corpus_order():
    # Official: a stable sort of every passage, so the first zero-scoring ones fill the cut.
    texts = ["cat", "dog", "emu", "fox"]
    run = get_retriever("bm25").retrieve(_task(texts, ["cat"]), None, 3)["q0"]
    assert list(run) == ["d/0.txt", "d/2.txt", "d/1.txt"]  # zeros then by doc id descending


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
        "d/b_1.txt|||__NO_IMAGE__",  # of b's three tied pairs, the first in corpus order
    ]
    assert run["d/a_1.txt|||__NO_IMAGE__"] == run["d/a_1.txt|||d/d_a_0001/image_1.png"]


def test_empty_corpus_gives_empty_rankings():
    assert get_retriever("bm25").retrieve(_task([], ["cat"]), None, 5) == {"q0": {}}


def test_index_is_cached_on_disk_and_reused(tmp_path, monkeypatch):
    texts = ["apple banana", "apple apple cherry", "cherry"]
    built = get_retriever("bm25", cache_dir=str(tmp_path)).index(texts)
    assert len(list((tmp_path / "bm25").iterdir())) == 1

    def no_build(*args):
        raise AssertionError("the cached index should have been read")

    monkeypatch.setattr(BM25Index, "from_texts", no_build)
    second = get_retriever("bm25", cache_dir=str(tmp_path)).index(texts)
    assert second.terms == built.terms and (second.size, second.avgdl) == (3, built.avgdl)
    assert (second.postings != built.postings).nnz == 0
    with pytest.raises(AssertionError, match="cached index"):  # other texts: a new index
        get_retriever("bm25", cache_dir=str(tmp_path)).index([*texts, "durian"])
    with pytest.raises(AssertionError, match="cached index"):  # other parameters: a new one
        get_retriever("bm25", cache_dir=str(tmp_path), k1=1.2).index(texts)


def test_bad_parameters():
    with pytest.raises(InputError, match="k1 >= 0"):
        get_retriever("bm25", b=2.0)
    with pytest.raises(UnknownNameError, match="did you mean 'gensim'"):
        get_retriever("bm25", scoring="gensin")


WORDS = st.sampled_from(["the", "ponies'", "caresses", "e-mail", "U.S.A.", "running", "", "日本語"])
PASSAGE = st.lists(WORDS | st.text(max_size=5), max_size=8).map(" \n".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(PASSAGE, max_size=12), st.integers(1, 5))
def test_indexing_texts_in_blocks_equals_indexing_their_token_lists(texts, block):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25_index, "_BLOCK", block)  # pieces seen again in later blocks
        from_texts = BM25Index.from_texts(texts, EnglishAnalyzer(), 0.9, 0.4)
    expected = BM25Index.build(EnglishAnalyzer().analyze_many(texts), 0.9, 0.4)
    assert from_texts.terms == expected.terms
    assert (from_texts.size, from_texts.avgdl) == (expected.size, expected.avgdl)
    assert from_texts.postings.shape == expected.postings.shape
    assert (from_texts.postings != expected.postings).nnz == 0


@pytest.mark.timeout(120)
def test_a_run_over_a_passage_of_one_megabyte_word_ranks_it_by_its_pieces(
    fixture_dir, tmp_path, monkeypatch
):
    # The passage is cut into pieces of 255 characters; the query of one such piece finds it.
    root = hostile_copy(fixture_dir, tmp_path, "a" * 255, "a" * 1_000_000)
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path / "cache"))
    args = ["run", "--source", str(root), "--task", "1", "--domain", "academia"]
    assert main([*args, "--retriever", "bm25", "--out", str(tmp_path / "out")]) == 0
    ranked = read_outputs(tmp_path / "out" / "run_t2t_bm25").runs["academia"]
    (query,) = [q for q in ranked if q.endswith("a1")]
    scores = ranked[query]
    best = max(scores, key=scores.__getitem__)
    assert best == A1 and scores[A1] > 0
    assert all(score == 0 for doc, score in scores.items() if doc != A1)

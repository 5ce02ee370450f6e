"""Attributions add up to the run's scores: BM25 terms, CLIP text and image parts, dense.

The inline cases write the formulas out; the demo and fixture cases hold every explanation
to a real run of the package's retrievers (and to the shipped demo runs).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from analyzer_cases import CASES

import mmbright_core.data
from mmbright_core.analysis.attribution import (
    FusionAttribution,
    LexicalAttribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.data.demo_source import QUERY_KINDS
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.backends.ocr import OcrAugmented
from mmbright_core.retrieval.backends.ocr_reader import OcrReader
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever
from mmbright_core.retrieval.lexical.bm25_explain import SNIPPET_WIDTH
from mmbright_core.types import Document, ImageRef, Query, TaskData

SHIPPED = Path(mmbright_core.data.__file__).parent / "demo" / "runs"


def task(corpus: list[str], queries: list[str], number: int = 2) -> TaskData:
    return TaskData(
        task=number,  # type: ignore[arg-type]
        domain="d",
        protocol="paper",
        queries=tuple(
            Query(f"q{i}", "d", text, (ImageRef("q.png"),)) for i, text in enumerate(queries)
        ),
        corpus=tuple(Document(f"d/{i}.txt", text) for i, text in enumerate(corpus)),
        qrels={},
        excluded={},
    )


# --- analyze_spans ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def analyzer() -> EnglishAnalyzer:
    return EnglishAnalyzer()


def assert_spans_agree(analyzer: EnglishAnalyzer, text: str) -> None:
    spans = analyzer.analyze_spans(text)
    assert [term for term, _, _ in spans] == analyzer.analyze(text)
    for term, start, end in spans:
        assert analyzer.term(text[start:end]) == term  # the span is the raw token


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_analyze_spans_gives_analyze_terms_on_the_analyzer_cases(analyzer, text, expected):
    assert [term for term, _, _ in analyzer.analyze_spans(text)] == expected
    assert_spans_agree(analyzer, text)


def test_analyze_spans_on_edges_long_tokens_and_repeats(analyzer):
    text = "(Steven's) e-mail: café\u00a0日本語 " + "a" * 300 + " x" * 3 + " " + "z" * 255 + "'s"
    assert_spans_agree(analyzer, text)
    spans = analyzer.analyze_spans("run, ran (running)")
    assert spans == [("run", 0, 3), ("ran", 5, 8), ("run", 10, 17)]


def test_analyze_spans_gives_analyze_terms_on_the_demo(analyzer):
    source = open_source("demo")
    for domain in source.domains():
        data = source.task(2, domain)
        for text in [d.text for d in data.corpus] + [q.text for q in data.queries]:
            assert_spans_agree(analyzer, text)


# --- BM25: the terms add up ---------------------------------------------------------------------


def test_terms_are_the_formulas_products():
    # N = 3 passages of 2, 3 and 1 terms: avgdl = 2. k1 = 0.9, b = 0.4.
    data = task(["apple banana", "apple apple cherry", "banana"], ["apple cherry"])
    bm25 = BM25Retriever(cache_dir="none")
    (explained,) = explain(bm25, data, None, "q0", ["d/1.txt"]).values()
    assert isinstance(explained, LexicalAttribution)
    sat_query = 1 / (1 + 0.9 * (0.6 + 0.4 * 2 / 2))  # tf 1 in a query of 2 known terms
    idf_apple, idf_cherry = math.log(4) - math.log(2.5), math.log(4) - math.log(1.5)
    apple = idf_apple**2 * sat_query * (2 / (2 + 0.9 * (0.6 + 0.4 * 3 / 2)))
    cherry = idf_cherry**2 * sat_query * (1 / (1 + 0.9 * (0.6 + 0.4 * 3 / 2)))
    by_term = {t.term: t for t in explained.terms}
    assert by_term["appl"].contribution == pytest.approx(apple, rel=1e-6)
    assert by_term["cherri"].contribution == pytest.approx(cherry, rel=1e-6)
    assert [t.term for t in explained.terms] == ["cherri", "appl"]  # by contribution
    assert (by_term["appl"].passage_tf, by_term["appl"].query_tf) == (2, 1)
    assert explained.score == pytest.approx(apple + cherry, rel=1e-6)  # float32 postings
    run = bm25.retrieve(data, None, 3)
    assert explained.score == pytest.approx(run["q0"]["d/1.txt"], rel=1e-9)
    assert explained.snippet == "apple apple cherry"
    assert [(s.term, s.start, s.end) for s in explained.spans] == [
        ("appl", 0, 5),
        ("appl", 6, 11),
        ("cherri", 12, 18),
    ]


def test_lucene_scoring_terms_add_up_too():
    data = task(["apple banana", "apple apple cherry", "banana"], ["apple apple cherry"])
    bm25 = BM25Retriever(scoring="lucene", cache_dir="none")
    explained = explain(bm25, data, None, "q0", ["d/0.txt", "d/1.txt", "d/2.txt"])
    run = bm25.retrieve(data, None, 3)["q0"]
    for doc_id, score in run.items():
        assert explained[doc_id].score == pytest.approx(score, rel=1e-9, abs=1e-12)
    by_term = {t.term: t for t in explained["d/1.txt"].terms}  # type: ignore[union-attr]
    idf = math.log1p((3 - 2 + 0.5) / (2 + 0.5))
    assert by_term["appl"].query_weight == pytest.approx(idf * 2)  # each occurrence adds


def test_snippet_covers_the_strongest_terms():
    filler = "filler words " * 40  # 520 characters of nothing matching
    passage = f"rare {filler}common rare ending {filler}common"
    data = task([passage, "common text", "common words", "other"], ["rare common"])
    bm25 = BM25Retriever(cache_dir="none")
    (explained,) = explain(bm25, data, None, "q0", ["d/0.txt"]).values()
    assert isinstance(explained, LexicalAttribution)
    assert len(explained.snippet) <= SNIPPET_WIDTH
    assert "common rare ending" in explained.snippet  # both terms, in one window
    start = explained.snippet_start
    assert passage[start : start + len(explained.snippet)] == explained.snippet
    assert {s.term for s in explained.spans} == {"rare", "common"}
    for span in explained.spans:
        assert bm25.analyzer.term(explained.snippet[span.start : span.end]) == span.term


def test_bm25_terms_sum_to_a_fresh_run_and_to_the_shipped_demo_run():
    source = open_source("demo")
    bm25 = get_retriever("bm25")
    shipped = read_outputs(SHIPPED / "run_it2t_bm25").runs["biology"]
    data = source.task(2, "biology")
    run = bm25.retrieve(data, source, 10)
    assert len(run) == len(data.queries)
    for query_id, docs in run.items():
        explained = explain(bm25, data, source, query_id, list(docs))
        for doc_id, score in docs.items():
            found = explained[doc_id]
            assert isinstance(found, LexicalAttribution)
            assert found.score == pytest.approx(score, rel=1e-6)
            assert found.score == pytest.approx(shipped[query_id][doc_id], rel=1e-6)
            assert sum(t.contribution for t in found.terms) == pytest.approx(score, rel=1e-6)


def test_task4_pairs_are_explained_by_their_passage():
    source = open_source("demo")
    shipped = read_outputs(SHIPPED / "it2it_bm25").runs["biology"]
    data = source.task(4, "biology")
    query_id = data.queries[0].query_id
    top = dict(list(shipped[query_id].items())[:10])
    explained = explain(get_retriever("bm25"), data, source, query_id, list(top))
    for doc_id, score in top.items():
        assert explained[doc_id].score == pytest.approx(score, rel=1e-6)  # type: ignore[union-attr]


# --- OCR: where each term comes from ----------------------------------------------------------


class FixedText:
    """Stands in for the OCR model: every image reads as the same two lines."""

    def __init__(self, text: list[tuple[str, float]]) -> None:
        self.text = text

    def __call__(self, pixels):
        boxes = [
            ([[0, 10 * i], [9, 10 * i], [9, 10 * i + 9], [0, 10 * i + 9]], t, s)
            for i, (t, s) in enumerate(self.text)
        ]
        return boxes, None


class OneImage:
    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        import io

        from PIL import Image

        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), "white").save(buffer, format="PNG")
        return buffer.getvalue()

    def document_image_bytes(self, domain: str, path: str) -> bytes | None:
        return None


def test_ocr_terms_are_marked_by_origin_and_the_augmented_query_is_scored():
    reader = OcrReader(None)
    reader._engine = FixedText([("Cherry lock", 0.9), ("apples", 0.9)])
    ocr = OcrAugmented("ocr-bm25", BM25Retriever(cache_dir="none"), reader, "first")
    data = task(["apple banana", "apple apple cherry lock", "banana"], ["apple banana"])
    explained = explain(ocr, data, OneImage(), "q0", ["d/0.txt", "d/1.txt"])
    run = ocr.retrieve(data, OneImage(), 3)["q0"]
    for doc_id in ("d/0.txt", "d/1.txt"):
        assert explained[doc_id].score == pytest.approx(run[doc_id], rel=1e-9)
    terms = {t.term: t for t in explained["d/1.txt"].terms}  # type: ignore[union-attr]
    assert {term: t.origin for term, t in terms.items()} == {
        "appl": "both",
        "banana": "text",
        "cherri": "image",
        "lock": "image",
    }
    assert terms["appl"].surface == ("apple", "apples") and terms["appl"].query_tf == 2
    assert terms["cherri"].surface == ("Cherry",)


@pytest.mark.models
@pytest.mark.slow
def test_ocr_bm25_marks_the_clue_words_as_image_and_sums_to_the_shipped_run():
    # The words each clue image shows, which the query text lacks (demo_build QUERY_KINDS).
    clues = {
        "askubuntu_0": "libssl1.1",
        "askubuntu_1": "frontend",
        "askubuntu_2": "rtl8821ce",
        "biology_2": "metaphas",
        "gis_0": "4326",
        "gis_1": "proj.db",
        "physics_1": "worldlin",
    }
    assert set(clues) <= {q for q, kind in QUERY_KINDS.items() if kind == "clue"}
    source = open_source("demo")
    ocr = get_retriever("ocr-bm25")  # the session's cache: OCR results are shared
    shipped = read_outputs(SHIPPED / "run_it2t_ocr-bm25").runs
    for query_id, clue in clues.items():
        domain = query_id.split("_")[0]
        top = dict(list(shipped[domain][query_id].items())[:10])
        explained = explain(ocr, source.task(2, domain), source, query_id, list(top))
        for doc_id, score in top.items():
            found = explained[doc_id]
            assert isinstance(found, LexicalAttribution)
            assert found.score == pytest.approx(score, rel=1e-6)
            assert clue in {t.term for t in found.terms if t.origin == "image"}


# --- no retriever, no guess -------------------------------------------------------------------


def test_without_a_retriever_every_document_is_unavailable():
    data = task(["apple"], ["apple"])
    found = explain(None, data, None, "q0", ["d/0.txt", "d/9.txt"])
    assert set(found) == {"d/0.txt", "d/9.txt"}
    assert all(isinstance(a, Unavailable) and "retriever" in a.reason for a in found.values())
    reason = Unavailable("settings differ")
    assert explain(reason, data, None, "q0", ["d/0.txt"]) == {"d/0.txt": reason}
    other = explain(get_retriever("random"), data, None, "q0", ["d/0.txt"])["d/0.txt"]
    assert isinstance(other, Unavailable) and "random" in other.reason


def test_documents_outside_the_corpus_and_unknown_queries():
    data = task(["apple"], ["apple"])
    found = explain(BM25Retriever(cache_dir="none"), data, None, "q0", ["d/0.txt", "x"])
    assert isinstance(found["d/0.txt"], LexicalAttribution)
    assert isinstance(found["x"], Unavailable) and "not in the corpus" in found["x"].reason
    with pytest.raises(InputError, match="not in the task's data"):
        explain(BM25Retriever(cache_dir="none"), data, None, "q9", ["d/0.txt"])


# --- rebuilding the retriever from the run's configuration ------------------------------------


def config_of(retriever, number: int = 2) -> dict:
    # Through JSON, as config.json stores it.
    built = RunConfig.build(retriever, task=number, protocol="paper", source="demo", k=10)
    return json.loads(built.to_json())


@pytest.mark.parametrize("scoring", ["gensim", "lucene"])
def test_bm25_round_trips_through_its_configuration(scoring: str):
    original = get_retriever("bm25", scoring=scoring, k1=1.2, b=0.75)
    rebuilt = retriever_from_config(config_of(original))
    assert isinstance(rebuilt, BM25Retriever)
    assert (rebuilt.scoring, rebuilt.k1, rebuilt.b) == (scoring, 1.2, 0.75)
    assert rebuilt.settings() == original.settings()


def test_the_shipped_demo_configurations_rebuild_their_retrievers():
    for folder in ("run_it2t_bm25", "it2it_bm25"):
        stored = json.loads((SHIPPED / folder / "config.json").read_text(encoding="utf-8"))
        assert isinstance(retriever_from_config(stored), BM25Retriever)
    stored = json.loads((SHIPPED / "run_it2t_ocr-bm25" / "config.json").read_text(encoding="utf-8"))
    rebuilt = retriever_from_config(stored)
    if isinstance(rebuilt, Unavailable):  # another rapidocr version may read other words
        assert "ocr_version" in rebuilt.reason
    else:
        assert isinstance(rebuilt, OcrAugmented) and rebuilt.image_policy == "first"


def test_configurations_that_cannot_be_rebuilt_faithfully_say_why():
    stored = config_of(get_retriever("bm25"))
    changed = {**stored, "options": {**stored["options"], "analyzer_settings": "0" * 16}}
    found = retriever_from_config(changed)
    assert isinstance(found, Unavailable) and "analyzer_settings" in found.reason
    recorded = read_outputs(SHIPPED / "run_it2t_bm25").run_config
    assert retriever_from_config(recorded).settings() == get_retriever("bm25").settings()  # type: ignore[union-attr]
    scalars = {k: v for k, v in recorded.items() if k != "options"}  # a summary without them
    found = retriever_from_config(scalars)
    assert isinstance(found, Unavailable) and "does not record" in found.reason
    found = retriever_from_config({**stored, "retriever": "someone-elses"})
    assert isinstance(found, Unavailable) and "no recipe" in found.reason
    with pytest.raises(InputError, match="not a run configuration"):
        retriever_from_config({"retriever": "bm25"})


def test_random_round_trips():
    rebuilt = retriever_from_config(config_of(get_retriever("random", seed=7)))
    assert rebuilt.settings() == {"seed": 7}  # type: ignore[union-attr]


# --- CLIP: text part + image part ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("number", "policy"), [(2, "first"), (3, "concat"), (4, "all"), (1, "first")]
)
def test_clip_text_and_image_parts_add_up_to_the_run(
    tiny_clip: str, fixture_dir: Path, tmp_path: Path, number: int, policy: str
):
    source = open_source(str(fixture_dir))
    clip = get_retriever(
        "clip", model=tiny_clip, pretrained="none", image_policy=policy, cache_dir=str(tmp_path)
    )
    seen = set()
    for domain in source.domains():
        data = source.task(number, domain)
        run = clip.retrieve(data, source if number > 1 else None, 1000)
        for query in data.queries:
            docs = run[query.query_id]
            explained = explain(clip, data, source, query.query_id, list(docs))
            for doc_id, score in docs.items():
                found = explained[doc_id]
                assert isinstance(found, FusionAttribution) and found.policy == policy
                assert found.text_part + found.image_part == pytest.approx(
                    score, rel=1e-5, abs=1e-4
                )
                seen.add((found.placeholder, len(found.images_used)))
                if number == 1:
                    assert found.image_part == 0 and found.images_used == ()
                elif found.placeholder == "white":
                    assert found.images_used == () and found.pictures[0].size == (224, 224)
                else:
                    assert found.images_used and found.pictures
                    if policy != "all":
                        assert len(found.pictures) == 1  # concat: the one concatenated image
    if number > 1:  # concat and all fuse a query's several images, first only one
        assert any(used > 1 for _, used in seen) == (policy != "first")


@pytest.mark.slow
@pytest.mark.parametrize("no_image", ["white", "text"])
def test_a_query_without_decodable_image_is_explained_as_fused(
    tiny_clip: str, fixture_dir: Path, tmp_path: Path, no_image: str
):
    source = open_source(str(fixture_dir))
    data = source.task(2, "academia")
    blind = dataclasses.replace(data.queries[0], images=(ImageRef("academia/nowhere.png"),))
    data = dataclasses.replace(data, queries=(blind,))
    clip = get_retriever(
        "clip", model=tiny_clip, pretrained="none", no_image=no_image, cache_dir=str(tmp_path)
    )
    run = clip.retrieve(data, source, 5)[blind.query_id]
    explained = explain(clip, data, source, blind.query_id, list(run))
    for doc_id, score in run.items():
        found = explained[doc_id]
        assert isinstance(found, FusionAttribution)
        assert found.text_part + found.image_part == pytest.approx(score, rel=1e-5, abs=1e-4)
        assert found.placeholder == no_image and found.images_used == ()
        assert "academia/nowhere.png" in dict(found.skipped)
        if no_image == "text":
            assert found.image_part == 0 and found.pictures == ()
        else:
            assert found.pictures[0].size == (224, 224)


@pytest.mark.slow
def test_clip_round_trips_through_its_configuration(tiny_clip: str, tmp_path: Path):
    original = get_retriever(
        "clip", model=tiny_clip, pretrained="none", seed=3, image_policy="concat", no_image="text"
    )
    rebuilt = retriever_from_config(config_of(original), cache_dir=str(tmp_path))
    assert not isinstance(rebuilt, Unavailable), rebuilt
    assert rebuilt.settings() == original.settings()
    assert (rebuilt.seed, rebuilt.image_policy, rebuilt.no_image) == (3, "concat", "text")  # type: ignore[attr-defined]
    stored = config_of(original)
    other = {**stored, "options": {**stored["options"], "weights": "random:seed=4:torch=0"}}
    found = retriever_from_config(other)
    assert isinstance(found, Unavailable) and "weights" in found.reason


def test_parts_are_exact_on_vectors_written_out():
    # q = (t + i) / ||t + i||: with t = (3, 0), i = (0, 4), ||t + i|| = 5 and for d = (1, 0):
    # 100 * q.d = 100 * 3 / 5 = 60 = 60 (text) + 0 (image); for d = (0, 1): 0 + 80.
    t, i = np.array([3.0, 0.0]), np.array([0.0, 4.0])
    norm = np.linalg.norm(t + i)
    for d, parts in ((np.array([1.0, 0.0]), (60.0, 0.0)), (np.array([0.0, 1.0]), (0.0, 80.0))):
        assert (100 * t @ d / norm, 100 * i @ d / norm) == pytest.approx(parts)
        assert 100 * ((t + i) / norm) @ d == pytest.approx(sum(parts))


# --- dense ----------------------------------------------------------------------------------------


@pytest.mark.models
@pytest.mark.slow
def test_dense_and_ocr_dense_scores_equal_the_run(tmp_path: Path):
    pytest.importorskip("sentence_transformers")
    reader = OcrReader(None)
    reader._engine = FixedText([("cherry orchard", 0.9)])
    dense = get_retriever("dense", cache_dir=str(tmp_path))
    ocr = OcrAugmented("ocr-dense", dense, reader, "first")
    data = task(["apple banana", "cherry trees in bloom", "a banana split"], ["fruit"])
    for retriever in (dense, ocr):
        run = retriever.retrieve(data, OneImage(), 3)["q0"]
        explained = explain(retriever, data, OneImage(), "q0", list(run))
        for doc_id, score in run.items():
            assert explained[doc_id].score == pytest.approx(score, rel=1e-5, abs=1e-4)  # type: ignore[union-attr]
    plain = dense.retrieve(data, None, 3)["q0"]
    explained = explain(ocr, data, OneImage(), "q0", list(plain))
    for doc_id, score in plain.items():
        assert explained[doc_id].without_ocr == pytest.approx(score, rel=1e-5, abs=1e-4)  # type: ignore[union-attr]
    assert retriever_from_config(config_of(dense)).settings() == dense.settings()  # type: ignore[union-attr]


@pytest.mark.slow
def test_clip_parts_add_up_to_a_plain_cosine_run_rebuilt_from_its_folder(
    tiny_clip: str, tmp_path: Path
):
    from mmbright_core.cli import main

    cache = str(tmp_path / "cache")
    args = ["run", "--source", "demo", "--task", "2", "--domain", "biology", "--k", "10"]
    args += ["--retriever", "clip", "--model", tiny_clip, "--pretrained", "none"]
    assert main([*args, "--score-scale", "1", "--cache-dir", cache, "--out", str(tmp_path)]) == 0
    (config_file,) = tmp_path.glob("*/config.json")
    (scores_file,) = tmp_path.glob("*/biology/scores.json")
    config = json.loads(config_file.read_text())
    assert config["config"]["options"]["score_scale"] == 1.0
    rebuilt = retriever_from_config(config, cache_dir=cache)
    source = open_source("demo")
    data = source.task(2, "biology")
    for query_id, scores in json.loads(scores_file.read_text()).items():
        explained = explain(rebuilt, data, source, query_id, list(scores))
        for doc_id, score in scores.items():
            found = explained[doc_id]
            assert isinstance(found, FusionAttribution)
            assert found.text_part + found.image_part == pytest.approx(score, rel=1e-5, abs=1e-7)

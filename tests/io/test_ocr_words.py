"""An OCR run records the words read from its query images (``ocr.json``) and is explained
from them alone: without the OCR engine, as the dashboard's own install (``[app]``) runs."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import mmbright_core.data
from mmbright_core.analysis.attribution import (
    LexicalAttribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.analysis.table import query_image_features
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.ocr_words import OCR_FILE, ImageRead, ocr_words_json, read_ocr_words
from mmbright_core.io.official import read_outputs
from mmbright_core.ranking import top_k
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.backends.ocr import OcrAugmented
from mmbright_core.retrieval.backends.ocr_reader import OcrReader
from mmbright_core.retrieval.cache.store import content_key
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever
from mmbright_core.retrieval.runner.task_run import run_task

SHIPPED = Path(mmbright_core.data.__file__).parent / "demo" / "runs"
OCR_RUNS = ("run_it2t_ocr-bm25", "it2it_ocr-bm25")  # tasks 2 and 4
ENGINE = {"engine": "rapidocr-onnxruntime", "version": "1.4.4", "min_score": 0.5}


class FixedText:
    """Stands in for the OCR model: every image reads as the same two boxes."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pixels):
        self.calls += 1
        return [([[0, 0], [9, 0], [9, 9], [0, 9]], "proj.db EPSG", 0.9)], None


def _fake_ocr(tmp_path: Path) -> OcrAugmented:
    reader = OcrReader(None)
    reader._engine = FixedText()
    return OcrAugmented("ocr-bm25", BM25Retriever(cache_dir=str(tmp_path)), reader, "first")


def test_a_run_writes_each_query_image_read_and_its_words_beside_its_scores(tmp_path: Path):
    source = open_source("demo")
    ocr = _fake_ocr(tmp_path)
    outcome = run_task(TaskView(source, 2), ocr, tmp_path / "out", domains=["gis"])
    words = read_outputs(outcome.task_dir).ocr_words
    assert words is not None and words.image_policy == "first"
    assert dict(words.engine) == ocr.reader.settings  # the engine that read them
    queries = source.task(2, "gis").queries
    assert set(words.queries["gis"]) == {q.query_id for q in queries}
    for query in queries:
        read = words.images_read("gis", query.query_id)
        assert read is not None and len(read) == (1 if query.images else 0)
        for image in read:  # the first image, keyed by its file's bytes
            assert image.path == query.images[0].path
            assert image.sha256 == content_key(source.query_image_bytes("gis", image.path) or b"")
            assert image.text == "proj.db EPSG"


def test_a_domain_without_its_words_runs_again(tmp_path: Path):
    source = open_source("demo")
    ocr = _fake_ocr(tmp_path)
    run_task(TaskView(source, 2), ocr, tmp_path, domains=["gis"])
    assert run_task(TaskView(source, 2), ocr, tmp_path, domains=["gis"]).domains[0].reused
    (tmp_path / "run_it2t_ocr-bm25" / "gis" / OCR_FILE).unlink()
    again = run_task(TaskView(source, 2), ocr, tmp_path, domains=["gis"])
    assert (
        not again.domains[0].reused
        and (tmp_path / "run_it2t_ocr-bm25" / "gis" / OCR_FILE).is_file()
    )


@pytest.mark.models
@pytest.mark.slow
def test_the_shipped_words_are_what_the_ocr_engine_reads(tmp_path: Path):
    pytest.importorskip("rapidocr_onnxruntime")
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path / "cache"))
    outcome = run_task(TaskView(open_source("demo"), 2), ocr, tmp_path, domains=["gis"])
    written = json.loads((outcome.task_dir / "gis" / OCR_FILE).read_text(encoding="utf-8"))
    shipped = json.loads((SHIPPED / "run_it2t_ocr-bm25" / "gis" / OCR_FILE).read_text("utf-8"))
    assert written == shipped and written["texts"]


def _explain_every_hit(name: str) -> tuple[int, int]:
    """Explain each query's top 10 in a shipped run; return (hits, image terms that matched)."""
    outputs = read_outputs(SHIPPED / name)
    retriever = retriever_from_config(outputs.run_config, ocr_words=outputs.ocr_words)
    assert isinstance(retriever, OcrAugmented), retriever
    source, hits, from_image = open_source("demo"), 0, 0
    config = outputs.run_config
    for domain, run in outputs.runs.items():
        data = source.task(config["task"], domain, config["protocol"])
        for query_id, scores in run.items():
            top = top_k(scores, 10)
            found = explain(retriever, data, source, query_id, list(top))
            for doc_id, score in top.items():
                attribution = found[doc_id]
                assert isinstance(attribution, LexicalAttribution), attribution
                assert attribution.score == pytest.approx(score, rel=1e-6, abs=1e-9)
                from_image += sum(
                    t.origin != "text" and t.contribution > 0 for t in attribution.terms
                )
                hits += 1
    return hits, from_image


@pytest.mark.parametrize("name", OCR_RUNS)
def test_every_shipped_hit_is_explained_without_the_ocr_engine(no_ocr_engine, name: str):
    with pytest.raises(ImportError):
        __import__("rapidocr_onnxruntime")
    hits, from_image = _explain_every_hit(name)
    assert hits >= 100 and from_image > 0  # the image's words are in the explanations


def test_without_recorded_words_or_engine_the_answer_names_the_extra(no_ocr_engine):
    config = read_outputs(SHIPPED / "run_it2t_ocr-bm25").run_config
    found = retriever_from_config(config)  # no ocr_words: a run made before they were kept
    assert isinstance(found, Unavailable)
    assert "pip install 'mmbright[ocr]'" in found.reason and "not installed'" not in found.reason


def test_an_image_whose_words_are_not_recorded_names_the_extra(no_ocr_engine, tmp_path: Path):
    outputs = read_outputs(SHIPPED / "run_it2t_ocr-bm25")
    words = outputs.ocr_words
    assert words is not None
    partial = type(words)(words.engine, words.image_policy, {}, words.queries)
    retriever = retriever_from_config(outputs.run_config, ocr_words=partial)
    source = open_source("demo")
    data = source.task(2, "gis")
    query = next(q for q in data.queries if q.images)
    found = explain(retriever, data, source, query.query_id, [data.corpus[0].doc_id])  # type: ignore[arg-type]
    reason = found[data.corpus[0].doc_id]
    assert isinstance(reason, Unavailable) and "pip install 'mmbright[ocr]'" in reason.reason


def test_the_ocr_words_slice_counts_the_recorded_words(no_ocr_engine, tmp_path: Path):
    source = open_source("demo")
    outputs = read_outputs(SHIPPED / "run_it2t_ocr-bm25")
    domains = source.domains()
    cache = tmp_path / "empty-cache"
    words = outputs.ocr_words
    recorded = query_image_features(TaskView(source, 2), domains, ocr_cache=cache, ocr_words=words)
    alone = query_image_features(TaskView(source, 2), domains, ocr_cache=cache)
    assert alone["ocr_words"].isna().all()  # nothing cached, and OCR is never run here
    assert words is not None
    for row in recorded.itertuples(index=False):
        read = words.images_read(row.domain, row.query_id)
        expected = len(read[0].text.split()) if read else math.nan
        assert row.ocr_words == expected or (math.isnan(row.ocr_words) and math.isnan(expected))
    assert recorded["ocr_words"].gt(0).sum() >= 10


def test_recorded_words_read_back_as_written(tmp_path: Path):
    reads = {"q0": [ImageRead("d/a.png", "a" * 64, "one\ntwo")], "q1": []}
    path = tmp_path / OCR_FILE
    path.write_text(ocr_words_json(ENGINE, "first", reads), encoding="utf-8")
    words = read_ocr_words(path, "d")
    assert dict(words.engine) == ENGINE and words.image_policy == "first"
    assert words.images_read("d", "q0") == reads["q0"]
    assert words.images_read("d", "q1") == [] and words.images_read("d", "q2") is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: "{not json", "invalid JSON"),
        (lambda d: {**d, "format": "other/2"}, r"\$\[\"format\"\]"),
        (lambda d: {**d, "engine": {"engine": "x"}}, r"wrong keys at \$\[\"engine\"\]"),
        (lambda d: {**d, "texts": {"abc": "x"}}, r"\$\[\"texts\"\]\[\"abc\"\]"),
        (
            lambda d: {**d, "queries": {"q0": [{"path": "d/a.png", "sha256": "b" * 64}]}},
            r"\$\[\"queries\"\]\[\"q0\"\]\[\"0\"\]",
        ),
        (lambda d: {**d, "queries": {"q0": "d/a.png"}}, "an array of images read"),
    ],
)
def test_a_damaged_record_is_a_clear_error(tmp_path: Path, change, message: str):
    good = json.loads(
        ocr_words_json(ENGINE, "first", {"q0": [ImageRead("d/a.png", "a" * 64, "x")]})
    )
    damaged = change(good)
    run = tmp_path / "run_it2t_ocr-bm25"
    shutil.copytree(SHIPPED / "run_it2t_ocr-bm25", run)
    text = damaged if isinstance(damaged, str) else json.dumps(damaged)
    (run / "gis" / OCR_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        read_outputs(run)
    assert str(run / "gis" / OCR_FILE) in str(err.value)


def test_domains_read_with_other_engines_are_refused(tmp_path: Path):
    run = tmp_path / "run_it2t_ocr-bm25"
    shutil.copytree(SHIPPED / "run_it2t_ocr-bm25", run)
    path = run / "gis" / OCR_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "engine": {**ENGINE, "version": "9"}}), encoding="utf-8")
    with pytest.raises(InputError, match="different OCR settings"):
        read_outputs(run)

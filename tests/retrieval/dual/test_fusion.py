"""The named fusion rules: each against its formula, on vectors and through whole runs.

The formulas are those of the official retrievers (``src/retrievers/task2_multimodal.py``):
``raw-mean`` L2norm((t + i) / 2) with a white image for a query without one, ``zero-image``
the same with a zero image vector, ``normalised-mean`` L2norm((t/|t| + i/|i|) / 2), ``joint``
the model's own joint vector. Scores are 100 x the cosine.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import toy_embedders
from PIL import Image
from toy_embedders import ToyEmbedder, ToyJoint, image_vector, text_vector

from mmbright_core.analysis.attribution import (
    FusionAttribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.cli import main
from mmbright_core.data.images import decode_image, query_images
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval.dual.encoder import DualEncoderRetriever
from mmbright_core.retrieval.dual.fusion import FUSIONS, get_fusion

RNG = np.random.default_rng(7)
LINEAR = ("raw-mean", "zero-image", "normalised-mean")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_each_linear_rule_is_its_formula_and_splits_exactly() -> None:
    text = RNG.normal(size=(3, 8)).astype(np.float32)
    image = 20 * RNG.normal(size=(3, 8)).astype(np.float32)  # norms differ a lot
    formulas = {
        "raw-mean": lambda t, i: _unit((t + i) / 2),
        "zero-image": lambda t, i: _unit((t + i) / 2),
        "normalised-mean": lambda t, i: _unit((_unit(t) + _unit(i)) / 2),
    }
    for name, formula in formulas.items():
        rule = get_fusion(name)
        fused = rule.fuse(text, image)
        for row in range(3):
            expected = formula(text[row].astype(np.float64), image[row].astype(np.float64))
            assert np.allclose(fused[row], expected, atol=1e-6)
            a, b = rule.weights(text[row], image[row])
            assert np.allclose(a * text[row] + b * image[row], expected, atol=1e-6)
            # No image part: the text alone, normalised, and nothing from the image.
            zero = np.zeros(8, dtype=np.float32)
            assert np.allclose(rule.fuse(text[row], zero), _unit(text[row]), atol=1e-6)
            assert rule.weights(text[row], zero)[1] == 0
    assert not np.allclose(
        get_fusion("raw-mean").fuse(text, image), get_fusion("normalised-mean").fuse(text, image)
    )


def test_joint_and_text_have_no_split_and_unknown_names_are_refused() -> None:
    for name in ("joint", "text"):
        assert not FUSIONS[name].linear
        with pytest.raises(ValueError, match="no text/image split"):
            FUSIONS[name].weights(np.ones(2), np.ones(2))
    with pytest.raises(UnknownNameError, match="fusion"):
        get_fusion("raw_mean")
    with pytest.raises(UnknownNameError, match="fusion"):
        DualEncoderRetriever(ToyEmbedder("average"))
    with pytest.raises(InputError, match="no encode_joint"):
        DualEncoderRetriever(ToyEmbedder("joint"))


@pytest.fixture(scope="module")
def source(fixture_dir: Path):
    return open_source(str(fixture_dir))


def _query_vector(rule: str, query, source) -> np.ndarray:
    found = query_images(source, query, "first").images
    text = text_vector(query.text, "query").astype(np.float64)
    if rule == "joint":
        return _unit(
            ToyJoint().encode_joint([query.text], [found[0] if found else None], "query")[0]
        )
    if not found:
        if rule != "raw-mean":
            return _unit(text)
        found = [Image.new("RGB", (224, 224), "white")]
    image = image_vector(found[0]).astype(np.float64)
    if rule == "normalised-mean":
        return _unit((_unit(text) + _unit(image)) / 2)
    return _unit((text + image) / 2)


def _pair_vector(rule: str, doc, source, domain: str) -> np.ndarray:
    text = text_vector(doc.text, "document").astype(np.float64)
    image = None
    if doc.image is not None:
        image = decode_image(source.document_image_bytes(domain, doc.image.path), doc.image.path)
    if rule == "joint":
        return _unit(ToyJoint().encode_joint([doc.text], [image], "document")[0])
    if image is None:
        if rule != "raw-mean":
            return _unit(text)
        image = Image.new("RGB", (224, 224), "white")
    vector = image_vector(image).astype(np.float64)
    if rule == "normalised-mean":
        return _unit((_unit(text) + _unit(vector)) / 2)
    return _unit((text + vector) / 2)


@pytest.mark.parametrize("rule", [*LINEAR, "joint"])
@pytest.mark.parametrize("task", [2, 4])
def test_runs_score_the_rule_computed_directly(tmp_path: Path, source, rule: str, task: int):
    embedder = ToyJoint() if rule == "joint" else ToyEmbedder(rule)
    retriever = DualEncoderRetriever(embedder, cache_dir=str(tmp_path))
    data = source.task(task, "academia")
    run = retriever.retrieve(data, source, 1000)
    assert retriever.settings()["fusion"] == rule
    for query in data.queries:
        q = _query_vector(rule, query, source)
        excluded = data.excluded.get(query.query_id, frozenset())
        for doc in data.corpus:
            if doc.doc_id in excluded:
                assert doc.doc_id not in run[query.query_id]
                continue
            if task == 2:
                unit = _unit(text_vector(doc.text, "document").astype(np.float64))
            else:
                unit = _pair_vector(rule, doc, source, "academia")
            expected = 100 * float(q @ unit)
            assert run[query.query_id][doc.doc_id] == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("rule", [*LINEAR, "joint"])
def test_attribution_splits_linear_rules_and_says_so_otherwise(tmp_path: Path, source, rule):
    embedder = ToyJoint() if rule == "joint" else ToyEmbedder(rule)
    retriever = DualEncoderRetriever(embedder, cache_dir=str(tmp_path))
    data = source.task(2, "academia")
    run = retriever.retrieve(data, source, 1000)
    for query in data.queries:
        explained = explain(retriever, data, source, query.query_id, list(run[query.query_id]))
        for doc_id, score in run[query.query_id].items():
            found = explained[doc_id]
            if rule == "joint":
                assert isinstance(found, Unavailable)
                assert "no text/image split" in found.reason
                continue
            assert isinstance(found, FusionAttribution)
            assert found.text_part + found.image_part == pytest.approx(score, abs=1e-3)


@pytest.fixture
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield


def test_a_plugin_embedder_is_explained_after_a_rebuild_from_its_config(
    fixture_dir: Path, tmp_path: Path, plugin_path: None
) -> None:
    assert toy_embedders.make("normalised-mean").fusion == "normalised-mean"
    out, cache = tmp_path / "out", str(tmp_path / "cache")
    args = ["run", "--source", str(fixture_dir), "--task", "2", "--out", str(out)]
    spec = ["--retriever", "toy_embedders:make", "--option", "fusion=normalised-mean"]
    assert main([*args, *spec, "--image-policy", "all", "--cache-dir", cache]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    stored = json.loads((folder / "config.json").read_text())
    config = stored["config"]
    assert config["retriever"] == "toy_embedders:make" and config["image_policy"] == "all"
    assert config["options"]["plugin_options"] == {
        "fusion": "normalised-mean",
        "image_policy": "all",
    }
    refused = retriever_from_config(stored, cache_dir=cache)  # not without the user's yes
    assert isinstance(refused, Unavailable) and "'toy_embedders'" in refused.reason
    rebuilt = retriever_from_config(stored, cache_dir=cache, import_modules=["toy_embedders:make"])
    assert not isinstance(rebuilt, Unavailable), rebuilt
    source = open_source(str(fixture_dir))
    data = source.task(2, "academia")
    run = read_outputs(folder).runs["academia"]
    query_id, docs = next(iter(run.items()))
    explained = explain(rebuilt, data, source, query_id, list(docs))
    for doc_id, score in docs.items():
        found = explained[doc_id]
        assert isinstance(found, FusionAttribution) and found.policy == "all"
        assert found.text_part + found.image_part == pytest.approx(score, rel=1e-5, abs=1e-4)

"""open_clip wiring on a tiny random-weight model: shapes, fusion, determinism; never quality."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmbright_core.data.images import decode_image
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.clip import white_image
from mmbright_core.retrieval.index import l2_normalise
from mmbright_core.types import ImageRef, Query

pytestmark = pytest.mark.slow  # imports torch and open_clip (several seconds)
open_clip = pytest.importorskip("open_clip")
torch = pytest.importorskip("torch")

TINY = "mmbright-test-tiny"
TINY_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="module", autouse=True)
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("clip-config") / f"{TINY}.json"
    path.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(path)
    return TINY


@pytest.fixture(scope="module")
def source(fixture_dir: Path):
    return open_source(str(fixture_dir))


def _clip(tmp_path: Path, **options):
    return get_retriever("clip", model=TINY, pretrained="none", cache_dir=str(tmp_path), **options)


def _image(source, domain: str, path: str):
    return decode_image(source.query_image_bytes(domain, path), path)


def test_embeddings_have_the_model_dim_and_unit_length(tmp_path: Path):
    clip = _clip(tmp_path)
    texts = clip.encode_texts(["a cat", "a dog", "a cat"])
    images = clip.encode_images([white_image], ["white"])
    assert texts.shape == (3, 32) and images.shape == (1, 32)
    assert np.allclose(np.linalg.norm(texts, axis=1), 1, atol=2e-3)
    assert np.array_equal(texts[0], texts[2])


def test_fused_query_is_normalised_mean_of_text_and_image(tmp_path: Path, source):
    clip = _clip(tmp_path, image_policy="first")
    query = next(q for q in source.task(2, "biology").queries if q.query_id == "b1")
    (fused,) = clip.encode_queries((query,), source)
    text = clip.encode_texts([query.text])[0]
    image = clip.encode_images([lambda: _image(source, "biology", query.images[0].path)], ["b1"])[0]
    assert np.allclose(fused, l2_normalise((text + l2_normalise(image)) / 2), atol=1e-6)


def test_policy_all_averages_the_image_embeddings(tmp_path: Path, source):
    clip = _clip(tmp_path, image_policy="all")
    query = next(q for q in source.task(2, "academia").queries if q.query_id == "a1")
    paths = [ref.path for ref in query.images]
    images = clip.encode_images([lambda p=p: _image(source, "academia", p) for p in paths], paths)
    text = clip.encode_texts([query.text])[0]
    expected = l2_normalise((text + l2_normalise(images.mean(axis=0))) / 2)
    assert np.allclose(clip.encode_queries((query,), source)[0], expected, atol=1e-6)


def test_query_without_decodable_image_gets_white_or_text_only(tmp_path: Path, source):
    svg = "academia/academia_0badf00d_0000/image_1.svg"  # an SVG payload: never decodable
    query = Query("q", "academia", "When is a thesis approved?", (ImageRef(svg),))
    white = _clip(tmp_path, no_image="white")
    text = white.encode_texts([query.text])[0]
    blank = white.encode_images([white_image], ["white"])[0]
    fused = white.encode_queries((query,), source)[0]
    assert np.allclose(fused, l2_normalise((text + l2_normalise(blank)) / 2), atol=1e-6)
    text_only = _clip(tmp_path, no_image="text")
    assert np.allclose(text_only.encode_queries((query,), source)[0], text)
    assert text_only.settings()["no_image"] == "text"


def test_random_weights_are_deterministic_per_seed(tmp_path: Path, source):
    data = source.task(2, "academia")
    first = _clip(tmp_path / "a").retrieve(data, source, 5)
    again = _clip(tmp_path / "b").retrieve(data, source, 5)
    other = _clip(tmp_path / "c", seed=1).retrieve(data, source, 5)
    assert first == again
    assert first != other


def test_task3_ranks_corpus_images_by_cosine_times_100(tmp_path: Path, source):
    clip = _clip(tmp_path)
    data = source.task(3, "academia")
    run = clip.retrieve(data, source, 3)
    assert all(len(docs) == 3 for docs in run.values())
    query = data.queries[0]
    doc_id = next(iter(run[query.query_id]))
    image = clip.encode_images(
        [lambda: decode_image(source.document_image_bytes("academia", doc_id), doc_id)], [doc_id]
    )[0]
    fused = clip.encode_queries((query,), source)[0]
    cosine = float(l2_normalise(fused) @ l2_normalise(image))
    assert run[query.query_id][doc_id] == pytest.approx(100 * cosine, abs=1e-3)


def test_task4_pairs_fuse_passage_and_image_and_respect_exclusions(tmp_path: Path, source):
    clip = _clip(tmp_path)
    data = source.task(4, "academia")
    run = clip.retrieve(data, source, 1000)
    for query_id, excluded in data.excluded.items():
        assert not excluded & set(run[query_id])
        assert len(run[query_id]) == len(data.corpus) - len(excluded)
    pair = next(d for d in data.corpus if d.doc_id.endswith("__NO_IMAGE__"))
    text = clip.encode_texts([pair.text])[0]
    blank = clip.encode_images([white_image], ["white"])[0]
    query = data.queries[0]
    fused = clip.encode_queries((query,), source)[0]
    expected = 100 * float(l2_normalise(fused) @ l2_normalise((text + blank) / 2))
    assert run[query.query_id][pair.doc_id] == pytest.approx(expected, abs=1e-3)


def test_task1_uses_query_text_only(tmp_path: Path, source):
    clip = _clip(tmp_path)
    data = source.task(1, "academia")
    run = clip.retrieve(data, None, 2)
    query = data.queries[0]
    doc_id, score = next(iter(run[query.query_id].items()))
    text = clip.encode_texts([query.text, next(d.text for d in data.corpus if d.doc_id == doc_id)])
    assert score == pytest.approx(100 * float(text[0] @ text[1]), abs=1e-2)


def test_local_checkpoint_file_is_hashed_and_loaded(tmp_path: Path):
    random_weights = _clip(tmp_path / "r")
    model = random_weights._load()[0]
    checkpoint = tmp_path / "tiny.pt"
    torch.save(model.state_dict(), checkpoint)
    local = get_retriever("clip", model=TINY, pretrained=str(checkpoint), cache_dir=str(tmp_path))
    assert len(local.settings()["checkpoint_sha256"]) == 64
    assert local.label() == f"{TINY}-tiny"
    assert np.allclose(local.encode_texts(["x"]), random_weights.encode_texts(["x"]))


def test_bad_names_and_combinations(tmp_path: Path, source):
    with pytest.raises(UnknownNameError, match="open_clip model"):
        get_retriever("clip", model="ViT-B-3", pretrained="none").settings()
    with pytest.raises(InputError, match="carries its own weights"):
        get_retriever("clip", model="local-dir:/nowhere", pretrained="openai")
    with pytest.raises(UnknownNameError, match="image policy"):
        get_retriever("clip", image_policy="middle")
    with pytest.raises(InputError, match="needs image bytes"):
        _clip(tmp_path).retrieve(source.task(2, "academia"), None, 5)

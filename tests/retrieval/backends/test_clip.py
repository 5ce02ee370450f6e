"""open_clip wiring on a tiny random-weight model: shapes, fusion, determinism; never quality.

The fusion is checked against the official formula computed here directly with open_clip
(``src/retrievers/task2_multimodal.py`` ``retrieval_clip``, ``task3_image.py``
``retrieval_clip_it2i``, ``task4_pair.py`` ``retrieval_clip_it2it``): raw features summed,
halved, then L2-normalised; scores 100 x dot product.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tiny_clip import TINY_CLIP as TINY
from tiny_clip import TINY_CLIP_CONFIG as TINY_CONFIG

from mmbright_core.cli import main
from mmbright_core.data.images import decode_image
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.backends.clip import FUSION, ClipRetriever, white_image
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.retrieval.cache.store import path_sha256
from mmbright_core.retrieval.search.index import l2_normalise
from mmbright_core.types import ImageRef, Query

pytestmark = pytest.mark.slow  # imports torch and open_clip (several seconds)
open_clip = pytest.importorskip("open_clip")
torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")
save_file = pytest.importorskip("safetensors.torch").save_file


@pytest.fixture(scope="module", autouse=True)
def tiny_model(tiny_clip: str) -> str:
    return tiny_clip


@pytest.fixture(scope="module")
def source(fixture_dir: Path):
    return open_source(str(fixture_dir))


def _clip(tmp_path: Path, **options):
    return get_retriever("clip", model=TINY, pretrained="none", cache_dir=str(tmp_path), **options)


def _image(source, domain: str, path: str):
    return decode_image(source.query_image_bytes(domain, path), path)


def test_cached_embeddings_are_the_raw_open_clip_features(tmp_path: Path):
    clip = _clip(tmp_path)
    texts = clip.encode_texts(["a cat", "a dog", "a cat"])
    images = clip.encode_images([white_image], ["white"])
    assert texts.shape == (3, 32) and images.shape == (1, 32)
    assert np.array_equal(texts[0], texts[2])
    model, preprocess, tokenizer = clip._load()
    with torch.no_grad():
        raw_text = model.encode_text(tokenizer(["a cat", "a dog"])).numpy()
        raw_image = model.encode_image(preprocess(white_image())[None]).numpy()
    # Not normalised: the fusion weighs each tower by its own norm.
    assert np.allclose(texts[:2], raw_text, atol=1e-6)
    assert np.allclose(images, raw_image, atol=1e-6)


def test_fused_query_is_normalised_mean_of_raw_text_and_image(tmp_path: Path, source):
    clip = _clip(tmp_path)  # the default policy: the first image that decodes
    query = next(q for q in source.task(2, "biology").queries if q.query_id == "b1")
    (fused,) = clip.encode_queries((query,), source)
    text = clip.encode_texts([query.text])[0]
    image = clip.encode_images([lambda: _image(source, "biology", query.images[0].path)], ["b1"])[0]
    assert np.allclose(fused, l2_normalise((text + image) / 2), atol=1e-6)


def test_policy_all_averages_the_raw_image_embeddings(tmp_path: Path, source):
    clip = _clip(tmp_path, image_policy="all")
    query = next(q for q in source.task(2, "academia").queries if q.query_id == "a1")
    paths = [ref.path for ref in query.images]
    images = clip.encode_images([lambda p=p: _image(source, "academia", p) for p in paths], paths)
    text = clip.encode_texts([query.text])[0]
    expected = l2_normalise((text + images.mean(axis=0)) / 2)
    assert np.allclose(clip.encode_queries((query,), source)[0], expected, atol=1e-6)


def test_query_without_decodable_image_gets_white_or_text_only(tmp_path: Path, source):
    svg = "academia/academia_0badf00d_0000/image_1.svg"  # an SVG payload: never decodable
    query = Query("q", "academia", "When is a thesis approved?", (ImageRef(svg),))
    white = _clip(tmp_path, no_image="white")
    text = white.encode_texts([query.text])[0]
    blank = white.encode_images([white_image], ["white"])[0]
    fused = white.encode_queries((query,), source)[0]
    assert np.allclose(fused, l2_normalise((text + blank) / 2), atol=1e-6)
    assert white_image().mode == "RGB" and white_image().size == (224, 224)
    text_only = _clip(tmp_path, no_image="text")
    assert np.allclose(text_only.encode_queries((query,), source)[0], l2_normalise(text))
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
    text = l2_normalise(text)
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


# --- the official fusion, computed directly with open_clip ------------------------------------

IMAGE_GAIN = 20.0  # the image tower's projection is scaled up: its norms dwarf the text's


@pytest.fixture(scope="module")
def lopsided_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random weights whose image features are ~20x longer than the text features."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = open_clip.create_model(TINY, pretrained=None)
    with torch.no_grad():
        model.visual.proj.mul_(IMAGE_GAIN)
    path = tmp_path_factory.mktemp("lopsided") / "lopsided.pt"
    torch.save(model.state_dict(), path)
    return path


class OfficialClip:
    """The official CLIP formula, straight from open_clip: no code of the retriever."""

    def __init__(self, checkpoint: Path) -> None:
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(
            TINY, pretrained=str(checkpoint)
        )
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(TINY)

    def text(self, text: str) -> torch.Tensor:
        with torch.no_grad():  # the tokenizer truncates to 77 tokens, end-of-text kept
            return self.model.encode_text(self.tokenizer([text]))[0]

    def image(self, image: Image.Image) -> torch.Tensor:
        with torch.no_grad():
            return self.model.encode_image(self.preprocess(image)[None])[0]


def _pil(data: bytes | None) -> Image.Image | None:
    # The official loader: Image.open(...).convert("RGB"); what raises is dropped.
    try:
        return Image.open(io.BytesIO(data or b"")).convert("RGB")
    except (OSError, SyntaxError, ValueError):
        return None


def _white() -> Image.Image:
    return Image.new("RGB", (224, 224), color="white")


def _official_query(official: OfficialClip, source, query, each_side_first: bool):
    decoded = [_pil(source.query_image_bytes(query.domain, ref.path)) for ref in query.images]
    first = next((im for im in decoded if im is not None), None)  # images[0] after the drops
    text, image = official.text(query.text), official.image(first or _white())
    return _fuse(text, image, each_side_first), text.norm(), image.norm()


def _fuse(text: torch.Tensor, image: torch.Tensor, each_side_first: bool) -> torch.Tensor:
    if each_side_first:  # the variant the official code does NOT use
        text, image = F.normalize(text, dim=0), F.normalize(image, dim=0)
    return F.normalize((text + image) / 2, dim=0)


def _official_unit(official: OfficialClip, source, data, doc, each_side_first: bool):
    if data.task == 2:
        return F.normalize(official.text(doc.text), dim=0)
    if data.task == 3:
        path = doc.doc_id if doc.image is None else doc.image.path
        return F.normalize(
            official.image(_pil(source.document_image_bytes(data.domain, path))), dim=0
        )
    image = (
        _white()
        if doc.image is None
        else _pil(source.document_image_bytes(data.domain, doc.image.path))
    )
    return _fuse(official.text(doc.text), official.image(image), each_side_first)


@pytest.mark.parametrize("task", [2, 3, 4])
def test_scores_are_the_official_fusion_of_raw_features(
    tmp_path: Path, source, lopsided_checkpoint: Path, task: int
):
    official = OfficialClip(lopsided_checkpoint)
    clip = get_retriever(
        "clip", model=TINY, pretrained=str(lopsided_checkpoint), cache_dir=str(tmp_path)
    )
    data = source.task(task, "academia")
    run = clip.retrieve(data, source, 1000)
    compared = differing = 0
    for query in data.queries:
        fused, text_norm, image_norm = _official_query(official, source, query, False)
        assert image_norm > 5 * text_norm  # the towers' norms differ by a large factor
        variant = _official_query(official, source, query, True)[0]
        excluded = data.excluded.get(query.query_id, frozenset())
        assert len(run[query.query_id]) == sum(d.doc_id not in excluded for d in data.corpus)
        for doc in data.corpus:
            if doc.doc_id in excluded:
                continue
            unit = _official_unit(official, source, data, doc, False)
            expected = 100 * float(fused @ unit)
            assert run[query.query_id][doc.doc_id] == pytest.approx(expected, rel=1e-5, abs=1e-4)
            other = 100 * float(variant @ _official_unit(official, source, data, doc, True))
            differing += abs(other - expected) > 0.5
            compared += 1
    assert compared and differing == compared  # normalising each side first is another model


def test_settings_record_fusion_policy_and_cache_dtype(tmp_path: Path):
    settings = _clip(tmp_path).settings()
    assert settings["fusion"] == FUSION == "mean-raw-then-l2"
    assert settings["image_policy"] == "first" and settings["cache_dtype"] == "float32"
    config = RunConfig.build(_clip(tmp_path), task=2, protocol="paper", source="s", k=10)
    assert config.fusion == "mean-raw-then-l2" and config.image_policy == "first"
    assert dict(config.options)["cache_dtype"] == "float32"
    half = _clip(tmp_path, cache_dtype="float16", image_policy="concat")
    assert half.settings()["cache_dtype"] == "float16"
    assert half.settings()["image_policy"] == "concat"
    with pytest.raises(UnknownNameError, match="cache dtype"):
        _clip(tmp_path, cache_dtype="int8")


def test_a_float16_cache_is_encoded_again_for_a_float32_run(
    tmp_path: Path, source, monkeypatch: pytest.MonkeyPatch
):
    data = source.task(2, "academia")
    half = _clip(tmp_path / "shared", cache_dtype="float16").retrieve(data, source, 1000)
    calls: list[int] = []
    real = ClipRetriever.embed_texts

    def counting(self, texts):
        calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(ClipRetriever, "embed_texts", counting)
    full = _clip(tmp_path / "shared").retrieve(data, source, 1000)
    texts = {*(q.text for q in data.queries), *(d.text for d in data.corpus)}
    assert sum(calls) == len(texts)  # every distinct text again: nothing taken from float16
    fresh = _clip(tmp_path / "fresh").retrieve(data, source, 1000)
    assert full == fresh  # float32-exact: the same scores as a run without any cache
    assert half != full  # float16 rounding does change the scores


# --- local-dir: models --------------------------------------------------------------------------


def _local_dir(folder: Path, checkpoint: Path) -> Path:
    # open_clip's local-dir: layout (factory.create_model): open_clip_config.json holding
    # model_cfg, beside a weights file it finds by name (open_clip_model.safetensors first).
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CONFIG}))
    state = torch.load(checkpoint, weights_only=True)
    save_file({k: v.contiguous() for k, v in state.items()}, folder / "open_clip_model.safetensors")
    return folder


def test_cli_runs_a_local_dir_model_without_pretrained(
    fixture_dir: Path, tmp_path: Path, lopsided_checkpoint: Path, source
):
    folder = _local_dir(tmp_path / "tiny-local", lopsided_checkpoint)
    args = ["run", "--source", str(fixture_dir), "--task", "2", "--retriever", "clip"]
    out, cache = tmp_path / "out", str(tmp_path / "cache")
    assert (
        main([*args, "--model", f"local-dir:{folder}", "--cache-dir", cache, "--out", str(out)])
        == 0
    )
    (subdir,) = out.iterdir()
    stored = json.loads((subdir / "config.json").read_text())["config"]
    assert stored["model"] == f"local-dir:{folder}" and stored["revision"] is None
    assert stored["checkpoint_sha256"] == path_sha256(folder)
    assert stored["image_policy"] == "first" and stored["fusion"] == "mean-raw-then-l2"
    # The folder's own weights were loaded: the same scores as the checkpoint file gives.
    same = get_retriever("clip", model=TINY, pretrained=str(lopsided_checkpoint), cache_dir=cache)
    expected = same.retrieve(source.task(2, "academia"), source, 1000)
    got = read_outputs(subdir).runs["academia"]
    assert got.keys() == expected.keys()
    for query_id, docs in expected.items():
        assert got[query_id] == pytest.approx(docs, rel=1e-5, abs=1e-4)


def test_a_local_dir_folder_without_weights_is_refused(tmp_path: Path):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CONFIG}))
    clip = get_retriever("clip", model=f"local-dir:{folder}", cache_dir=str(tmp_path))
    assert clip.pretrained is None  # the default leaves the weights to the folder
    with pytest.raises(InputError, match="not an open_clip local-dir"):
        clip.encode_texts(["x"])

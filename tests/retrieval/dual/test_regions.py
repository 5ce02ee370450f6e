"""Occlusion over a grid: each cell's value is the score (or margin) lost when it is filled.

The tiny random open_clip and HF CLIP models are held to a recomputation written out here:
masks made with Pillow, each encoded alone, fused and scored by the formula of
docs/protocol.md (Fusion rules). A plugin whose image vector sees only the top-left quarter
must get every non-zero cell over that quarter, on the demo's queries.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from corner_embedder import quarter
from PIL import Image, ImageFilter, ImageStat
from toy_embedders import ToyEmbedder, ToyJoint

from mmbright_core.analysis.attribution import explain, retriever_from_config
from mmbright_core.data.images import query_images
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.dual.encoder import DualEncoderRetriever
from mmbright_core.retrieval.dual.regions import FOLDER, explain_regions
from mmbright_core.retrieval.explanation import RegionAttribution, Unavailable, cell_boxes
from mmbright_core.types import ImageRef

CORNER = "corner_embedder:make"


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def _masks(picture: Image.Image, grid: int, fill: str) -> list[Image.Image]:
    """The filled copies, made here with Pillow alone (row by row)."""
    out = []
    if fill == "blur":
        radius = max(picture.size) / grid / 2
        blurred = picture.filter(ImageFilter.GaussianBlur(radius))
    colour = tuple(round(v) for v in ImageStat.Stat(picture).mean)
    for row in range(grid):
        for col in range(grid):
            box = (
                picture.width * col // grid,
                picture.height * row // grid,
                picture.width * (col + 1) // grid,
                picture.height * (row + 1) // grid,
            )
            copy = picture.copy()
            if fill == "blur":
                copy.paste(blurred.crop(box), box)
            else:
                copy.paste(colour if fill == "mean" else (128, 128, 128), box)
            out.append(copy)
    return out


def _recomputed(retriever, query, picture, docs, grid: int, fill: str) -> np.ndarray:
    """Each mask's loss of score (or of margin over the second doc), by the raw-mean formula."""
    text = retriever.embed_texts([query.text], "query")[0]
    items = _unit(retriever.embed_texts([d.text for d in docs], "document"))

    def target(image_vector: np.ndarray) -> float:
        fused = _unit(text.astype(np.float64) + image_vector)  # L2norm((t + i) / 2)
        scores = 100 * items @ fused
        return float(scores[0] - scores[1]) if len(docs) > 1 else float(scores[0])

    whole = target(retriever.embed_images([picture], "query")[0])
    masked = [target(retriever.embed_images([m], "query")[0]) for m in _masks(picture, grid, fill)]
    return whole - np.array(masked).reshape(grid, grid)


def _query_with_image(source, data):
    return next(q for q in data.queries if query_images(source, q, "first").images)


# --- tiny random models against a direct recomputation ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("grid", "fill"), [(7, "mean"), (3, "grey"), (4, "blur")])
def test_open_clip_grid_is_the_masked_images_scores(
    tiny_clip: str, tmp_path: Path, grid: int, fill: str
) -> None:
    source = open_source("demo")  # drawn images (the fixture's are one colour each)
    data = source.task(2, "biology")
    clip = get_retriever("clip", model=tiny_clip, pretrained="none", cache_dir=str(tmp_path))
    query = _query_with_image(source, data)
    ranked = list(clip.retrieve(data, source, 10)[query.query_id].items())
    (top, top_score), (other, other_score) = ranked[0], ranked[-1]
    found = explain_regions(
        clip, data, source, query.query_id, top, versus=other, grid=grid, fill=fill,
        cache_dir=tmp_path,
    )  # fmt: skip
    assert isinstance(found, RegionAttribution), found
    assert (found.score, found.versus_score) == pytest.approx((top_score, other_score), abs=1e-3)
    assert found.target == pytest.approx(top_score - other_score, abs=1e-3)
    (image,) = found.images
    picture = query_images(source, query, "first").images[0]
    assert (image.width, image.height, image.grid) == (*picture.size, grid)
    docs = [d for d in data.corpus if d.doc_id in (top, other)]
    docs.sort(key=lambda d: d.doc_id != top)
    expected = _recomputed(clip, query, picture, docs, grid, fill)
    assert np.array(image.values) == pytest.approx(expected, abs=2e-3)
    assert np.abs(expected).max() > 1e-3  # the random model does see the image
    assert (found.grid, found.fill, found.passes) == (grid, fill, grid * grid + 1)
    assert found.retriever == "clip" and found.model == clip.label()


@pytest.mark.slow
def test_hf_clip_grid_is_the_masked_images_scores(tiny_hf: dict[str, Path], tmp_path: Path):
    source = open_source("demo")
    data = source.task(2, "biology")
    hf = get_retriever(
        "hf", model=str(tiny_hf["clip"]), max_length=64, device="cpu", cache_dir=str(tmp_path)
    )
    query = _query_with_image(source, data)
    ranked = list(hf.retrieve(data, source, 5)[query.query_id])
    found = explain_regions(hf, data, source, query.query_id, ranked[0], grid=5, cache_dir=tmp_path)
    assert isinstance(found, RegionAttribution), found
    picture = query_images(source, query, "first").images[0]
    docs = [d for d in data.corpus if d.doc_id == ranked[0]]
    expected = _recomputed(hf, query, picture, docs, 5, "mean")
    assert np.array(found.images[0].values) == pytest.approx(expected, abs=2e-3)
    assert found.versus is None and found.target == found.score


@pytest.mark.slow
def test_a_task3_items_own_image_is_occluded_on_the_document_side(
    tiny_clip: str, tmp_path: Path
) -> None:
    source = open_source("demo")
    data = source.task(3, "biology")
    clip = get_retriever("clip", model=tiny_clip, pretrained="none", cache_dir=str(tmp_path))
    query = _query_with_image(source, data)
    ranked = clip.retrieve(data, source, 3)[query.query_id]
    top = next(iter(ranked))
    found = explain_regions(
        clip, data, source, query.query_id, top, side="document", grid=3, cache_dir=tmp_path
    )
    assert isinstance(found, RegionAttribution), found
    assert found.score == pytest.approx(ranked[top], abs=1e-3)
    doc = next(d for d in data.corpus if d.doc_id == top)
    assert doc.image is not None and found.images[0].image == doc.image.path
    picture = found.images[0].picture
    assert picture is not None
    fused = _unit(
        clip.embed_texts([query.text], "query")[0].astype(np.float64)
        + clip.embed_images(query_images(source, query, "first").images, "query")[0]
    )
    whole = 100 * _unit(clip.embed_images([picture])[0]) @ fused
    masks = [100 * _unit(clip.embed_images([m])[0]) @ fused for m in _masks(picture, 3, "mean")]
    expected = whole - np.array(masks).reshape(3, 3)
    assert np.array(found.images[0].values) == pytest.approx(expected, abs=2e-3)


# --- a model that sees one region only ---------------------------------------------------------


def _touches(box: tuple[int, int, int, int], region: tuple[int, int, int, int]) -> bool:
    return box[0] < region[2] and box[1] < region[3] and box[2] > region[0] and box[3] > region[1]


def test_a_plugin_that_sees_the_top_left_quarter_has_its_cells_there(tmp_path: Path):
    source = open_source("demo")
    data = source.task(2, "biology")
    corner = get_retriever(CORNER, cache_dir=str(tmp_path))
    run = corner.retrieve(data, source, 10)
    checked = 0
    for query in data.queries:
        if not query_images(source, query, "first").images:
            continue
        relevant = next(d for d, grade in data.qrels[query.query_id].items() if grade > 0)
        wrong = next(d for d in run[query.query_id] if d != relevant)
        found = explain_regions(
            corner, data, source, query.query_id, wrong, versus=relevant, cache_dir=tmp_path
        )
        assert isinstance(found, RegionAttribution), found
        image = found.images[0]
        region = quarter(Image.new("RGB", (image.width, image.height)))
        cells = [
            (abs(v), box)
            for values, boxes in zip(image.values, image.boxes(), strict=True)
            for v, box in zip(values, boxes, strict=True)
        ]
        assert max(v for v, _ in cells) > 0
        for value, box in cells:
            if not _touches(box, region):
                assert value == 0, (query.query_id, box)  # outside: nothing changes
        largest = sorted(cells, key=lambda cell: -cell[0])[:3]
        assert all(_touches(box, region) for _, box in largest)
        checked += 1
    assert checked >= 5


# --- the cache, the options, the refusals -------------------------------------------------------


def _corner_case(tmp_path: Path, **options: int) -> tuple:
    """The demo's biology Task 2, the corner plugin, a query with an image, the first passage."""
    source = open_source("demo")
    data = source.task(2, "biology")
    corner = get_retriever(CORNER, cache_dir=str(tmp_path), **options)
    return source, data, corner, _query_with_image(source, data), data.corpus[0].doc_id


def test_a_result_is_read_back_from_the_cache_and_keyed_by_its_options(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source, data, corner, query, doc = _corner_case(tmp_path)
    seen: list[tuple[int, int]] = []
    first = explain_regions(
        corner, data, source, query.query_id, doc, grid=4, cache_dir=tmp_path,
        progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert isinstance(first, RegionAttribution) and not first.cached
    assert seen[0] == (1, 17) and seen[-1] == (17, 17)
    assert len(list((tmp_path / FOLDER).rglob("*.json"))) == 1
    again = explain_regions(corner, data, source, query.query_id, doc, grid=4, cache_dir=tmp_path)
    assert isinstance(again, RegionAttribution) and again.cached
    assert again == first and again.images[0].picture is not None
    grey = explain_regions(
        corner, data, source, query.query_id, doc, grid=4, fill="grey", cache_dir=tmp_path
    )
    assert isinstance(grey, RegionAttribution) and not grey.cached and grey.fill == "grey"
    assert RegionAttribution.from_dict(first.to_dict()) == first
    stored = next(p for p in (tmp_path / FOLDER).rglob("*.json") if json.loads(
        json.loads(p.read_text())["result"])["fill"] == "mean")  # fmt: skip
    record = json.loads(stored.read_text())
    edited = record["result"].replace('"score": ', '"score": 1')  # still valid JSON
    for damage in (json.dumps({**record, "result": edited}), "{not json"):
        stored.write_text(damage, encoding="utf-8")
        with caplog.at_level(logging.WARNING, logger="mmbright"):
            recomputed = explain_regions(
                corner, data, source, query.query_id, doc, grid=4, cache_dir=tmp_path
            )
        assert isinstance(recomputed, RegionAttribution) and not recomputed.cached
        assert recomputed == first and json.loads(stored.read_text())["checksum"]
    # Reported once per entry and process: "deleted, it is computed again".
    assert caplog.text.count(f"damaged cache entry {stored}: its checksum") == 1


def test_explain_with_regions_gives_each_documents_grid(tmp_path: Path):
    source, data, corner, query, doc = _corner_case(tmp_path)
    other = data.corpus[1].doc_id
    found = explain(
        corner, data, source, query.query_id, [doc, other, doc],
        regions=True, versus=data.corpus[2].doc_id, grid=3, fill="grey", cache_dir=tmp_path,
    )  # fmt: skip
    assert list(found) == [doc, other]
    for doc_id, result in found.items():
        direct = explain_regions(
            corner, data, source, query.query_id, doc_id,
            versus=data.corpus[2].doc_id, grid=3, fill="grey", cache_dir=tmp_path / "direct",
        )  # fmt: skip
        assert isinstance(result, RegionAttribution) and result == direct
        assert (result.grid, result.fill, result.versus) == (3, "grey", data.corpus[2].doc_id)
    parts = explain(corner, data, source, query.query_id, [doc])
    assert not isinstance(parts[doc], RegionAttribution | Unavailable)  # the fused parts
    for option in ({"grid": 3}, {"versus": other}, {"side": "document"}, {"cache_dir": tmp_path}):
        with pytest.raises(InputError, match="options of the regions' explanation"):
            explain(corner, data, source, query.query_id, [doc], **option)  # type: ignore[call-overload]


def test_a_progress_callback_that_raises_cancels(tmp_path: Path):
    source, data, corner, query, doc = _corner_case(tmp_path, batch_size=4)

    def cancel(done: int, total: int) -> None:
        if done > 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        explain_regions(
            corner, data, source, query.query_id, doc, cache_dir=tmp_path, progress=cancel,
        )  # fmt: skip
    assert not list((tmp_path / FOLDER).rglob("*.json"))  # nothing half-done is stored


def test_what_has_no_regions_says_why(tmp_path: Path):
    source, data, corner, query, doc = _corner_case(tmp_path)
    bm25 = get_retriever("bm25", cache_dir=str(tmp_path))
    found = explain_regions(bm25, data, source, query.query_id, doc, cache_dir=tmp_path)
    assert isinstance(found, Unavailable) and "does not encode images" in found.reason
    refused = retriever_from_config({"retriever": "nothing", "task": 2, "protocol": "paper",
                                     "source": "demo", "k": 10})  # fmt: skip
    assert explain_regions(refused, data, source, query.query_id, doc) is refused
    assert "needs the retriever" in explain_regions(None, data, source, query.query_id, doc).reason  # type: ignore[union-attr]
    text_only = source.task(1, "biology")
    found = explain_regions(
        corner, text_only, source, text_only.queries[0].query_id, text_only.corpus[0].doc_id
    )
    assert isinstance(found, Unavailable) and "text alone" in found.reason
    passage = explain_regions(corner, data, source, query.query_id, doc, side="document")
    assert isinstance(passage, Unavailable) and "no image of its own" in passage.reason
    absent = explain_regions(corner, data, source, query.query_id, "biology/nowhere.txt")
    assert isinstance(absent, Unavailable) and "not in the corpus" in absent.reason
    blind = dataclasses.replace(query, images=(ImageRef("biology/nowhere.png"),))
    blinded = dataclasses.replace(data, queries=(blind,))
    found = explain_regions(corner, blinded, source, blind.query_id, doc, cache_dir=tmp_path)
    assert isinstance(found, Unavailable) and "none of the 1 image(s)" in found.reason
    imageless = dataclasses.replace(query, images=())
    found = explain_regions(
        corner, dataclasses.replace(data, queries=(imageless,)), source, query.query_id, doc
    )
    assert isinstance(found, Unavailable) and found.reason.endswith(
        "has no image: nothing to occlude"
    )


def test_bad_options_are_refused(tmp_path: Path):
    source, data, corner, query, doc = _corner_case(tmp_path)
    for grid in (0, 33, True, 2.5):
        with pytest.raises(InputError, match="invalid grid size"):
            explain_regions(corner, data, source, query.query_id, doc, grid=grid)  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError):
        explain_regions(corner, data, source, query.query_id, doc, fill="noise")
    with pytest.raises(InputError, match="not in the task's data"):
        explain_regions(corner, data, source, "nope", doc)


class SmallImage:
    """Every query image is a 5x5 PNG; no item has one."""

    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        buffer = io.BytesIO()
        Image.new("RGB", (5, 5), (200, 10, 10)).save(buffer, format="PNG")
        return buffer.getvalue()

    def document_image_bytes(self, domain: str, path: str) -> bytes | None:
        return None


def test_an_image_smaller_than_the_grid_is_refused_in_words(tmp_path: Path):
    data = open_source("demo").task(2, "biology")
    corner = get_retriever(CORNER, cache_dir=str(tmp_path))
    query, doc = data.queries[0].query_id, data.corpus[0].doc_id
    found = explain_regions(corner, data, SmallImage(), query, doc, cache_dir=tmp_path)
    assert isinstance(found, Unavailable)
    assert found.reason.endswith("is 5x5 pixels, smaller than a 7x7 grid: choose a smaller grid")
    fits = explain_regions(corner, data, SmallImage(), query, doc, grid=5, cache_dir=tmp_path)
    assert isinstance(fits, RegionAttribution)


def test_cells_tile_the_image():
    boxes = cell_boxes(10, 7, 3)
    assert boxes[0] == (0, 0, 3, 2) and boxes[-1] == (6, 4, 10, 7)
    assert sum((r - left) * (b - t) for left, t, r, b in boxes) == 70


# --- every fusion and the "all" policy, by the formulas -----------------------------------------


def test_each_image_of_a_query_is_occluded_in_turn_under_the_all_policy(
    fixture_dir: Path, tmp_path: Path
) -> None:
    source = open_source(str(fixture_dir))
    data = source.task(2, "academia")
    toy = ToyEmbedder()
    dual = DualEncoderRetriever(toy, image_policy="all", cache_dir=str(tmp_path))
    query = next(q for q in data.queries if len(query_images(source, q, "all").images) > 1)
    pictures = query_images(source, query, "all").images
    doc = data.corpus[0]
    found = explain_regions(
        dual, data, source, query.query_id, doc.doc_id, grid=2, fill="grey", cache_dir=tmp_path
    )
    assert isinstance(found, RegionAttribution), found
    assert len(found.images) == len(pictures) and found.passes == 5 * len(pictures)
    text = toy.encode_texts([query.text], "query")[0].astype(np.float64)
    item = _unit(toy.encode_texts([doc.text], "document")[0])
    raw = toy.encode_images(pictures, "query").astype(np.float64)

    def score(images: np.ndarray) -> float:
        return float(100 * _unit(text + images.mean(axis=0)) @ item)

    assert found.score == pytest.approx(score(raw), abs=1e-4)
    for index, grid in enumerate(found.images):
        masked = []
        for mask in _masks(pictures[index], 2, "grey"):
            images = raw.copy()
            images[index] = toy.encode_images([mask], "query")[0]
            masked.append(score(images))
        expected = score(raw) - np.array(masked).reshape(2, 2)
        assert np.array(grid.values) == pytest.approx(expected, abs=1e-4)
        assert np.abs(expected).max() > 0  # grey differs from the fixture's colours


@pytest.mark.parametrize("number", [2, 4])
def test_a_joint_model_encodes_each_masked_image_with_the_query_text(tmp_path: Path, number: int):
    source = open_source("demo")
    data = source.task(number, "biology")  # type: ignore[arg-type]
    joint = ToyJoint()
    dual = DualEncoderRetriever(joint, cache_dir=str(tmp_path))
    query = _query_with_image(source, data)
    ranked = dual.retrieve(data, source, 3)[query.query_id]
    top = next(iter(ranked))
    found = explain_regions(dual, data, source, query.query_id, top, grid=3, cache_dir=tmp_path)
    assert isinstance(found, RegionAttribution), found
    assert found.score == pytest.approx(ranked[top], abs=1e-4)
    item = _unit(dual.corpus_vectors(dataclasses.replace(data, corpus=tuple(
        d for d in data.corpus if d.doc_id == top)), source)[0])  # fmt: skip
    picture = query_images(source, query, "first").images[0]

    def score(image: Image.Image) -> float:
        return float(100 * _unit(joint.encode_joint([query.text], [image], "query")[0]) @ item)

    expected = score(picture) - np.array([score(m) for m in _masks(picture, 3, "mean")])
    assert np.array(found.images[0].values) == pytest.approx(expected.reshape(3, 3), abs=1e-4)

"""OCR-augmented queries: rapidocr reads a rendered image; its text reaches the ranking."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.backends.ocr_reader import OcrReader
from mmbright_core.types import Document, ImageRef, Query, TaskData

pytest.importorskip("rapidocr_onnxruntime")


def render(text: str) -> Image.Image:
    image = Image.new("RGB", (720, 160), "white")
    ImageDraw.Draw(image).text((24, 40), text, fill="black", font=ImageFont.load_default(size=64))
    return image


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class QueryImages:
    """A source holding query images only (what the OCR retrievers read)."""

    def __init__(self, images: dict[str, bytes]) -> None:
        self.images = images

    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        return self.images.get(path)

    def document_image_bytes(self, domain: str, path: str) -> bytes | None:
        return None


@pytest.mark.models
@pytest.mark.slow
def test_rapidocr_reads_back_rendered_text(tmp_path: Path):
    assert OcrReader(tmp_path).read(png(render("TARDIGRADE"))).strip().upper() == "TARDIGRADE"


class FakeEngine:
    """Stands in for the OCR model to count calls; returns rapidocr's result shape."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pixels):
        self.calls += 1
        boxes = [
            ([[10, 60], [90, 60], [90, 90], [10, 90]], "second", 0.9),
            ([[10, 10], [90, 10], [90, 40], [10, 40]], "first", 0.95),
            ([[100, 10], [190, 10], [190, 40], [100, 40]], "noise", 0.1),
        ]
        return boxes, [0.0]


def test_results_are_ordered_filtered_and_cached_by_content(tmp_path: Path):
    reader = OcrReader(tmp_path, min_score=0.5)
    reader._engine = engine = FakeEngine()
    assert reader.read(png(render("x"))) == "first\nsecond"
    fresh = OcrReader(tmp_path, min_score=0.5)
    fresh._engine = FakeEngine()
    assert fresh.read(png(render("x"))) == "first\nsecond"  # same bytes: read from disk
    assert fresh._engine.calls == 0 and engine.calls == 1
    assert fresh.read(png(render("y"))) and fresh._engine.calls == 1


def test_text_boxes_are_the_lines_kept_in_reading_order_cached_by_pixels(tmp_path: Path):
    reader = OcrReader(tmp_path, min_score=0.5)
    reader._engine = engine = FakeEngine()
    picture = render("x")
    assert reader.text_boxes(picture) == ((10, 10, 90, 40), (10, 60, 90, 90))
    assert reader.text_boxes(picture.copy()) == reader.text_boxes(picture) and engine.calls == 1
    fresh = OcrReader(tmp_path, min_score=0.5)
    fresh._engine = FakeEngine()
    assert fresh.text_boxes(render("x")) == ((10, 10, 90, 40), (10, 60, 90, 90))  # from disk
    assert fresh._engine.calls == 0
    (entry,) = (tmp_path / "ocr").glob("*/boxes/*/*.json")
    entry.write_text(entry.read_text().replace("90", "91"))  # damaged: checked, read again
    again = OcrReader(tmp_path, min_score=0.5)
    again._engine = FakeEngine()
    assert again.text_boxes(render("x")) == ((10, 10, 90, 40), (10, 60, 90, 90))
    assert again._engine.calls == 1
    assert again.text_boxes(render("x").convert("L")) and again._engine.calls == 2  # other pixels
    assert again.read(png(picture)) == "first\nsecond" and again._engine.calls == 3  # texts apart


@pytest.mark.models
@pytest.mark.slow
def test_rapidocr_finds_the_box_of_rendered_text(tmp_path: Path):
    image = Image.new("RGB", (720, 480), "white")
    ImageDraw.Draw(image).text(
        (300, 330), "TARDIGRADE", fill="black", font=ImageFont.load_default(size=48)
    )
    left, top, right, bottom = ImageDraw.Draw(image).textbbox(
        (300, 330), "TARDIGRADE", font=ImageFont.load_default(size=48)
    )
    ((x0, y0, x1, y1),) = OcrReader(tmp_path).text_boxes(image)
    # The line's box holds the drawn text, give or take the engine's margin.
    assert x0 <= left + 8 and y0 <= top + 8 and x1 >= right - 8 and y1 >= bottom - 8
    assert x0 >= left - 40 and y0 >= top - 40 and x1 <= right + 40 and y1 <= bottom + 40


def _task(task: int = 2) -> TaskData:
    corpus = (
        Document("d/0.txt", "Tardigrades survive drying by vitrification."),
        Document("d/1.txt", "Lichens pair a fungus with an alga."),
    )
    query = Query("q0", "d", "What is this animal?", (ImageRef("d/q.png"),))
    return TaskData(task, "d", "paper", (query,), corpus, {}, {})


@pytest.mark.models
@pytest.mark.slow
def test_ocr_bm25_finds_the_passage_named_only_in_the_image(tmp_path: Path):
    source = QueryImages({"d/q.png": png(render("TARDIGRADES"))})
    data = _task()
    plain = get_retriever("bm25").retrieve(data, source, 5)["q0"]
    assert plain and not any(plain.values())  # the text alone shares no term with a passage
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path))
    found = ocr.retrieve(data, source, 5)["q0"]
    assert next(iter(found)) == "d/0.txt" and found["d/0.txt"] > 0
    assert not any(score for doc, score in found.items() if doc != "d/0.txt")
    assert ocr.label() == "ocr-bm25"
    assert ocr.settings()["ocr_engine"] == "rapidocr-onnxruntime"


def test_query_without_decodable_image_keeps_its_text(tmp_path: Path):
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path))
    query = _task().queries[0]
    assert ocr.augment(query, QueryImages({})) == query


def test_options_and_tasks_are_checked(tmp_path: Path):
    with pytest.raises(InputError, match="does not take option"):
        get_retriever("ocr-bm25", pretrained="openai")
    with pytest.raises(UnknownNameError, match="OCR image policy"):
        get_retriever("ocr-bm25", image_policy="concat")
    with pytest.raises(InputError, match="cannot run task 1"):
        get_retriever("ocr-bm25", cache_dir=str(tmp_path)).retrieve(_task(1), None, 5)


def test_default_image_policy_is_the_first_decodable_image(tmp_path: Path):
    # The released code reads a query's images[0] (the first that decoded) for every model.
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path))
    assert ocr.image_policy == "first" and ocr.settings()["image_policy"] == "first"
    assert get_retriever("ocr-bm25", image_policy="all").image_policy == "all"


def test_ocr_bm25_keeps_its_index_under_the_cache_dir_given(tmp_path: Path):
    # --cache-dir is the root of every cache a run writes: the OCR text and the BM25 index.
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path / "cache"))
    ocr.inner.index(["a passage about tardigrades"])
    assert [p.parent.name for p in (tmp_path / "cache").glob("*/*")] == ["bm25"]
    assert ocr.reader.folder is not None and ocr.reader.folder.parent == tmp_path / "cache" / "ocr"

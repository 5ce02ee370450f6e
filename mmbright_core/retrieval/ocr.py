"""OCR-augmented queries: text read from a query's images appended to its text (tasks 2, 4).

An honest offline image-aware baseline (SPEC §8; the paper also tries caption-augmented
queries): ``rapidocr-onnxruntime`` reads the query's decodable images, and the text found is
appended to the query before BM25 (``ocr-bm25``) or dense text retrieval (``ocr-dense``).
OCR results are cached on disk by the image's content hash.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.images import query_images
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.retrieval.base import (
    ImageSource,
    Retriever,
    check_task,
    get_retriever,
    require,
)
from mmbright_core.retrieval.cache import default_cache_dir, settings_key
from mmbright_core.retrieval.clip import image_key
from mmbright_core.types import Query, TaskData

# ``concat`` would glue images into one tall picture the OCR model would shrink; reading each
# image (``all``) or the first one keeps the text legible. ``first`` is the default, as for
# every retriever: the released code uses a query's first decodable image (``images[0]``).
OCR_POLICIES = ("first", "all")


class OcrReader:
    """Reads text from images with rapidocr, caching results by image content.

    Args:
        cache_root: The cache root, or None to keep nothing on disk.
        min_score: Text boxes recognised with lower confidence are dropped.
    """

    def __init__(self, cache_root: Path | None, min_score: float = 0.5) -> None:
        self.min_score = float(min_score)
        self.settings = {
            "engine": "rapidocr-onnxruntime",
            "version": _version("rapidocr-onnxruntime"),
            "min_score": self.min_score,
        }
        self.folder = (
            None if cache_root is None else cache_root / "ocr" / settings_key(self.settings)
        )
        self._engine: Any = None

    def read(self, image: Image.Image) -> str:
        """Return the text found in ``image``, its boxes in reading order, one per line."""
        text = self.cached(image)
        if text is not None:
            return text
        text = self._recognise(image)
        path = self._path(image)
        if path is not None:
            atomic_write_text(path, json.dumps({"text": text}) + "\n")
        return text

    def cached(self, image: Image.Image) -> str | None:
        """Return the text an earlier :meth:`read` found in ``image``, or None: never runs OCR."""
        path = self._path(image)
        if path is None or not path.is_file():
            return None
        return str(json.loads(path.read_text(encoding="utf-8"))["text"])

    def _path(self, image: Image.Image) -> Path | None:
        key = image_key(image)
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"

    def _recognise(self, image: Image.Image) -> str:
        if self._engine is None:
            rapidocr = require("rapidocr_onnxruntime", "the OCR retrievers", "ocr")
            self._engine = rapidocr.RapidOCR()
        boxes, _ = self._engine(np.asarray(image.convert("RGB")))
        kept = [(box, text) for box, text, score in boxes or () if float(score) >= self.min_score]
        # Top to bottom, then left to right, by each box's top-left corner.
        kept.sort(key=lambda item: (round(item[0][0][1] / 10), item[0][0][0]))
        return "\n".join(text for _, text in kept)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


class OcrAugmented:
    """A text retriever whose queries carry the text read from their images.

    Args:
        name: The registered name (``ocr-bm25``, ``ocr-dense``).
        inner: The text retriever that ranks with the augmented queries.
        reader: The OCR reader.
        image_policy: ``first`` (the first decodable image, the released code's choice) or
            ``all`` (read every decodable image).
    """

    tasks = frozenset({2, 4})

    def __init__(self, name: str, inner: Retriever, reader: OcrReader, image_policy: str) -> None:
        if image_policy not in OCR_POLICIES:
            raise UnknownNameError("OCR image policy", image_policy, OCR_POLICIES)
        self.name, self.inner, self.reader, self.image_policy = name, inner, reader, image_policy

    def label(self) -> str:
        """Return ``ocr-<inner label>``."""
        return f"ocr-{self.inner.label()}"

    def settings(self) -> dict[str, Any]:
        """Return the inner retriever's settings plus the OCR engine's."""
        ocr = {f"ocr_{key}": value for key, value in self.reader.settings.items()}
        return {**self.inner.settings(), **ocr, "image_policy": self.image_policy}

    def read_query(self, query: Query, source: ImageSource) -> list[str]:
        """Return the non-empty texts read from the query's images, in policy order."""
        images = query_images(source, query, self.image_policy).images
        return [text for text in (self.reader.read(image) for image in images) if text]

    def augment(self, query: Query, source: ImageSource) -> Query:
        """Return ``query`` with the text read from its images appended to its text."""
        found = self.read_query(query, source)
        return dataclasses.replace(query, text="\n".join([query.text, *found])) if found else query

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank with the inner retriever after augmenting every query with its OCR text.

        Args:
            data: The task's data for one domain.
            source: Where the query images' bytes come from.
            k: How many documents to keep per query, after exclusions.

        Returns:
            query_id -> doc_id -> score.
        """
        check_task(self, data.task)
        if source is None:
            raise InputError(
                "OCR needs the query images",
                found="no source",
                hint="Pass the data source to retrieve().",
            )
        queries = tuple(self.augment(q, source) for q in data.queries)
        return self.inner.retrieve(dataclasses.replace(data, queries=queries), source, k)


def ocr_bm25(
    image_policy: str = "first",
    min_score: float = 0.5,
    cache_dir: str | None = None,
    **options: Any,
) -> OcrAugmented:
    """Build ``ocr-bm25``: BM25 (``options`` as for ``bm25``) over OCR-augmented queries."""
    reader = OcrReader(default_cache_dir(cache_dir), min_score)
    return OcrAugmented("ocr-bm25", get_retriever("bm25", **options), reader, image_policy)


def ocr_dense(
    image_policy: str = "first",
    min_score: float = 0.5,
    cache_dir: str | None = None,
    **options: Any,
) -> OcrAugmented:
    """Build ``ocr-dense``: dense retrieval (``options`` as for ``dense``) of OCR'd queries."""
    reader = OcrReader(default_cache_dir(cache_dir), min_score)
    inner = get_retriever("dense", cache_dir=cache_dir, **options)
    return OcrAugmented("ocr-dense", inner, reader, image_policy)

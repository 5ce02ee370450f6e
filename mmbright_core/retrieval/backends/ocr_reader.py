"""Reading the words in an image file with rapidocr, cached by the file's content.

The OCR retrievers (:mod:`mmbright_core.retrieval.backends.ocr`) read each query image through an
:class:`OcrReader`. What it read is cached on disk by the sha256 of the image file's bytes (the
answer cache, :mod:`~mmbright_core.retrieval.cache.answers`, under ``ocr/``), each entry with a
checksum of its text that is checked when read; a reader given a run's recorded
words (``ocr.json``, :mod:`mmbright_core.io.ocr_words`) answers from them first, so a run is
explained without the engine. The same engine also says where the text lies
(:meth:`OcrReader.text_boxes`, what the dashboard's "where the image's weight lies" groups by),
cached beside the texts.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.images import decode_image
from mmbright_core.errors import InputError, MissingDependencyError, require
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.retrieval.cache.answers import AnswerCache
from mmbright_core.retrieval.cache.store import content_key, settings_key

#: A box ``(left, top, right, bottom)`` in an image's pixels.
Box = tuple[float, float, float, float]


class OcrReader:
    """Reads text from image files with rapidocr, keyed by the sha256 of each file's bytes.

    What it read is kept in memory, and on disk under ``cache_root``; a reader given a run's
    recorded words (``ocr.json``) answers from them first and reports the engine settings
    they were read with, so a run is explained from its own record without any engine.

    Args:
        cache_root: The cache root, or None to keep nothing on disk.
        min_score: Text boxes recognised with lower confidence are dropped.
        recorded: Words a run recorded; the reader then stands for the engine that read them.
    """

    def __init__(
        self, cache_root: Path | None, min_score: float = 0.5, recorded: OcrWords | None = None
    ) -> None:
        self.min_score = float(min_score)
        self._installed = {
            "engine": "rapidocr-onnxruntime",
            "version": _version("rapidocr-onnxruntime"),
            "min_score": self.min_score,
        }
        self.settings: dict[str, Any] = (
            dict(self._installed) if recorded is None else dict(recorded.engine)
        )
        self.recorded = recorded
        folder = Path("ocr", settings_key(self.settings))
        self._texts_kept = AnswerCache(
            cache_root, folder, sort_keys=False, checked="text", sync=True
        )
        self._boxes_kept = AnswerCache(
            cache_root, folder / "boxes", sort_keys=False, checked="text", sync=True
        )
        self.folder = self._texts_kept.folder
        self._known: dict[str, str] = {} if recorded is None else dict(recorded.texts)
        self._boxes: dict[str, str] = {}
        self._engine: Any = None

    def read(self, data: bytes, image: Image.Image | None = None) -> str:
        """Return the text found in an image file, its boxes in reading order, one per line.

        Args:
            data: The image file's bytes (they key the result).
            image: The same image decoded, when the caller has it already.

        Raises:
            MissingDependencyError: The text is neither recorded nor cached and the OCR
                engine is not installed.
            InputError: The engine installed is not the one the recorded words were read
                with, or the bytes do not decode.
        """
        key = content_key(data)
        text = self.cached(key)
        if text is None:
            lines = self._lines(image if image is not None else decode_image(data, key))
            text = "\n".join(line for _, line in lines)
            self._texts_kept.put(key, {"text": text})
        self._known[key] = text
        return text

    def cached(self, key: str) -> str | None:
        """Return the text recorded or read earlier for the file of sha256 ``key``, or None.

        Never runs OCR. A cache entry that does not match its checksum is reported, deleted
        and counts as absent (the image is read again).
        """
        if key in self._known:
            return self._known[key]
        return self._texts_kept.get(key, _text)

    def text_boxes(self, image: Image.Image) -> tuple[Box, ...]:
        """The box of each line of text the engine reads in ``image``, in reading order.

        Each box is ``(left, top, right, bottom)`` in the image's pixels, bounding one line
        kept (confidence at least ``min_score``), as :meth:`read` keeps them. Keyed by the
        image's pixels (mode, size and bytes: a picture composed in memory has no file),
        kept in memory and on disk under ``boxes/`` beside the texts, each entry checked as
        a text entry is. A run records its words, not their boxes: these need the engine,
        or the cache.

        Raises:
            MissingDependencyError: Not cached and the OCR engine is not installed.
        """
        key = content_key(f"{image.mode} {image.width}x{image.height}\n".encode() + image.tobytes())
        stored = self._boxes.get(key) or self._boxes_kept.get(key, _text)
        if stored is None:
            stored = json.dumps([_bounds(quad) for quad, _ in self._lines(image)])
            self._boxes_kept.put(key, {"text": stored})
        self._boxes[key] = stored
        return tuple((float(a), float(b), float(c), float(d)) for a, b, c, d in json.loads(stored))

    def _lines(self, image: Image.Image) -> list[tuple[Any, str]]:
        """(corner points, text) of each line the engine reads and keeps, in reading order."""
        if self._engine is None:
            what = (
                ENGINE_USER
                if self.recorded is None
                else ("reading a query image whose words the run did not record")
            )
            rapidocr = require("rapidocr_onnxruntime", what, "ocr")
            if self.settings != self._installed:
                raise InputError(
                    "a query image's words are not recorded with the run, and the OCR "
                    "engine installed is not the one that read the others",
                    expected=f"OCR engine {self.settings}",
                    found=f"OCR engine {self._installed}",
                    hint="Install the recorded version, or run the retriever again",
                )
            self._engine = rapidocr.RapidOCR()
        boxes, _ = self._engine(np.asarray(image.convert("RGB")))
        kept = [(box, text) for box, text, score in boxes or () if float(score) >= self.min_score]
        # Top to bottom, then left to right, by each box's top-left corner.
        kept.sort(key=lambda item: (round(item[0][0][1] / 10), item[0][0][0]))
        return kept


def _bounds(quad: Sequence[Sequence[float]]) -> Box:
    """The upright box ``(left, top, right, bottom)`` around a line's four corner points."""
    xs, ys = [float(x) for x, _ in quad], [float(y) for _, y in quad]
    return (min(xs), min(ys), max(xs), max(ys))


def _text(entry: Any) -> str:
    """The text of a checked entry (its checksum matched)."""
    return str(entry["text"])


ENGINE_USER = "the OCR engine of ocr-bm25 and ocr-dense"
"""What needs the OCR engine, as the message of a missing ``ocr`` extra names it."""


def engine_installed() -> bool:
    """Whether the OCR engine can be imported (the ``ocr`` extra is installed)."""
    try:
        require("rapidocr_onnxruntime", ENGINE_USER, "ocr")
    except MissingDependencyError:
        return False
    return True


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"

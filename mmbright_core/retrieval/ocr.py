"""OCR-augmented queries: text read from a query's images appended to its text (tasks 2, 4).

An honest offline image-aware baseline (docs/development.md, Working offline; the paper also tries
caption-augmented queries): ``rapidocr-onnxruntime`` reads the query's decodable images, and the
text found is appended to the query before BM25 (``ocr-bm25``) or dense text retrieval
(``ocr-dense``). OCR results are cached on disk by the sha256 of the image file's bytes (each entry
with a checksum of its text, checked when read), and a run records the
words of every query image it read beside its scores (``ocr.json``,
:mod:`mmbright_core.io.ocr_words`), so that it can be explained without the engine.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from mmbright_core.data.images import decode_image, images_taken
from mmbright_core.errors import InputError, MissingDependencyError, UnknownNameError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.ocr_words import OCR_FILE, ImageRead, OcrWords, ocr_words_json
from mmbright_core.retrieval.base import ImageSource, Retriever, check_task, require
from mmbright_core.retrieval.cache import content_key, default_cache_dir, settings_key
from mmbright_core.retrieval.registry import get_retriever
from mmbright_core.retrieval.verify import bytes_match, bytes_record, remove, report_damaged
from mmbright_core.types import Query, TaskData

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RunConfig
    from mmbright_core.retrieval.rebuild import RebuildContext

# ``concat`` would glue images into one tall picture the OCR model would shrink; reading each
# image (``all``) or the first one keeps the text legible. ``first`` is the default, as for
# every retriever: the released code uses a query's first decodable image (``images[0]``).
OCR_POLICIES = ("first", "all")


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
        self.folder = (
            None if cache_root is None else cache_root / "ocr" / settings_key(self.settings)
        )
        self._known: dict[str, str] = {} if recorded is None else dict(recorded.texts)
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
            text = self._recognise(image if image is not None else decode_image(data, key))
            path = self._path(key)
            if path is not None:
                checksum = bytes_record(text.encode("utf-8"))["checksum"]
                atomic_write_text(path, json.dumps({"text": text, "checksum": checksum}) + "\n")
        self._known[key] = text
        return text

    def cached(self, key: str) -> str | None:
        """Return the text recorded or read earlier for the file of sha256 ``key``, or None.

        Never runs OCR. A cache entry that does not match its checksum is reported, deleted
        and counts as absent (the image is read again).
        """
        if key in self._known:
            return self._known[key]
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            text = entry["text"]
            if isinstance(text, str) and bytes_match(text.encode("utf-8"), entry["checksum"]):
                return text
            problem = "its checksum does not match its text"
        except (OSError, ValueError, KeyError, TypeError) as err:
            problem = f"unreadable ({type(err).__name__})"
        report_damaged(path, problem)
        remove([path])
        return None

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"

    def _recognise(self, image: Image.Image) -> str:
        if self._engine is None:
            what = (
                "the OCR retrievers"
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
        return "\n".join(text for _, text in kept)


def engine_installed() -> bool:
    """Whether the OCR engine can be imported (the ``ocr`` extra is installed)."""
    try:
        require("rapidocr_onnxruntime", "the OCR retrievers", "ocr")
    except MissingDependencyError:
        return False
    return True


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

    recorded_files = (OCR_FILE,)
    """Files :meth:`records` writes beside each domain's ``scores.json``."""

    def read_images(self, query: Query, source: ImageSource) -> list[ImageRead]:
        """Return each image the policy reads (among those that decode) with its text."""
        out = []
        for path, image in images_taken(source, query, self.image_policy):
            data = source.query_image_bytes(query.domain, path) or b""
            out.append(ImageRead(path, content_key(data), self.reader.read(data, image)))
        return out

    def read_query(self, query: Query, source: ImageSource) -> list[str]:
        """Return the non-empty texts read from the query's images, in policy order."""
        return [read.text for read in self.read_images(query, source) if read.text]

    def records(self, data: TaskData, source: ImageSource | None) -> dict[str, str]:
        """Return ``ocr.json``: every query's images read and their words (after a run).

        The words are what the images added to the queries; kept with the run, they let
        it be shown and explained without an OCR engine (docs/commands.md, output files).
        """
        if source is None:
            return {}
        reads = {q.query_id: self.read_images(q, source) for q in data.queries}
        return {OCR_FILE: ocr_words_json(self.reader.settings, self.image_policy, reads)}

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

    def explain_scores(
        self,
        data: TaskData,
        source: ImageSource | None,
        query: Query,
        positions: dict[str, int],
        rewrite: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Explain through the inner retriever, with the words read from the query images.

        ``rewrite``: ``(original text, LLM answer)`` when ``query`` is a rewritten one.
        """
        inner: Any = self.inner  # bm25 or dense (ocr_bm25, ocr_dense), which both explain
        extra = {} if rewrite is None else {"rewrite": rewrite}
        found: dict[str, Any] = inner.explain_scores(
            data, source, query, positions, through=self, **extra
        )
        return found


def ocr_bm25(
    image_policy: str = "first",
    min_score: float = 0.5,
    cache_dir: str | None = None,
    recorded: OcrWords | None = None,
    **options: Any,
) -> OcrAugmented:
    """Build ``ocr-bm25``: BM25 (``options`` as for ``bm25``) over OCR-augmented queries.

    ``recorded``: a run's recorded words, read before any engine (:class:`OcrReader`).
    """
    reader = OcrReader(default_cache_dir(cache_dir), min_score, recorded)
    return OcrAugmented("ocr-bm25", get_retriever("bm25", **options), reader, image_policy)


def ocr_dense(
    image_policy: str = "first",
    min_score: float = 0.5,
    cache_dir: str | None = None,
    recorded: OcrWords | None = None,
    **options: Any,
) -> OcrAugmented:
    """Build ``ocr-dense``: dense retrieval (``options`` as for ``dense``) of OCR'd queries.

    ``recorded``: a run's recorded words, read before any engine (:class:`OcrReader`).
    """
    reader = OcrReader(default_cache_dir(cache_dir), min_score, recorded)
    inner = get_retriever("dense", cache_dir=cache_dir, **options)
    return OcrAugmented("ocr-dense", inner, reader, image_policy)


def rebuild_ocr_bm25(
    config: RunConfig, options: dict[str, Any], context: RebuildContext
) -> dict[str, Any]:
    """Return the options that rebuild a run's ``ocr-bm25``, on the words it recorded."""
    from mmbright_core.retrieval.bm25 import rebuild

    return _rebuild_ocr(rebuild(config, options, context), config, options, context)


def rebuild_ocr_dense(
    config: RunConfig, options: dict[str, Any], context: RebuildContext
) -> dict[str, Any]:
    """Return the options that rebuild a run's ``ocr-dense``, on the words it recorded."""
    from mmbright_core.retrieval.dense import rebuild

    inner = rebuild(config, options, context)
    inner.pop("device")  # ocr-dense encodes on the inner retriever's default device
    return _rebuild_ocr(inner, config, options, context)


def _rebuild_ocr(
    inner: dict[str, Any], config: RunConfig, options: dict[str, Any], context: RebuildContext
) -> dict[str, Any]:
    """The inner retriever's options with the OCR's, or why the words cannot be had.

    Raises:
        NotRebuildable: The recorded words are of another image policy, or none were
            recorded and the engine that would read them again is not installed.
    """
    from mmbright_core.retrieval.rebuild import NotRebuildable

    words = context.ocr_words
    if words is not None and words.image_policy != config.image_policy:
        raise NotRebuildable(
            f"the run's ocr.json records image policy {words.image_policy!r}, its "
            f"configuration {config.image_policy!r}: run the retriever again"
        )
    if words is None and not engine_installed():
        raise NotRebuildable(
            "the run records no words read from its query images (no ocr.json beside its "
            "scores.json), and reading them again needs the OCR engine, which is not "
            "installed: pip install 'mmbright[ocr]', or run the retriever again to record them"
        )
    return {
        **inner,
        "image_policy": config.image_policy,
        "min_score": options["ocr_min_score"],
        "recorded": words,
    }

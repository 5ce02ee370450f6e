"""OCR-augmented queries: text read from a query's images appended to its text (tasks 2, 4).

An honest offline image-aware baseline (docs/development.md, Working offline; the paper also tries
caption-augmented queries): ``rapidocr-onnxruntime`` reads the query's decodable images, and the
text found is appended to the query before BM25 (``ocr-bm25``) or dense text retrieval
(``ocr-dense``). The words are read by
:class:`~mmbright_core.retrieval.backends.ocr_reader.OcrReader`, cached by the image file's
content, and a run records the words of every query image it read beside its scores (``ocr.json``,
:mod:`mmbright_core.io.ocr_words`), so that it can be explained without the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mmbright_core.data.images import ImageSource, images_taken
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.ocr_words import OCR_FILE, ImageRead, OcrWords, ocr_words_json
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.backends.ocr_reader import OcrReader, engine_installed
from mmbright_core.retrieval.base import Retriever, check_task
from mmbright_core.retrieval.cache.store import content_key, default_cache_dir
from mmbright_core.retrieval.explanation import with_image_words
from mmbright_core.retrieval.registry import get_retriever
from mmbright_core.types import Query, TaskData

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RebuildContext, RunConfig
    from mmbright_core.retrieval.explanation import Attribution, Question

# ``concat`` would glue images into one tall picture the OCR model would shrink; reading each
# image (``all``) or the first one keeps the text legible. ``first`` is the default, as for
# every retriever: the released code uses a query's first decodable image (``images[0]``).
OCR_POLICIES = ("first", "all")


class OcrAugmented:
    """A text retriever whose queries carry the text read from their images.

    Args:
        name: The registered name (``ocr-bm25``, ``ocr-dense``).
        inner: The text retriever that ranks with the augmented queries.
        reader: The OCR reader.
        image_policy: ``first`` (the first decodable image, the released code's choice) or
            ``all`` (read every decodable image).
    """

    #: Both OCR backends' records name the same tasks; an instance reads its own.
    tasks = BACKENDS["ocr-bm25"].tasks

    def __init__(self, name: str, inner: Retriever, reader: OcrReader, image_policy: str) -> None:
        if image_policy not in OCR_POLICIES:
            raise UnknownNameError("OCR image policy", image_policy, OCR_POLICIES)
        self.name, self.inner, self.reader, self.image_policy = name, inner, reader, image_policy
        self.tasks = BACKENDS[name].tasks

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

    def read_ahead(
        self, data: TaskData, source: ImageSource | None, tell: Callable[[float, str], None]
    ) -> None:
        """Read every query's images before retrieval, saying each query read (the slow part).

        The words are kept by the reader, so :meth:`retrieve` finds them at once; a run's
        progress then moves image by image instead of once per domain.
        """
        given = _images_given(source, "Pass the data source.")
        count, images = len(data.queries), 0
        for index, query in enumerate(data.queries):
            images += len(self.read_images(query, given))
            tell((index + 1) / count, f"OCR: {images} image(s) read, query {index + 1} of {count}")

    def augment(self, query: Query, source: ImageSource) -> Query:
        """Return ``query`` with the text read from its images appended to its text."""
        return with_image_words(query, self.read_query(query, source))

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
        given = _images_given(source, "Pass the data source to retrieve().")
        queries = tuple(self.augment(q, given) for q in data.queries)
        return self.inner.retrieve(dataclasses.replace(data, queries=queries), source, k)

    def explain_scores(self, question: Question) -> Mapping[str, Attribution]:
        """Explain through the inner retriever, with the words read from the query images."""
        given = _images_given(question.source, "Pass the data source.")
        words = tuple(self.read_query(question.query, given))
        inner: Any = self.inner  # bm25 or dense (ocr_bm25, ocr_dense), which both explain
        found: Mapping[str, Attribution] = inner.explain_scores(
            dataclasses.replace(question, image_words=words)
        )
        return found


def _images_given(source: ImageSource | None, hint: str) -> ImageSource:
    """Return ``source``, or raise: OCR reads the query images from it."""
    if source is None:
        raise InputError("OCR needs the query images", found="no source", hint=hint)
    return source


def ocr_bm25(**options: Any) -> OcrAugmented:
    """Build ``ocr-bm25``: BM25 over OCR-augmented queries (``options``: :func:`_ocr_over`)."""
    return _ocr_over("bm25", **options)


def ocr_dense(**options: Any) -> OcrAugmented:
    """Build ``ocr-dense``: dense retrieval of OCR-augmented queries (as :func:`ocr_bm25`)."""
    return _ocr_over("dense", **options)


def _ocr_over(
    inner: str,
    image_policy: str = "first",
    min_score: float = 0.5,
    cache_dir: str | None = None,
    recorded: OcrWords | None = None,
    **options: Any,
) -> OcrAugmented:
    """Build ``ocr-<inner>``: the text retriever ``inner`` (given ``options``) on OCR'd queries.

    ``recorded``: a run's recorded words, read before any engine (:class:`OcrReader`).
    """
    reader = OcrReader(default_cache_dir(cache_dir), min_score, recorded)
    # One cache root for all: the OCR text and the inner retriever's index or embeddings.
    text_retriever = get_retriever(inner, cache_dir=cache_dir, **options)
    return OcrAugmented(f"ocr-{inner}", text_retriever, reader, image_policy)


def rebuild_ocr_bm25(
    config: RunConfig, options: dict[str, Any], context: RebuildContext
) -> dict[str, Any]:
    """Return the options that rebuild a run's ``ocr-bm25``, on the words it recorded."""
    from mmbright_core.retrieval.lexical.bm25 import rebuild

    return _rebuild_ocr(rebuild(config, options, context), config, options, context)


def rebuild_ocr_dense(
    config: RunConfig, options: dict[str, Any], context: RebuildContext
) -> dict[str, Any]:
    """Return the options that rebuild a run's ``ocr-dense``, on the words it recorded."""
    from mmbright_core.retrieval.backends.dense import rebuild

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
    from mmbright_core.retrieval.base import NotRebuildable

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

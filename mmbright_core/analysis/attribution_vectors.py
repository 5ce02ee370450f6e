"""Embedding scores explained: a fused query's text and image parts, dense with and without OCR.

The vectors come from the retrievers' own public methods, which go through their
content-keyed embedding caches: explaining the documents of a run just made costs a few
cache reads, and otherwise a handful of encodings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image

from mmbright_core.analysis.attribution_records import (
    Attribution,
    DenseAttribution,
    FusionAttribution,
    Question,
    Unavailable,
)
from mmbright_core.errors import InputError
from mmbright_core.retrieval.base import ImageSource
from mmbright_core.retrieval.dense import DenseRetriever
from mmbright_core.retrieval.dual import DualEncoderRetriever
from mmbright_core.retrieval.dual_vectors import image_key
from mmbright_core.retrieval.index import l2_normalise
from mmbright_core.retrieval.instructions import fill_domain
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Query, TaskData

Vectors = npt.NDArray[np.float64]
# Scores are 100 x the cosine (docs/protocol.md, Fusion rules).
_SCALE = 100.0


def explain_fusion(retriever: DualEncoderRetriever, question: Question) -> dict[str, Attribution]:
    """Split each document's fused score into the query text's and the query image's parts.

    The linear rules (:mod:`~mmbright_core.retrieval.fusion`) make the query ``a*t + b*i``,
    so ``100 * q.d = 100 * a * t.d + 100 * b * i.d`` exactly; the others have no split.
    """
    data, query = question.data, question.query
    if not retriever.fusion.linear:
        reason = Unavailable(
            f"this retriever's scores have no text/image split (fusion "
            f"{retriever.fusion.name!r}: {_WHY[retriever.fusion.name]})"
        )
        return dict.fromkeys(question.positions, reason)
    source = _query_source(data, question.source)
    text = retriever.encode_texts([query.text], "query")[0]
    found = retriever.query_pictures(query, source) if source is not None else None
    pictures = tuple(found.images) if found is not None else ()
    image = _image_vector(retriever, pictures) if pictures else np.zeros_like(text)
    text_weight, image_weight = retriever.fusion.weights(text, image)
    docs = [data.corpus[p] for p in question.positions.values()]
    vectors = _document_vectors(retriever, data, source, docs)
    text_parts = _SCALE * text_weight * (vectors @ text.astype(np.float64))
    image_parts = _SCALE * image_weight * (vectors @ image.astype(np.float64))
    problems = found.problems if found is not None else {}
    policy = retriever.image_policy
    used = _images_used(query, problems, policy)
    placeholder = None
    if source is not None and not used:
        placeholder = "white" if pictures else "text"
    return {
        doc_id: FusionAttribution(
            doc_id=doc_id,
            score=float(text_parts[row] + image_parts[row]),
            text_part=float(text_parts[row]),
            image_part=float(image_parts[row]),
            policy=policy,
            images_used=used if source is not None else (),
            placeholder=placeholder,
            pictures=pictures,
            skipped=tuple(problems.items()),
        )
        for row, doc_id in enumerate(question.positions)
    }


def _query_source(data: TaskData, source: ImageSource | None) -> ImageSource | None:
    """Return where the query images come from: None in Task 1, whose queries are text alone.

    Raises:
        InputError: The task's queries carry images and ``source`` is None.
    """
    if TASK_TABLE[data.task].text_only:
        return None
    if source is None:
        raise InputError(
            f"task {data.task} needs image bytes", found="no source", hint="Pass the source."
        )
    return source


def _image_vector(retriever: DualEncoderRetriever, pictures: Sequence[Image.Image]) -> np.ndarray:
    """Return the mean of the query pictures' raw vectors, as the retriever encodes them."""
    loaders = [_loader(picture) for picture in pictures]
    keys = [image_key(p) for p in pictures]
    return retriever.encode_images(loaders, keys, "query").mean(axis=0)


_WHY = {
    "joint": "the model encodes text and image together",
    "text": "the model reads the query text only",
}


def _loader(picture: Image.Image) -> Callable[[], Image.Image]:
    return lambda: picture


def _images_used(query: Query, problems: dict[str, str], policy: str) -> tuple[str, ...]:
    """Return the query image paths that decoded, as the policy takes them."""
    decoded = tuple(ref.path for ref in query.images if ref.path not in problems)
    return decoded[:1] if policy == "first" else decoded


def _document_vectors(
    retriever: DualEncoderRetriever,
    data: TaskData,
    source: ImageSource | None,
    docs: Sequence[Document],
) -> Vectors:
    """Return the L2-normalised vectors the retriever ranks ``docs`` by, as float64 rows."""
    corpus = TASK_TABLE[data.task].corpus
    if corpus == "images" and source is not None:
        paths = [d.doc_id if d.image is None else d.image.path for d in docs]
        vectors = l2_normalise(retriever.document_image_vectors(data.domain, paths, source))
    elif corpus == "pairs" and source is not None:
        vectors = (
            retriever.pair_vectors(data, source, docs)
            if docs
            else np.zeros((0, 0), dtype=np.float32)
        )
    else:
        vectors = retriever.encode_texts([d.text for d in docs])
    # rank_vectors normalises what it indexes once more: so do we.
    return l2_normalise(vectors).astype(np.float64)


def explain_dense(dense: DenseRetriever, question: Question) -> dict[str, Attribution]:
    """Return each document's dense similarity; for ``ocr-dense`` also without the OCR words."""
    query, scored = question.query, question.scored.text
    texts = [scored] if scored == query.text else [scored, query.text]
    docs = {doc_id: question.data.corpus[p] for doc_id, p in question.positions.items()}
    # The prefixes as the run filled them for this domain (BRIGHT's per-domain instructions).
    query_prefix = fill_domain(dense.query_prefix, query.domain)
    queries = l2_normalise(dense.encode(texts, query_prefix)).astype(np.float64)
    document_prefix = fill_domain(dense.document_prefix, query.domain)
    vectors = dense.encode([d.text for d in docs.values()], document_prefix)
    scores = _SCALE * (l2_normalise(vectors).astype(np.float64) @ queries.T)
    return {
        doc_id: DenseAttribution(
            doc_id=doc_id,
            score=float(scores[row, 0]),
            without_ocr=float(scores[row, 1]) if len(texts) > 1 else None,
        )
        for row, doc_id in enumerate(docs)
    }

"""Any dual encoder under the benchmark's protocol: an Embedder, fused, cached, ranked, cut.

An :class:`~mmbright_core.retrieval.embedder.Embedder` only turns texts and images into raw
vectors. :class:`DualEncoderRetriever` does the rest as docs/protocol.md §3 asks:

- query: its text vector fused with the vector of its image(s), chosen by the image policy
  (``first`` by default: the released code's ``images[0]``), by the embedder's named fusion
  rule (:mod:`~mmbright_core.retrieval.fusion`); Task 1 queries are their text alone;
- tasks 1-2 passages: L2norm(raw text); Task 3 images: L2norm(raw image); Task 4 pairs: the
  rule's fusion of the passage text and the pair's image;
- a query or pair without an image: the rule's stand-in (the white 224x224 image for
  ``raw-mean``, as every official CLIP retriever uses; none for the other rules);
- score: 100 x the dot product of normalised vectors, exclusions before the top-k cut.

Raw vectors go through the content-keyed embedding cache, keyed by the embedder's
``settings()`` and the role, so each fusion is computed from cached parts and a killed run
pays nothing twice (:mod:`~mmbright_core.retrieval.dual_vectors`); the query side is
:mod:`~mmbright_core.retrieval.dual_queries`, and this module the documents, the ranking and
the Ray jobs. Corpus encodings can run on Ray (:class:`~.encoders.CorpusEncoder`), and the
fused scores split exactly into a text and an image part (:meth:`explain_scores`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.data.images import POLICIES, decode_image
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import ImageSource, check_k, check_task, passage_id
from mmbright_core.retrieval.cache import check_dtype, content_key, default_cache_dir
from mmbright_core.retrieval.dual_queries import FusedQueries
from mmbright_core.retrieval.dual_vectors import asks_white, image_key
from mmbright_core.retrieval.embedder import Embedder, JointEmbedder
from mmbright_core.retrieval.encoders import EncodeJob, document_bytes, passage_jobs
from mmbright_core.retrieval.explanation import (
    Attribution,
    FusionAttribution,
    Question,
    Unavailable,
)
from mmbright_core.retrieval.fusion import Fusion, get_fusion
from mmbright_core.retrieval.groups import Groups
from mmbright_core.retrieval.index import (
    IndexKind,
    l2_normalise,
    rank_vectors,
    scale_settings,
)
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Query, TaskData

if TYPE_CHECKING:
    from PIL import Image

NO_IMAGE_MODES = ("white", "text")


class DualEncoderRetriever(FusedQueries):
    """Rank with an embedder's vectors under the protocol (tasks its modalities allow).

    Args:
        embedder: The model (an :class:`Embedder`; a :class:`JointEmbedder` for ``joint``).
        name: The registered name it answers to (recorded as the run's ``retriever``).
        image_policy: ``first`` (the default), ``concat`` or ``all`` (see ``data.images``).
        no_image: What a query without a decodable image gets: ``white`` (the white image)
            or ``text`` (its text alone). Default: ``white`` for ``raw-mean``, else ``text``.
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        index: Vector index kind (``flat`` exact; ``hnsw`` or ``ivf`` approximate, faiss).
        cache_dtype: ``float32`` (the official precision) or ``float16``.
        batch_size: Items per embedder call.

    Raises:
        UnknownNameError: An unknown fusion, image policy or no-image mode.
        InputError: A ``joint`` embedder without ``encode_joint``.
    """

    tasks: frozenset[int]
    #: What the cosine is multiplied by in the scores (a preset's ``score_scale``).
    score_scale: float = 100.0

    def __init__(
        self,
        embedder: Embedder,
        *,
        name: str = "dual",
        image_policy: str = "first",
        no_image: str | None = None,
        cache_dir: str | None = None,
        index: IndexKind = "flat",
        cache_dtype: str = "float32",
        batch_size: int = 32,
    ) -> None:
        self.embedder, self.name = embedder, name
        self.fusion: Fusion = get_fusion(embedder.fusion)
        if image_policy not in POLICIES:
            raise UnknownNameError("image policy", image_policy, POLICIES)
        chosen = no_image or ("white" if self.fusion.missing == "white" else "text")
        if chosen not in NO_IMAGE_MODES:
            raise UnknownNameError("no-image mode", chosen, NO_IMAGE_MODES)
        if self.fusion.name == "joint" and not isinstance(embedder, JointEmbedder):
            raise InputError(
                f"embedder {embedder.name!r} names the joint fusion but has no encode_joint",
                hint="Give it encode_joint(texts, images, role), or name another fusion.",
            )
        self.image_policy, self.no_image = image_policy, chosen
        self.cache_root = default_cache_dir(cache_dir)
        self.index, self.cache_dtype = index, check_dtype(cache_dtype)
        self.batch_size = batch_size
        images = "image" in embedder.modalities and self.fusion.images
        self.tasks = frozenset({1, 2, 3, 4} if images else {1, 2})

    def label(self) -> str:
        """Return the embedder's name (the output folder's model part)."""
        return self.embedder.name

    def settings(self) -> dict[str, Any]:
        """Return the embedder's settings, the query image handling, fusion and index."""
        images = self.fusion.images
        return {
            **self.embedder.settings(),
            "image_policy": self.image_policy if images else None,
            "no_image": self.no_image if images else None,
            "fusion": self.fusion.name,
            "index": self.index,
            "cache_dtype": self.cache_dtype,
            **scale_settings(self.score_scale),
        }

    # --- documents ----------------------------------------------------------------------------

    def missing_image_vector(self, dim: int) -> np.ndarray:
        """Return what a Task 4 pair without image is fused with: white, or zeros (1, dim).

        White where the rule says so (``raw-mean``) or the embedder's Task 4 recipe does
        (:func:`~.dual_vectors.asks_white`).
        """
        if self.fusion.missing == "white" or asks_white(self.embedder):
            return self.white_vector()
        return np.zeros((1, dim), dtype=np.float32)

    def pair_vectors(self, data: TaskData, source: ImageSource, docs: Sequence[Any]) -> np.ndarray:
        """Return the fused vectors of Task 4 pairs (``docs``: corpus documents).

        Passage texts are encoded once each, the pairs' distinct images once each, sorted.
        """
        passages = Groups.from_keys([passage_id(d.doc_id) for d in docs])
        first = [docs[i] for i in passages.members[passages.offsets[:-1]]]
        if self.fusion.name == "joint":
            return self._joint_pairs(data, source, docs)
        texts = self.encode_texts([d.text for d in first])
        paths = sorted({d.image.path for d in docs if d.image is not None})
        row = {path: i for i, path in enumerate(paths)}
        # reshape: a domain without images gives an empty (0, 0) block.
        found = self.document_image_vectors(data.domain, paths, source)
        images = np.vstack(
            [found.reshape(-1, texts.shape[1]), self.missing_image_vector(texts.shape[1])]
        )
        image_of = [row[d.image.path] if d.image is not None else len(paths) for d in docs]
        return self.fusion.fuse(texts[passages.unit_of_doc], images[image_of])

    def _joint_pairs(self, data: TaskData, source: ImageSource, docs: Sequence[Any]) -> np.ndarray:
        images = [
            None
            if d.image is None
            else decode_image(document_bytes(source, data.domain, d.image.path), d.image.path)
            for d in docs
        ]
        return l2_normalise(self.encode_joint([d.text for d in docs], images, "document"))

    def corpus_vectors(self, data: TaskData, source: ImageSource | None) -> np.ndarray:
        """Return the L2-normalised vectors of ``data.corpus``, in corpus order."""
        corpus = TASK_TABLE[data.task].corpus
        if corpus == "images" and source is not None:
            paths = [d.doc_id if d.image is None else d.image.path for d in data.corpus]
            return l2_normalise(self.document_image_vectors(data.domain, paths, source))
        if corpus == "pairs" and source is not None:
            return self.pair_vectors(data, source, data.corpus)
        return l2_normalise(self.encode_texts([d.text for d in data.corpus]))

    # --- the Ray engine -----------------------------------------------------------------------

    def corpus_jobs(self, data: TaskData, source: ImageSource | None) -> list[EncodeJob]:
        """Return the passage texts and corpus images a local run encodes (for the Ray engine).

        Task 3 encodes its corpus images in corpus order, Task 4 its distinct images sorted
        (joint pairs are encoded where the run ranks).
        """
        corpus = TASK_TABLE[data.task].corpus
        joint = self.fusion.name == "joint"
        jobs = passage_jobs(data) if not (corpus == "pairs" and joint) else []
        if corpus != "passages" and source is not None and not joint:
            if corpus == "images":
                paths = [d.doc_id if d.image is None else d.image.path for d in data.corpus]
            else:
                paths = sorted({d.image.path for d in data.corpus if d.image is not None})
            raw = [document_bytes(source, data.domain, path) for path in paths]
            jobs.append(EncodeJob("image", [content_key(r) for r in raw], raw, paths))
        return jobs

    # --- ranking and attribution --------------------------------------------------------------

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank passages (tasks 1-2), images (Task 3) or pairs (Task 4) for every query.

        Returns:
            query_id -> doc_id -> score (100 x the dot product of the normalised vectors).

        Raises:
            InputError: A task that needs images without a source.
        """
        check_task(self, data.task)
        check_k(k)
        query_images = not TASK_TABLE[data.task].text_only
        if query_images and source is None and self.fusion.images:
            raise InputError(
                f"task {data.task} needs image bytes",
                found="no source",
                hint="Pass the data source to retrieve().",
            )
        if not data.corpus or not data.queries:
            return {q.query_id: {} for q in data.queries}
        with self.bound(data):
            queries = self.encode_queries(data.queries, source if query_images else None)
            vectors = self.corpus_vectors(data, source)
        identity = Groups.from_keys([d.doc_id for d in data.corpus])
        return rank_vectors(data, identity, vectors, queries, k, self.index, self.score_scale)

    def explain_scores(self, question: Question) -> Mapping[str, Attribution]:
        """Split each document's score into its query text's and query image's parts.

        Only linear rules split (``raw-mean``, ``zero-image``, ``normalised-mean``); the
        others answer, for every document, that their scores have no text/image split.
        """
        with self.bound(question.data):
            return explain_fusion(self, question)


def explain_fusion(retriever: DualEncoderRetriever, question: Question) -> dict[str, Attribution]:
    """Split each document's fused score into the query text's and the query image's parts.

    The linear rules (:mod:`~mmbright_core.retrieval.fusion`) make the query ``a*t + b*i``,
    so ``s * q.d = s * a * t.d + s * b * i.d`` exactly, ``s`` the run's
    :attr:`~DualEncoderRetriever.score_scale`; the others have no split.
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
    scale = retriever.score_scale  # the run's: 100, or 1 for the plain cosine
    text_parts = scale * text_weight * (vectors @ text.astype(np.float64))
    image_parts = scale * image_weight * (vectors @ image.astype(np.float64))
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
) -> np.ndarray:
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

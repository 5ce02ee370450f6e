"""Any dual encoder under the benchmark's protocol: an Embedder, fused, cached, ranked, cut.

An :class:`~mmbright_core.retrieval.dual.embedder.Embedder` only turns texts and images into raw
vectors. :class:`DualEncoderRetriever` does the rest as docs/protocol.md §3 asks:

- query: its text vector fused with the vector of its image(s), chosen by the image policy
  (``first`` by default: the released code's ``images[0]``), by the embedder's named fusion
  rule (:mod:`~mmbright_core.retrieval.dual.fusion`); Task 1 queries are their text alone;
- tasks 1-2 passages: L2norm(raw text); Task 3 images: L2norm(raw image); Task 4 pairs: the
  rule's fusion of the passage text and the pair's image;
- a query or pair without an image: the rule's stand-in (the white 224x224 image for
  ``raw-mean``, as every official CLIP retriever uses; none for the other rules);
- score: 100 x the dot product of normalised vectors, exclusions before the top-k cut.

Raw vectors go through the content-keyed embedding cache, keyed by the embedder's
``settings()`` and the role, so each fusion is computed from cached parts and a killed run
pays nothing twice; an image made in memory (the white stand-in of the official CLIP
retrievers) is keyed by its pixels (:func:`image_key`). The options every model backend hands
it travel as one :class:`DualOptions`. Corpus encodings can run on Ray
(:class:`~.encoders.CorpusEncoder`), and the fused scores split exactly into a text and an image
part (:meth:`explain_scores`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import ImageLoader, LazyImages
from mmbright_core.data.images import POLICIES, ImageSource, QueryImages, decode_image, query_images
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import check_k, check_task, passage_id
from mmbright_core.retrieval.cache.store import (
    CacheDtype,
    EmbeddingCache,
    check_dtype,
    content_key,
    default_cache_dir,
)
from mmbright_core.retrieval.cache.verify import float_rows
from mmbright_core.retrieval.dual.embedder import Embedder, JointEmbedder, Role, bind
from mmbright_core.retrieval.dual.encoders import (
    BatchEncoder,
    CallEncoder,
    EncodeJob,
    document_bytes,
    passage_jobs,
)
from mmbright_core.retrieval.dual.fusion import Fusion, get_fusion
from mmbright_core.retrieval.explanation import (
    Attribution,
    FusionAttribution,
    Question,
    Unavailable,
)
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.index import (
    IndexKind,
    l2_normalise,
    rank_vectors,
    scale_settings,
)
from mmbright_core.task_table import PASSAGE_TASKS, TASK_TABLE, TASKS
from mmbright_core.types import Document, Query, TaskData


def image_key(image: Image.Image) -> str:
    """Return the sha256 of an image's mode, size and pixels (for images made in memory)."""
    header = f"{image.mode}:{image.width}x{image.height}:".encode()
    return content_key(header + image.tobytes())


def white_image() -> Image.Image:
    """Return the white placeholder image: RGB, 224x224, as every official CLIP retriever makes it.

    ``task2_multimodal.py`` ``retrieval_clip`` (a query without image), ``task3_image.py``
    ``retrieval_clip_it2i`` (``np.full((224, 224, 3), 255)``) and ``task4_pair.py``
    ``_safe_open_image(None)`` (``__NO_IMAGE__`` pairs and queries without image).
    """
    return Image.new("RGB", (224, 224), "white")


def asks_white(embedder: object) -> bool:
    """Whether ``embedder``'s recipe for its bound task puts the white image for a missing one.

    An embedder may say so with ``white_stand_in()`` (Jina-CLIP on Task 4,
    ``task4_pair.py`` ``retrieval_jina_clip_it2it``), whatever its fusion's own stand-in.
    """
    own = getattr(embedder, "white_stand_in", None)
    return bool(own()) if callable(own) else False


def _decode_query_image(source: ImageSource, domain: str, path: str) -> Image.Image:
    return decode_image(source.query_image_bytes(domain, path), path)


NO_IMAGE_MODES = ("white", "text")


class DualEncoderRetriever:
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
    embedder: Embedder
    cache_root: Path
    cache_dtype: CacheDtype
    batch_size: int
    fusion: Fusion
    image_policy: str
    no_image: str
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
        self.tasks = frozenset(TASKS) if images else PASSAGE_TASKS

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
        found = self.document_image_vectors(data.domain, paths, source)
        missing = self.missing_image_vector(texts.shape[1])
        # A domain without images gives an empty (0, 0) block: no rows, of the other's length.
        images = np.vstack([found if paths else found.reshape(0, missing.shape[1]), missing])
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

    @property
    def source(self) -> str:
        """What makes the vectors, for messages: the retriever (a plugin's spec) and model."""
        return f"the retriever {self.name!r} (embedder {self.embedder.name!r})"

    def _cache(self, modality: str, role: Role) -> EmbeddingCache:
        custom = getattr(self.embedder, "cache_settings", None)
        settings: Mapping[str, Any] = (
            custom(modality, role)
            if callable(custom)
            else {"embedder": self.embedder.settings(), "modality": modality, "role": role}
        )
        # An embedder whose answers are paid for writes after every request (api).
        shard = getattr(self.embedder, "cache_shard_size", None)
        sized = {} if shard is None else {"shard_size": int(shard)}
        return EmbeddingCache(
            self.cache_root, dict(settings), dtype=self.cache_dtype, source=self.source, **sized
        )

    def bind(self, task: int | None, domain: str | None) -> None:
        """Bind the embedder to a task and domain, if it takes them (``BoundEmbedder``).

        The Ray engine's workers call this before they build their encoders, so that their
        cache keys (the bound settings) are those of the local run.
        """
        bind(self.embedder, task, domain)

    @contextmanager
    def bound(self, data: TaskData) -> Iterator[None]:
        """Bind the embedder to ``data``'s task and domain while the block runs."""
        self.bind(data.task, data.domain)
        try:
            yield
        finally:
            self.bind(None, None)  # settings() then describe the run, not one domain

    def _text_batch(self, role: Role) -> Callable[[list[str]], np.ndarray]:
        return lambda chunk: self.embed_texts(chunk, role)

    def embed_texts(self, texts: Sequence[str], role: Role = "document") -> np.ndarray:
        """Embed one batch of texts, uncached: the embedder's raw float32 vectors."""
        texts = list(texts)
        return float_rows(self.embedder.encode_texts(texts, role), self.source, texts)

    def embed_images(self, images: Sequence[Image.Image], role: Role = "document") -> np.ndarray:
        """Embed one batch of images, uncached: the embedder's raw float32 vectors.

        ``images`` may be :class:`LazyImages`, passed on as they are: the embedder decodes
        them one at a time as it preprocesses them.
        """
        return float_rows(self.embedder.encode_images(images, role), self.source, images)

    def encode_texts(self, texts: Sequence[str], role: Role = "document") -> np.ndarray:
        """Return raw float32 text vectors for ``role``, cached by content."""
        keys = [content_key(t) for t in texts]
        cache = self._cache("text", role)
        batch = self._text_batch(role)
        return cache.encode(list(texts), keys, batch, self.batch_size, desc="texts")

    def encode_images(
        self, loaders: Sequence[ImageLoader], keys: Sequence[str], role: Role = "document"
    ) -> np.ndarray:
        """Return raw float32 image vectors, cached; loaders run only on cache misses."""

        def batch(chunk: list[ImageLoader]) -> np.ndarray:
            return self.embed_images(LazyImages(chunk), role)

        cache = self._cache("image", role)
        return cache.encode(loaders, keys, batch, self.batch_size, desc="images")

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Role
    ) -> np.ndarray:
        """Return raw joint vectors of (text, image) inputs (``joint`` rule), cached."""
        embedder = self.embedder
        assert isinstance(embedder, JointEmbedder)  # checked when built
        items = list(zip(texts, images, strict=True))
        keys = [
            content_key(f"{content_key(t)}:{'none' if im is None else image_key(im)}")
            for t, im in items
        ]

        def batch(chunk: list[tuple[str, Image.Image | None]]) -> np.ndarray:
            pairs = list(zip(*chunk, strict=True))
            out = embedder.encode_joint(list(pairs[0]), list(pairs[1]), role)
            return float_rows(out, self.source, chunk)

        cache = self._cache("joint", role)
        return cache.encode(items, keys, batch, self.batch_size, desc="joint")

    def document_image_vectors(
        self, domain: str, paths: Sequence[str], source: ImageSource
    ) -> np.ndarray:
        """Return the raw vectors of corpus images (by path), cached by their bytes.

        Raises:
            ImageDecodeError: The source has no bytes for a path.
        """
        raws = [document_bytes(source, domain, path) for path in paths]
        loaders = [partial(decode_image, raw, path) for raw, path in zip(raws, paths, strict=True)]
        return self.encode_images(loaders, [content_key(raw) for raw in raws])

    def white_vector(self) -> np.ndarray:
        """Return the raw vector of the white image, as a ``(1, dim)`` array (cached)."""
        return self.encode_images([white_image], [image_key(white_image())])

    def batch_encoder(self, role: str, prefix: str = "") -> BatchEncoder | None:
        """Return the document text or image encoder (image items are file bytes)."""
        if role == "text":
            batch = self._text_batch("document")
            return CallEncoder(
                self._cache("text", "document"),
                self.batch_size,
                self.text_tokens(),
                lambda items, _: batch(list(items)),
            )
        if role == "image":
            return CallEncoder(
                self._cache("image", "document"), self.batch_size, 0, self._embed_files
            )
        return None

    def text_tokens(self) -> int:
        """Return a bound on the text truncation for shipping texts (0: ship them whole)."""
        return 0

    def _embed_files(self, items: Sequence[bytes], names: Sequence[str]) -> np.ndarray:
        loaders = [partial(decode_image, raw, n) for raw, n in zip(items, names, strict=True)]
        return self.embed_images(LazyImages(loaders))

    def query_pictures(self, query: Query, source: ImageSource) -> QueryImages:
        """Return the images a query's text is fused with, and the query images left out.

        The image policy chooses among the images that decode; a query with none gets the
        white image (``no_image="white"``, or where the embedder's recipe for the bound task
        asks for it: :func:`~.dual_vectors.asks_white`) or none at all (``"text"``: its text
        alone). An embedder that builds its queries' images itself (``query_pictures``
        returning them, as the ``mteb`` task definition of the mteb backend does) is asked
        first.
        """
        own = getattr(self.embedder, "query_pictures", None)
        made = own(source, query) if own is not None else None
        if made is not None:
            return made
        found = query_images(source, query, self.image_policy)
        if not found.images and (self.no_image == "white" or asks_white(self.embedder)):
            found.images = [white_image()]
        return found

    def encode_queries(self, queries: tuple[Query, ...], source: ImageSource | None) -> np.ndarray:
        """Return L2-normalised query vectors: the rule's fusion of text and image vectors.

        Each query's image is chosen by the image policy (``all``: the mean of its images'
        raw vectors); without a source (Task 1) a query is its normalised text vector.
        """
        if source is None or not self.fusion.images:
            return l2_normalise(self.encode_texts([q.text for q in queries], "query"))
        if self.fusion.name == "joint":
            images = [self.query_pictures(q, source).images for q in queries]
            return self._joint_queries(queries, images)
        texts = self.encode_texts([q.text for q in queries], "query")
        counts, loaders, keys = [], [], []
        for query in queries:  # one query's images decoded at a time, for their keys
            found_loaders, found_keys = self.query_image_loaders(query, source)
            counts.append(len(found_keys))
            loaders += found_loaders
            keys += found_keys
        flat_vectors = self.encode_images(loaders, keys, "query")
        out, start = [], 0
        for text, count in zip(texts, counts, strict=True):
            if not count:
                out.append(l2_normalise(text))  # no image part: the text alone
                continue
            image = flat_vectors[start : start + count].mean(axis=0)
            start += count
            out.append(self.fusion.fuse(text, image))
        return np.stack(out)

    def query_image_loaders(
        self, query: Query, source: ImageSource
    ) -> tuple[list[ImageLoader], list[str]]:
        """Return a loader and a pixel key for each image a query's text is fused with.

        The pictures are decoded here for their keys and then dropped; a loader decodes its
        picture again only when the cache lacks its vector, so a domain's query images are
        never all in memory at once (docs/safety.md, "Bounded memory").
        """
        found = self.query_pictures(query, source)
        keys = [image_key(image) for image in found.images]
        decodable = [ref.path for ref in query.images if ref.path not in found.problems]
        if not decodable:  # the white stand-in, or nothing
            return [white_image for _ in keys], keys
        if self.image_policy == "concat":
            return [partial(self._concat_picture, query, source)], keys
        # first and all: the images are the query's decodable ones, in order.
        domain = query.domain
        loaders: list[ImageLoader] = [
            partial(_decode_query_image, source, domain, path) for path in decodable[: len(keys)]
        ]
        return loaders, keys

    def _concat_picture(self, query: Query, source: ImageSource) -> Image.Image:
        return self.query_pictures(query, source).images[0]

    def _joint_queries(
        self, queries: tuple[Query, ...], images: list[list[Image.Image]]
    ) -> np.ndarray:
        # Several images (policy ``all``): the mean of the joint vectors of each.
        slots: list[list[Image.Image | None]] = [list(found) or [None] for found in images]
        texts = [q.text for q, slot in zip(queries, slots, strict=True) for _ in slot]
        flat = [image for slot in slots for image in slot]
        vectors = self.encode_joint(texts, flat, "query")
        out, start = [], 0
        for found in images:
            count = max(len(found), 1)
            out.append(l2_normalise(vectors[start : start + count].mean(axis=0)))
            start += count
        return np.stack(out)


def explain_fusion(retriever: DualEncoderRetriever, question: Question) -> dict[str, Attribution]:
    """Split each document's fused score into the query text's and the query image's parts.

    The linear rules (:mod:`~mmbright_core.retrieval.dual.fusion`) make the query ``a*t + b*i``,
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


@dataclass(frozen=True)
class DualOptions:
    """How a dual encoder reads query images and caches and indexes vectors.

    Positional in this order (a factory's options, as it names them), so a factory builds
    it in one line.

    Attributes:
        image_policy: Which query images are read (``first``: the released ``images[0]``).
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE``).
        index: Vector index kind (``flat`` exact; ``hnsw`` or ``ivf`` approximate).
        cache_dtype: How cached vectors are stored: ``float32`` or ``float16``.
        batch_size: Items per encoder call.
        no_image: What a query without a decodable image gets (None: the fusion's default).
    """

    image_policy: str = "first"
    cache_dir: str | None = None
    index: IndexKind = "flat"
    cache_dtype: str = "float32"
    batch_size: int = 32
    no_image: str | None = None

    def keywords(self) -> dict[str, Any]:
        """Return the options as :class:`DualEncoderRetriever`'s keywords."""
        return asdict(self)

    def build(self, embedder: Embedder, name: str) -> DualEncoderRetriever:
        """Return the dual encoder that runs ``embedder`` as the retriever ``name``."""
        return DualEncoderRetriever(embedder, name=name, **self.keywords())

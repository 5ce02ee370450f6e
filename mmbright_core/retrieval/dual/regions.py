"""Where in an image a score came from (occlusion over a grid), and where an image's weight lies.

Occlusion is a capability of the retrievers that encode images through the dual encoder API
(:class:`EncodesImages`), as attribution is of those with ``explain_scores``; the records it
answers (:class:`~mmbright_core.retrieval.explanation.RegionAttribution`, one
:class:`~mmbright_core.retrieval.explanation.ImageRegions` per image) and its options sit with
the other explanations in :mod:`~mmbright_core.retrieval.explanation`.

For a query and a retrieved item, the query image (or, in tasks 3 and 4, the item's own image)
is cut into ``grid x grid`` cells; each cell in turn is filled (the image's mean colour by
default), every filled copy goes through the retriever's image encoder, the query (or the
item) is formed again exactly as the run forms it (the same fusion of text and image, the same
image policy) and scored against the item as the run scores it. A cell's value is

    ``original - masked``: the item's score with the image whole, minus its score with the
    cell filled. Positive: the region raised the item's score; negative: it lowered it.

With a second item (``versus``: typically a relevant item ranked below a wrong hit ``doc``),
the value is the change in the margin ``score(doc) - score(versus)``: positive where the
region pushed ``doc`` above ``versus``. The overlay draws positive cells red and negative
ones blue (:func:`~mmbright_core.present.region_overlay.overlay`).

Cost: ``grid**2 + 1`` forward passes of the image encoder per image occluded (the masked
copies, in batches of the retriever's batch size, and the image whole, usually a cache hit),
plus cache reads for the text and the items. Masked copies are keyed by their pixels in the
retriever's embedding cache, and each result is stored under ``<cache>/regions/`` (an entry of
the answer cache, :mod:`~mmbright_core.retrieval.cache.answers`, with its checksum) keyed by
the model's settings, the query, the images' pixels, the items' content and the options,
so reopening a result costs one file read.

What it measures is how the score responds to removing one region, all else kept: not the
model's reasoning, and the filled copies are images the model never saw in training, so a
cell's value mixes what the region holds with how the model reacts to a flat patch
(docs/dashboard.md, Where in the image).

Any retriever that encodes images through the package's dual encoder API
(:class:`EncodesImages`: ``clip``, the ``hf`` CLIP and SigLIP models, the hub-code models,
MTEB image models, ``Embedder`` plugins) is explained, whatever its fusion (``joint`` models
encode each masked image with the query text); others are answered :class:`Unavailable`.

Where an image's weight lies, across queries (:func:`query_weights`): the centre of the
query image or its edges. For each query with an image, the occlusion grid of the run's top
hit against its best-ranked relevant item (the hit's score alone when the top hit is relevant
or no relevant item is ranked) is split into the **centre** (the cells whose
centre lies in the middle third of the image both ways, what
:func:`~mmbright_core.present.region_overlay.region_name` calls ``centre``) and the **edges**
(every other cell: borders and corners). A query's share of each is its part of the sum of the
absolute cell values (over all its images, with the ``all`` policy). The edges hold most cells
(40 of 49 in a 7 x 7 grid), so a query is grouped by weight per cell: ``edges`` when its edge
share exceeds the edges' share of the cells, ``centre`` otherwise, ``no weight`` when no cell
changes the score.

Where the OCR engine is installed (the ``ocr`` extra), the **text** cells are those the boxes of
the text it reads in the image (``OcrReader.text_boxes`` of
:mod:`~mmbright_core.retrieval.backends.ocr_reader`, handed in as :data:`TextBoxes`) cover at
least :data:`TEXT_COVER` of; a query whose text cells weigh more per cell than the others is
grouped ``text`` before it is grouped by centre and edges. Its text share is NaN without the
engine, and 0 for an image with no text cell.

Grouped beside the comparison's per-query deltas, it says whether the queries a multimodal run
lost concentrate on images whose weight lies on the edges (a screenshot's chrome, a diagram's
labels) or in their text rather than at their centre. Each grid is ``grid**2 + 1`` forward
passes, and each image one OCR pass, all cached.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
from PIL import Image, ImageFilter, ImageStat

from mmbright_core.data.image_batches import ImageLoader
from mmbright_core.data.images import ImageSource, QueryImages, decode_image
from mmbright_core.errors import InputError
from mmbright_core.retrieval.base import Retriever, check_task
from mmbright_core.retrieval.cache.answers import AnswerCache
from mmbright_core.retrieval.cache.store import content_key, default_cache_dir, settings_key
from mmbright_core.retrieval.dual.encoder import image_key
from mmbright_core.retrieval.dual.encoders import document_bytes
from mmbright_core.retrieval.dual.fusion import Fusion
from mmbright_core.retrieval.explanation import (
    GRID,
    NO_RETRIEVER,
    Box,
    ImageRegions,
    Progress,
    RegionAttribution,
    Unavailable,
    cell_boxes,
    check_options,
    explained_query,
)
from mmbright_core.retrieval.search.index import l2_normalise
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Query, TaskData

#: The results' folder under the package's cache root.
FOLDER = "regions"
FORMAT = "mmbright-regions/1"


@runtime_checkable
class EncodesImages(Protocol):
    """A retriever that encodes images and forms its queries through the dual encoder API.

    :class:`~mmbright_core.retrieval.dual.encoder.DualEncoderRetriever` and every wrapper that
    forwards to one (plugins, rewritten queries) offer it.
    """

    name: str
    fusion: Fusion
    score_scale: float
    batch_size: int

    def bound(self, data: TaskData) -> AbstractContextManager[None]:
        """Bind the model to ``data``'s task and domain while the block runs."""
        ...

    def encode_texts(self, texts: Sequence[str], role: Any = "document") -> np.ndarray:
        """Raw text vectors, cached."""
        ...

    def encode_images(
        self, loaders: Sequence[ImageLoader], keys: Sequence[str], role: Any = "document"
    ) -> np.ndarray:
        """Raw image vectors, cached by ``keys``; loaders run on cache misses only."""
        ...

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Any
    ) -> np.ndarray:
        """Raw joint vectors of (text, image) inputs (``joint`` fusion), cached."""
        ...

    def query_pictures(self, query: Query, source: ImageSource) -> QueryImages:
        """The images a query's text is fused with, under the image policy."""
        ...

    def corpus_vectors(self, data: TaskData, source: ImageSource | None) -> np.ndarray:
        """The L2-normalised vectors of ``data.corpus``, as the run ranks them."""
        ...


def masked_images(picture: Image.Image, grid: int, fill: str) -> list[ImageLoader]:
    """One loader per cell, row by row, making ``picture`` with that cell filled.

    ``mean``: the image's mean colour (per band, rounded); ``grey``: mid grey (128 in
    every band); ``blur``: the cell taken from the image blurred with a Gaussian of radius
    half a cell. Each copy is made when its loader is called, so the copies are never all
    in memory.
    """
    boxes = cell_boxes(picture.width, picture.height, grid)
    if fill == "blur":
        radius = max(picture.width, picture.height) / grid / 2
        blurred = picture.filter(ImageFilter.GaussianBlur(radius))
        return [partial(_pasted, picture, box, blurred.crop(box)) for box in boxes]
    bands = len(picture.getbands())
    if fill == "mean":
        colour = tuple(round(v) for v in ImageStat.Stat(picture).mean)
    else:
        colour = (128,) * bands
    return [partial(_filled, picture, box, colour) for box in boxes]


def _filled(picture: Image.Image, box: Box, colour: tuple[int, ...]) -> Image.Image:
    out = picture.copy()
    out.paste(colour if len(colour) > 1 else colour[0], box)
    return out


def _pasted(picture: Image.Image, box: Box, patch: Image.Image) -> Image.Image:
    out = picture.copy()
    out.paste(patch, box)
    return out


def explain_regions(
    retriever: Retriever | Unavailable | None,
    data: TaskData,
    source: ImageSource | None,
    query_id: str,
    doc_id: str,
    *,
    versus: str | None = None,
    side: str = "query",
    grid: int = GRID,
    fill: str = "mean",
    cache_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> RegionAttribution | Unavailable:
    """Occlude a grid of cells of the query image (or the item's) and score each copy.

    Args:
        retriever: The retriever that made the run (as
            :func:`~mmbright_core.analysis.attribution.retriever_from_config` rebuilds it);
            :class:`Unavailable` or None is answered as it is.
        data: The task's data for the query's domain.
        source: Where the images come from.
        query_id: The query.
        doc_id: The item scored (the wrong hit, when ``versus`` is given).
        versus: A second item: the values are then changes of ``score(doc) -
            score(versus)``.
        side: ``query`` to occlude the query image, ``document`` to occlude ``doc_id``'s
            own image (tasks 3 and 4; ``versus``, if given, keeps its image whole).
        grid: Cells per side (``grid**2 + 1`` forward passes per image).
        fill: ``mean`` (the image's mean colour), ``grey`` or ``blur``.
        cache_dir: The cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        progress: Called with ``(done, total)`` passes after each batch; an exception it
            raises stops the work and propagates (how a caller cancels).

    Returns:
        The grid, or :class:`Unavailable` saying why there is none: no retriever, one that
        does not encode images, a query (or item) without an image of its own, an item not
        in the corpus, an image smaller than the grid.

    Raises:
        InputError: An invalid grid, fill or side, a query not in ``data``, a task the
            retriever cannot run, a task with images and no source.
    """
    check_options(grid, fill, side)
    if retriever is None or isinstance(retriever, Unavailable):
        return retriever or NO_RETRIEVER
    query = explained_query(data, query_id)
    check_task(retriever, data.task)
    if not isinstance(retriever, EncodesImages) or not retriever.fusion.images:
        return Unavailable(
            f"retriever {retriever.name!r} does not encode images (regions of an image are "
            "explained for dual encoders that read them: clip, hf, hub-code, MTEB image "
            "models, Embedder plugins)"
        )
    if source is None and not TASK_TABLE[data.task].text_only:
        raise InputError(
            f"task {data.task} needs image bytes", found="no source", hint="Pass the source."
        )
    rewritten = getattr(retriever, "rewritten", None)
    if callable(rewritten):  # a run on rewritten queries: the text the run scored
        data = rewritten(dataclasses.replace(data, queries=(query,)))
        query = data.queries[0]
    items = _items(data, [doc_id] if versus is None else [doc_id, versus])
    if isinstance(items, Unavailable):
        return items
    with retriever.bound(data):
        return _Occlusion(retriever, data, source, query, items, side, grid, fill).run(
            default_cache_dir(cache_dir), progress
        )


def _items(data: TaskData, doc_ids: Sequence[str]) -> list[Document] | Unavailable:
    by_id = {d.doc_id: d for d in data.corpus if d.doc_id in set(doc_ids)}
    missing = [d for d in doc_ids if d not in by_id]
    if missing:
        return Unavailable(
            f"{missing[0]!r} is not in the corpus of task {data.task}, domain {data.domain}"
        )
    return [by_id[d] for d in doc_ids]


@dataclass
class _Occlusion:
    """One occlusion: what is occluded, how the query and items are formed, and the grid."""

    retriever: EncodesImages
    data: TaskData
    source: ImageSource | None
    query: Query
    items: list[Document]
    side: str
    grid: int
    fill: str

    def run(self, cache_root: Path, progress: Progress | None) -> RegionAttribution | Unavailable:
        pictures = self._pictures()
        if isinstance(pictures, Unavailable):
            return pictures
        small = [(n, p) for n, p in pictures if p.width < self.grid or p.height < self.grid]
        if small:
            name, picture = small[0]
            return Unavailable(
                f"image {name!r} is {picture.width}x{picture.height} pixels, smaller than a "
                f"{self.grid}x{self.grid} grid: choose a smaller grid"
            )
        settings = settings_key(self.retriever.settings())  # type: ignore[attr-defined]
        key = self._key(settings, pictures)
        results = AnswerCache(cache_root, FOLDER, sort_keys=True, checked="result")
        found = results.get(key, partial(_result, key))
        if found is not None:
            images = tuple(
                dataclasses.replace(i, picture=p)
                for i, (_, p) in zip(found.images, pictures, strict=True)
            )
            return dataclasses.replace(found, images=images, cached=True)
        result = self._compute(pictures, settings, progress)
        text = json.dumps(result.to_dict(), sort_keys=True)
        results.put(key, {"format": FORMAT, "key": key, "result": text})
        return result

    # --- what is occluded ---------------------------------------------------------------------

    def _pictures(self) -> list[tuple[str, Image.Image]] | Unavailable:
        """(name, image) of each image occluded, or why there is none."""
        if self.side == "document":
            doc = self.items[0]
            if TASK_TABLE[self.data.task].corpus == "passages" or doc.image is None:
                return Unavailable(
                    f"{doc.doc_id!r} has no image of its own (task {self.data.task}'s items "
                    f"are {TASK_TABLE[self.data.task].corpus}): occlude the query image instead"
                )
            assert self.source is not None  # checked: tasks 3 and 4 need one
            raw = document_bytes(self.source, self.data.domain, doc.image.path)
            return [(doc.image.path, decode_image(raw, doc.image.path))]
        if TASK_TABLE[self.data.task].text_only:
            return Unavailable(f"task {self.data.task} queries are text alone: no image")
        assert self.source is not None
        found = self.retriever.query_pictures(self.query, self.source)
        decodable = [ref.path for ref in self.query.images if ref.path not in found.problems]
        if not self.query.images:
            return Unavailable(f"query {self.query.query_id!r} has no image: nothing to occlude")
        if not decodable:
            return Unavailable(
                f"none of the {len(self.query.images)} image(s) of query "
                f"{self.query.query_id!r} decodes: nothing to occlude"
            )
        if len(found.images) == 1 and len(decodable) > 1:  # concat: one picture of them all
            return [(" + ".join(decodable), found.images[0])]
        return list(zip(decodable, found.images, strict=False))

    def _key(self, settings: str, pictures: Sequence[tuple[str, Image.Image]]) -> str:
        items = []
        for doc in self.items:
            image = None
            if doc.image is not None and self.source is not None:
                raw = self.source.document_image_bytes(self.data.domain, doc.image.path)
                image = None if raw is None else content_key(raw)
            items.append([doc.doc_id, content_key(doc.text), image])
        return settings_key(
            {
                "format": FORMAT,
                "settings": settings,
                "task": self.data.task,
                "domain": self.data.domain,
                "query": [self.query.query_id, content_key(self.query.text)],
                "pictures": [image_key(p) for _, p in pictures],
                "items": items,
                "side": self.side,
                "grid": self.grid,
                "fill": self.fill,
            }
        )

    # --- the scores ---------------------------------------------------------------------------

    def _compute(
        self,
        pictures: list[tuple[str, Image.Image]],
        settings: str,
        progress: Progress | None,
    ) -> RegionAttribution:
        whole = self._encode([partial(_same, p) for _, p in pictures], self.side)
        if self.side == "query":
            query_images = whole
        else:
            found = self.retriever.query_pictures(self.query, self.source)  # type: ignore[arg-type]
            shown = [] if TASK_TABLE[self.data.task].text_only else found.images
            query_images = self._encode([partial(_same, p) for p in shown], "query")
        means = query_images.mean(axis=0, keepdims=True) if len(query_images) else None
        query = self._fused(means)
        items = self._item_vectors()
        scores = self._scores(query, items[:1], items[1:])
        cells = self.grid * self.grid
        total = (cells + 1) * len(pictures)
        done = len(pictures)
        if progress is not None:
            progress(done, total)
        images = []
        for index, (name, picture) in enumerate(pictures):
            changed = []
            for chunk in _chunks(masked_images(picture, self.grid, self.fill), self._chunk()):
                vectors = self._encode(chunk, self.side)
                if self.side == "query":
                    # The image part is the mean over the query's images, this one masked.
                    rest = query_images.sum(axis=0) - query_images[index]
                    masked = self._fused((rest[None, :] + vectors) / len(query_images))
                    changed.append(self._target(self._scores(masked, items[:1], items[1:])))
                else:
                    masked_items = self._masked_items(vectors)
                    changed.append(self._target(self._scores(query, masked_items, items[1:])))
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
            values = self._target(scores)[0] - np.concatenate(changed)
            rows = [values[row * self.grid : (row + 1) * self.grid] for row in range(self.grid)]
            grid = tuple(tuple(float(v) for v in row) for row in rows)
            images.append(ImageRegions(name, picture.width, picture.height, grid, picture))
        return RegionAttribution(
            query_id=self.query.query_id,
            doc_id=self.items[0].doc_id,
            versus=self.items[1].doc_id if len(self.items) > 1 else None,
            side=self.side,
            grid=self.grid,
            fill=self.fill,
            score=float(scores[0, 0]),
            versus_score=float(scores[0, 1]) if len(self.items) > 1 else None,
            images=tuple(images),
            retriever=str(self.retriever.name),
            model=str(self.retriever.label()),  # type: ignore[attr-defined]
            settings_key=settings,
            passes=total,
        )

    def _chunk(self) -> int:
        return max(1, int(self.retriever.batch_size))

    def _encode(self, images: Sequence[ImageLoader], side: str) -> np.ndarray:
        """Raw vectors of images made in memory (``joint``: encoded with the side's text)."""
        retriever = self.retriever
        role = "query" if side == "query" else "document"
        if not images:
            return np.zeros((0, 0), dtype=np.float32)
        # Task 3's items are images alone, encoded as images even by a joint model.
        images_alone = side == "document" and TASK_TABLE[self.data.task].corpus == "images"
        if retriever.fusion.name == "joint" and not images_alone:
            text = self.query.text if side == "query" else self.items[0].text
            made = [load() for load in images]
            return np.asarray(retriever.encode_joint([text] * len(made), made, role))
        keys = [image_key(load()) for load in images]
        return np.asarray(retriever.encode_images(images, keys, role))

    def _fused(self, means: np.ndarray | None) -> np.ndarray:
        """Fused query rows from the mean raw image vector of each (None: no image)."""
        retriever = self.retriever
        if retriever.fusion.name == "joint":
            if means is None:  # the model encodes the text alone
                means = retriever.encode_joint([self.query.text], [None], "query")
            return l2_normalise(means)
        text = retriever.encode_texts([self.query.text], "query")
        if means is None:
            return l2_normalise(text)
        return retriever.fusion.fuse(np.repeat(text, len(means), axis=0), means)

    def _item_vectors(self) -> np.ndarray:
        """The items' normalised vectors, as the run ranks them (float64 rows)."""
        corpus = dataclasses.replace(self.data, corpus=tuple(self.items))
        return l2_normalise(self.retriever.corpus_vectors(corpus, self.source)).astype(np.float64)

    def _masked_items(self, vectors: np.ndarray) -> np.ndarray:
        """The item's normalised vector with its image masked, one row per mask."""
        fusion = self.retriever.fusion
        if TASK_TABLE[self.data.task].corpus == "images" or fusion.name == "joint":
            rows = vectors
        else:  # a Task 4 pair: its passage's text fused with its image
            text = self.retriever.encode_texts([self.items[0].text])
            rows = fusion.fuse(np.repeat(text, len(vectors), axis=0), vectors)
        return l2_normalise(l2_normalise(rows)).astype(np.float64)

    def _scores(self, queries: np.ndarray, docs: np.ndarray, versus: np.ndarray) -> np.ndarray:
        """(rows, 1 or 2): each row's score of the item, and of ``versus`` if given."""
        q = np.asarray(queries, dtype=np.float64)
        scale = float(self.retriever.score_scale)
        own = scale * np.sum(q * docs, axis=1)
        if not len(versus):
            return own[:, None]
        other = np.broadcast_to(scale * (q @ versus[0]), own.shape)
        return np.stack([own, other], axis=1)

    @staticmethod
    def _target(scores: np.ndarray) -> np.ndarray:
        """The score per row, or the margin over ``versus``."""
        return scores[:, 0] - scores[:, 1] if scores.shape[1] > 1 else scores[:, 0]


def _same(picture: Image.Image) -> Image.Image:
    return picture


def _chunks(items: Sequence[ImageLoader], size: int) -> Iterator[list[ImageLoader]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _result(key: str, stored: Any) -> RegionAttribution | None:
    """The result of a stored entry whose checksum matched: None when of another format or key.

    A result that does not read back (:meth:`RegionAttribution.from_dict` refuses it) counts
    as damaged: it is reported, deleted and computed again.
    """
    if stored.get("format") != FORMAT or stored.get("key") != key:
        return None
    return RegionAttribution.from_dict(json.loads(stored["result"]))


# --- where an image's weight lies, across queries ---------------------------------------------

CENTRE, EDGES, TEXT, NO_WEIGHT = "centre", "edges", "text", "no weight"
#: The part of a cell the text boxes must cover for it to count as text.
TEXT_COVER = 0.1
#: The per-query table's columns (:func:`query_weights`): ``text_area`` is the part of the
#: cells that are text.
COLUMNS = (
    "domain",
    "query_id",
    "doc_id",
    "versus",
    "centre_share",
    "edge_share",
    "text_share",
    "text_area",
    "where",
)
#: A text box ``(left, top, right, bottom)`` in an image's pixels.
TextBox = tuple[float, float, float, float]
#: What finds the text boxes of a picture
#: (:meth:`~mmbright_core.retrieval.backends.ocr_reader.OcrReader.text_boxes`).
TextBoxes = Callable[[Image.Image], Sequence[TextBox]]


def centre_cells(grid: int) -> np.ndarray:
    """A ``grid x grid`` mask of the centre cells: their centres in the middle third both ways."""
    centres = (np.arange(grid) + 0.5) / grid
    middle = (centres >= 1 / 3) & (centres <= 2 / 3)
    return np.outer(middle, middle)


def shares(images: Sequence[ImageRegions]) -> tuple[float, float]:
    """(centre share, edge share) of the absolute cell values summed over ``images``.

    Both are NaN when every cell is zero.
    """
    centre = edges = 0.0
    for image in images:
        values = np.abs(np.asarray(image.values, dtype=np.float64))
        mask = centre_cells(image.grid)
        centre += float(values[mask].sum())
        edges += float(values[~mask].sum())
    total = centre + edges
    if total == 0:
        return float("nan"), float("nan")
    return centre / total, edges / total


def text_cells(image: ImageRegions, boxes: Sequence[TextBox]) -> np.ndarray:
    """A mask of ``image``'s cells that ``boxes`` cover at least :data:`TEXT_COVER` of."""
    covered = np.zeros((image.height, image.width), dtype=bool)
    for left, top, right, bottom in boxes:
        rows = slice(max(int(np.floor(top)), 0), max(int(np.ceil(bottom)), 0))
        columns = slice(max(int(np.floor(left)), 0), max(int(np.ceil(right)), 0))
        covered[rows, columns] = True
    return np.array(
        [[covered[t:b, x:r].mean() >= TEXT_COVER for x, t, r, b in row] for row in image.boxes()]
    )


def text_share(
    images: Sequence[ImageRegions], boxes: Sequence[Sequence[TextBox]]
) -> tuple[float, float]:
    """(text share, text area): the text cells' part of the absolute values, and of the cells.

    ``boxes`` holds each image's text boxes. The share is NaN when every cell is zero, and 0
    when no cell is text.
    """
    text = total = 0.0
    cells = texts = 0
    for image, found in zip(images, boxes, strict=True):
        values = np.abs(np.asarray(image.values, dtype=np.float64))
        mask = text_cells(image, found)
        text += float(values[mask].sum())
        total += float(values.sum())
        texts += int(mask.sum())
        cells += mask.size
    return (float("nan") if total == 0 else text / total), texts / cells


def where(edge_share: float, grid: int, text: float = float("nan"), text_area: float = 0.0) -> str:
    """The query's group by weight per cell: ``text``, ``edges`` or ``centre``.

    ``text`` when the text cells weigh more per cell than the others (``text`` share above
    ``text_area``, the part of the cells that are text), else ``edges`` when the edges weigh
    more per cell than the centre, ``centre`` otherwise.
    """
    if np.isnan(edge_share):
        return NO_WEIGHT
    if 0 < text_area < 1 and text > text_area:
        return TEXT
    area = 1 - float(centre_cells(grid).mean())
    return EDGES if edge_share > area else CENTRE


@dataclass(frozen=True)
class Case:
    """One query to weigh: its top hit and the relevant item it is compared with (or None)."""

    domain: str
    query_id: str
    doc_id: str
    versus: str | None


def case(domain: str, query_id: str, ranked: Sequence[str], qrels: Mapping[str, int]) -> Case:
    """The top hit of ``ranked`` against its best-ranked relevant item.

    ``versus`` is None when the top hit is itself relevant or no relevant item is ranked.
    """
    relevant = next((d for d in ranked if qrels.get(d, 0) > 0), None)
    return Case(domain, query_id, ranked[0], None if relevant == ranked[0] else relevant)


def query_weights(
    retriever: Retriever | Unavailable,
    source: ImageSource,
    cases: Sequence[Case],
    data: Callable[[str], TaskData],
    *,
    grid: int = GRID,
    cache_dir: str | None = None,
    progress: Progress | None = None,
    text_boxes: TextBoxes | None = None,
) -> tuple[pd.DataFrame, list[tuple[Case, str]]]:
    """Each case's centre, edge and text shares, and the cases that have no grid, with why.

    Args:
        retriever: The compared run's retriever.
        source: Where the images come from.
        cases: The queries to weigh (:func:`case`).
        data: domain -> the task's data for that domain.
        grid: Cells per side.
        cache_dir: The cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        progress: Called with ``(queries done, queries in all)`` after each query; raising
            from it stops the work.
        text_boxes: Finds the text in an occluded picture (None: no text shares, NaN).

    Returns:
        ``(table, skipped)``: one row per case with a grid (:data:`COLUMNS`), and the
        others with the reason they have none.
    """
    rows, skipped = [], []
    for done, one in enumerate(cases, 1):
        found = explain_regions(
            retriever,
            data(one.domain),
            source,
            one.query_id,
            one.doc_id,
            versus=one.versus,
            grid=grid,
            cache_dir=cache_dir,
        )
        if isinstance(found, RegionAttribution):
            centre, edges = shares(found.images)
            text, area = float("nan"), 0.0
            if text_boxes is not None:
                boxes = [text_boxes(_picture(image)) for image in found.images]
                text, area = text_share(found.images, boxes)
            row = (one.domain, one.query_id, one.doc_id, one.versus, centre, edges, text, area)
            rows.append((*row, where(edges, grid, text, area)))
        else:
            skipped.append((one, found.reason))
        if progress is not None:
            progress(done, len(cases))
    return pd.DataFrame(rows, columns=list(COLUMNS)), skipped


def _picture(image: ImageRegions) -> Image.Image:
    if image.picture is None:  # explain_regions always gives the picture it occluded
        raise ValueError(f"the grid of {image.image!r} comes without its picture")
    return image.picture


def weight_groups(weights: pd.DataFrame, per_query: pd.DataFrame) -> pd.DataFrame:
    """Per group of :func:`where`: queries, mean delta (B - A), losses, mean edge and text shares.

    ``per_query`` is the comparison's paired rows (``domain``, ``query_id``, ``delta``).
    """
    merged = weights.merge(
        per_query[["domain", "query_id", "delta"]], on=["domain", "query_id"], how="inner"
    )
    grouped = merged.assign(loss=merged["delta"] < 0).groupby("where", sort=False)
    out = grouped.agg(
        queries=("delta", "size"),
        delta=("delta", "mean"),
        losses=("loss", "sum"),
        edge_share=("edge_share", "mean"),
        text_share=("text_share", "mean"),
    )
    order = [g for g in (TEXT, EDGES, CENTRE, NO_WEIGHT) if g in out.index]
    return out.loc[order].reset_index().rename(columns={"where": "group"})

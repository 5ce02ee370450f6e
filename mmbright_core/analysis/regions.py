"""Where in an image a score came from: occlusion over a grid of cells.

For a query and a retrieved item, the query image (or, in tasks 3 and 4, the item's own image)
is cut into ``grid x grid`` cells; each cell in turn is filled (the image's mean colour by
default), every filled copy goes through the retriever's image encoder, the query (or the
item) is formed again exactly as the run forms it (the same fusion of text and image, the same
image policy) and scored against the item as the run scores it. A cell's value is

    ``original - masked``: the item's score with the image whole, minus its score with the
    cell filled. Positive: the region raised the item's score; negative: it lowered it.

With a second item (``versus``: typically a relevant item ranked below a wrong hit ``doc``),
the value is the change in the margin ``score(doc) - score(versus)``: positive where the
region pushed ``doc`` above ``versus``. The overlay (:func:`overlay`) draws positive cells
red and negative ones blue.

Cost: ``grid**2 + 1`` forward passes of the image encoder per image occluded (the masked
copies, in batches of the retriever's batch size, and the image whole, usually a cache hit),
plus cache reads for the text and the items. Masked copies are keyed by their pixels in the
retriever's embedding cache, and each result is stored under ``<cache>/regions/`` keyed by
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
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
from PIL import Image, ImageFilter, ImageStat

from mmbright_core.data.image_batches import ImageLoader
from mmbright_core.data.images import ImageSource, QueryImages, decode_image
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.retrieval.base import Retriever, check_task
from mmbright_core.retrieval.cache.store import content_key, default_cache_dir, settings_key
from mmbright_core.retrieval.cache.verify import bytes_match, bytes_record, remove, report_damaged
from mmbright_core.retrieval.dual.encoder import image_key
from mmbright_core.retrieval.dual.encoders import document_bytes
from mmbright_core.retrieval.dual.fusion import Fusion
from mmbright_core.retrieval.explanation import NO_RETRIEVER, Unavailable, explained_query
from mmbright_core.retrieval.search.index import l2_normalise
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Query, TaskData

Fill = Literal["mean", "grey", "blur"]
#: How an occluded cell is filled: the image's mean colour, mid grey, or the image blurred.
FILLS: tuple[str, ...] = ("mean", "grey", "blur")
Side = Literal["query", "document"]
#: Which image is occluded: the query's, or the item's own (tasks 3 and 4).
SIDES: tuple[str, ...] = ("query", "document")
#: The default grid: 7 x 7 cells, 50 forward passes per image.
GRID = 7
#: The largest grid accepted (1,025 passes per image).
MAX_GRID = 32
#: The results' folder under the package's cache root.
FOLDER = "regions"
FORMAT = "mmbright-regions/1"
#: Progress callback: ``(passes done, passes in all)``; raising from it cancels the work.
Progress = Callable[[int, int], None]
Box = tuple[int, int, int, int]


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


@dataclass(frozen=True)
class ImageRegions:
    """One image's grid of values.

    Attributes:
        image: The image occluded: a query image's path (``concat``: the paths joined by
            ``" + "``), or the item's image path.
        width: The image's width in pixels, as encoded.
        height: Its height.
        values: One row per grid row, top to bottom, each left to right: the score (or
            margin) with the image whole minus with the cell filled.
        picture: The image as encoded (not stored in the cache; read again on reopening).
    """

    image: str
    width: int
    height: int
    values: tuple[tuple[float, ...], ...]
    picture: Image.Image | None = field(default=None, compare=False, repr=False)

    @property
    def grid(self) -> int:
        """Cells per side."""
        return len(self.values)

    def boxes(self) -> tuple[tuple[Box, ...], ...]:
        """Each cell's pixel box ``(left, top, right, bottom)``, laid out as ``values``."""
        flat = cell_boxes(self.width, self.height, self.grid)
        return tuple(flat[row * self.grid : (row + 1) * self.grid] for row in range(self.grid))


@dataclass(frozen=True)
class RegionAttribution:
    """Occlusion over a grid: which regions of an image raised or lowered an item's score.

    Attributes:
        query_id: The query.
        doc_id: The item scored (the wrong hit, when ``versus`` is given).
        versus: The item it is compared with (a relevant one ranked below), or None.
        side: ``query`` (the query image occluded) or ``document`` (the item's image).
        grid: Cells per side.
        fill: How a cell was filled (``mean``, ``grey``, ``blur``).
        score: ``doc_id``'s score with the image whole, recomputed here as the run computed
            it (from float32 vectors: it equals the run's ``scores.json`` to float32 precision).
        versus_score: ``versus``'s score, or None.
        images: One grid per image occluded (``all`` policy: each of the query's images
            in turn, the others whole).
        retriever: The retriever's registered name.
        model: Its label (the output folder's model part).
        settings_key: The sha256 of the retriever's settings: the model's identity.
        passes: Forward passes of the image encoder the result took (``grid**2 + 1`` per
            image), counted whether or not the embedding cache answered some.
        cached: Whether this result was read from the results cache.
    """

    kind: ClassVar[str] = "regions"
    query_id: str
    doc_id: str
    versus: str | None
    side: str
    grid: int
    fill: str
    score: float
    versus_score: float | None
    images: tuple[ImageRegions, ...]
    retriever: str
    model: str
    settings_key: str
    passes: int
    cached: bool = field(default=False, compare=False)

    @property
    def target(self) -> float:
        """What each cell's value is a change of: the score, or the margin over ``versus``."""
        return self.score - (self.versus_score or 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (pictures left out)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("images", "cached")
        }
        out["images"] = [
            {"image": i.image, "width": i.width, "height": i.height, "values": i.values}
            for i in self.images
        ]
        return {"kind": self.kind, **out}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RegionAttribution:
        """Read :meth:`to_dict`'s form back.

        Raises:
            KeyError, TypeError, ValueError: Not that form.
        """
        images = tuple(
            ImageRegions(
                str(i["image"]),
                int(i["width"]),
                int(i["height"]),
                tuple(tuple(float(v) for v in row) for row in i["values"]),
            )
            for i in data["images"]
        )
        names = [f.name for f in dataclasses.fields(cls) if f.name not in ("images", "cached")]
        return cls(**{name: data[name] for name in names}, images=images)


def cell_boxes(width: int, height: int, grid: int) -> tuple[Box, ...]:
    """The ``grid x grid`` cells of a ``width x height`` image, row by row.

    Cell edges are at ``width * i // grid`` (and likewise down), so the cells tile the
    image and differ in size by at most one pixel.
    """
    xs = [width * i // grid for i in range(grid + 1)]
    ys = [height * i // grid for i in range(grid + 1)]
    return tuple(
        (xs[col], ys[row], xs[col + 1], ys[row + 1]) for row in range(grid) for col in range(grid)
    )


def check_options(grid: int, fill: str, side: str) -> None:
    """Refuse a grid outside 1..MAX_GRID, an unknown fill or side.

    Raises:
        InputError: A grid that is not a whole number in range.
        UnknownNameError: An unknown fill or side.
    """
    if isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= MAX_GRID:
        raise InputError(
            "invalid grid size",
            expected=f"a whole number of cells per side, 1 to {MAX_GRID}",
            found=repr(grid),
        )
    if fill not in FILLS:
        raise UnknownNameError("fill", fill, FILLS)
    if side not in SIDES:
        raise UnknownNameError("side", side, SIDES)


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
        path = cache_root / FOLDER / (key := self._key(settings, pictures))[:2] / f"{key}.json"
        found = _read(path, key)
        if found is not None:
            images = tuple(
                dataclasses.replace(i, picture=p)
                for i, (_, p) in zip(found.images, pictures, strict=True)
            )
            return dataclasses.replace(found, images=images, cached=True)
        result = self._compute(pictures, settings, progress)
        text = json.dumps(result.to_dict(), sort_keys=True)
        checksum = bytes_record(text.encode("utf-8"))["checksum"]
        record = {"format": FORMAT, "key": key, "result": text, "checksum": checksum}
        atomic_write_text(path, json.dumps(record, sort_keys=True) + "\n", sync=False)
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


def _read(path: Path, key: str) -> RegionAttribution | None:
    """The stored result of ``key``, or None: absent, of another format, or damaged.

    A damaged entry (unreadable, or a result that does not match its checksum) is reported,
    deleted and computed again.
    """
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("format") != FORMAT or stored.get("key") != key:
            return None
        text = stored["result"]
        if isinstance(text, str) and bytes_match(text.encode("utf-8"), stored["checksum"]):
            return RegionAttribution.from_dict(json.loads(text))
        problem = "its checksum does not match its result"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        problem = f"unreadable ({type(err).__name__})"
    report_damaged(path, problem)
    remove([path])
    return None

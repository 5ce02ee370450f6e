"""A retriever explains its own scores: the question it is asked and the records it answers.

A retriever offers attribution by having an ``explain_scores`` method (:class:`ExplainsScores`);
:func:`~mmbright_core.analysis.attribution.explain` asks it a :class:`Question` and hands the
answers on. Each formula sits with the retriever it explains: BM25's per-term shares in
:mod:`~mmbright_core.retrieval.lexical.bm25_explain`, a dual encoder's text and image parts in
:mod:`~mmbright_core.retrieval.dual.encoder`, a dense similarity in
:mod:`~mmbright_core.retrieval.backends.dense`.

Where in an image a score came from is the occlusion capability of the retrievers that encode
images (:class:`~mmbright_core.retrieval.dual.regions.EncodesImages`, computed in
:mod:`~mmbright_core.retrieval.dual.regions`); its records are here beside the others: a
:class:`RegionAttribution` of one :class:`ImageRegions` grid per image occluded, with the
options' vocabulary (:data:`FILLS`, :data:`SIDES`, :data:`GRID`, :func:`check_options`).

Every record but :class:`Unavailable` carries the score recomputed from its parts, which
equals the run's stored score where the run was made by this package with the same
retriever: lexical contributions sum to the BM25 score (float64), the text and image parts of
a fused query sum to the CLIP score (float32 precision, as the vectors are stored).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    Protocol,
    runtime_checkable,
)

from PIL import Image

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.types import Query, TaskData

if TYPE_CHECKING:
    from mmbright_core.data.images import ImageSource

Origin = Literal["text", "image", "both", "llm"]
"""Where a query term comes from: the query text, the words read from its images, both, or
only the LLM's rewrite of the query (``mmbright run --queries``)."""


@dataclass(frozen=True)
class Question:
    """What to explain: one query's scores of some documents, as the run computed them.

    :func:`~mmbright_core.analysis.attribution.explain` builds it and hands it to the
    retriever's ``explain_scores``; a retriever that wraps another hands that one the
    question as it asked it: ``ocr-*`` with the words it read from the query images, a run
    on rewritten queries with the rewritten text and the rewrite.

    Attributes:
        data: The task's data for the run's domain.
        source: Where images come from (tasks 2-4), or None.
        query: The query, with the text the retriever was given (the rewritten text on
            rewritten queries), the words read from its images not appended.
        positions: doc_id -> its position in ``data.corpus`` (documents in the corpus).
        image_words: The non-empty texts read from the query images and appended to the
            query text, one per image (``ocr-*``); empty for every other retriever.
        rewrite: ``(original text, the LLM's answer)`` when ``query`` carries a rewritten
            text, else None.
    """

    data: TaskData
    source: ImageSource | None
    query: Query
    positions: Mapping[str, int]
    image_words: tuple[str, ...] = ()
    rewrite: tuple[str, str] | None = None

    @property
    def scored(self) -> Query:
        """The query as the run scored it: its text with the image words appended."""
        return with_image_words(self.query, self.image_words)


def with_image_words(query: Query, words: Sequence[str]) -> Query:
    """Return ``query`` with ``words`` (the texts read from its images) appended, one a line."""
    return dataclasses.replace(query, text="\n".join([query.text, *words])) if words else query


@dataclass(frozen=True)
class TermContribution:
    """One query term's share of a BM25 score: ``query_weight * passage_weight``.

    Attributes:
        term: The analysed term (stemmed, lower-cased).
        surface: The raw query tokens it came from, in first-seen order.
        query_tf: How often it occurs in the scored query.
        passage_tf: How often it occurs in the passage.
        query_weight: The query side of the formula (``idf**2 * sat(query tf)`` for the
            official ``gensim`` scoring, ``idf * query tf`` for ``lucene``).
        passage_weight: The passage side, as indexed (``sat(passage tf)``, float32).
        contribution: ``query_weight * passage_weight``.
        origin: ``text``, ``image`` (only in the words read from the query images) or ``both``.
    """

    term: str
    surface: tuple[str, ...]
    query_tf: int
    passage_tf: int
    query_weight: float
    passage_weight: float
    contribution: float
    origin: Origin


class Span(NamedTuple):
    """Where a matched term's raw token lies in a snippet (``snippet[start:end]``)."""

    term: str
    start: int
    end: int


@dataclass(frozen=True)
class LexicalAttribution:
    """A BM25 score (``bm25``, ``ocr-bm25``) split into per-term contributions.

    Attributes:
        doc_id: The document.
        score: The sum of the contributions: the run's score.
        terms: Every query term the corpus knows, by contribution (ranking order), zero
            for terms the passage lacks.
        snippet: The passage text around the strongest matches (about 300 characters).
        snippet_start: Where the snippet starts in the passage.
        spans: Each matched term's tokens in the snippet, in text order.
    """

    kind: ClassVar[str] = "lexical"
    doc_id: str
    score: float
    terms: tuple[TermContribution, ...]
    snippet: str
    snippet_start: int
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class FusionAttribution:
    """A dual-encoder score (``clip``) split into what the query's text and image give.

    The fused query is ``(t + i) / ||t + i||`` (raw text and image features, docs/protocol.md,
    Fusion rules), so ``s * q.d = s * t.d / ||t + i|| + s * i.d / ||t + i||``: the two parts,
    ``s`` the run's score scale (100, or 1 where it writes the plain cosine).

    Attributes:
        doc_id: The document.
        score: ``text_part + image_part``: the run's score.
        text_part: What the query text contributes.
        image_part: What the query image contributes (0 for a text-only query).
        policy: The image policy (``first``, ``concat``, ``all``).
        images_used: The query image paths fused, in order (empty for a placeholder).
        placeholder: ``white`` when no image decoded and the white image stood in, ``text``
            when the text went alone, None when real images were used.
        pictures: The images as encoded (``concat``: the one concatenated image).
        skipped: Query image path -> why it was left out (it did not decode).
    """

    kind: ClassVar[str] = "fusion"
    doc_id: str
    score: float
    text_part: float
    image_part: float
    policy: str
    images_used: tuple[str, ...] = ()
    placeholder: str | None = None
    pictures: tuple[Image.Image, ...] = field(default=(), compare=False, repr=False)
    skipped: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DenseAttribution:
    """A dense text score (``dense``, ``ocr-dense``): the cosine x the run's score scale.

    Attributes:
        doc_id: The document.
        score: The similarity of the scored query (OCR-augmented for ``ocr-dense``).
        without_ocr: For ``ocr-dense``, the similarity of the query text alone (None
            otherwise, or when no text was read from the images).
    """

    kind: ClassVar[str] = "dense"
    doc_id: str
    score: float
    without_ocr: float | None = None


@dataclass(frozen=True)
class Unavailable:
    """No attribution, and why (no retriever, an unknown kind, a document not in the corpus).

    Attributes:
        reason: What is missing, said so that a reader can fix it.
    """

    kind: ClassVar[str] = "unavailable"
    reason: str


# --- where in an image: occlusion over a grid (retrieval/dual/regions.py computes it) ----------

#: How an occluded cell is filled: the image's mean colour, mid grey, or the image blurred.
FILLS: tuple[str, ...] = ("mean", "grey", "blur")
#: Which image is occluded: the query's, or the item's own (tasks 3 and 4).
SIDES: tuple[str, ...] = ("query", "document")
#: The default grid: 7 x 7 cells, 50 forward passes per image.
GRID = 7
#: The largest grid accepted (1,025 passes per image).
MAX_GRID = 32
#: Progress callback: ``(passes done, passes in all)``; raising from it cancels the work.
Progress = Callable[[int, int], None]
#: A cell's pixel box ``(left, top, right, bottom)``.
Box = tuple[int, int, int, int]


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


Attribution = LexicalAttribution | FusionAttribution | DenseAttribution | Unavailable

NO_RETRIEVER = Unavailable(
    "explaining a score needs the retriever that made the run: "
    "rebuild it with retriever_from_config(config) or pass it"
)
"""The answer where no retriever was given to explain a run's scores."""


def explained_query(data: TaskData, query_id: str) -> Query:
    """Return query ``query_id`` of ``data``, the query whose scores are explained.

    Raises:
        InputError: ``data`` has no such query.
    """
    query = next((q for q in data.queries if q.query_id == query_id), None)
    if query is None:
        raise InputError(
            f"query {query_id!r} is not in the task's data",
            expected=f"a query id of task {data.task}, domain {data.domain}",
            found=query_id,
        )
    return query


@runtime_checkable
class ExplainsScores(Protocol):
    """A retriever that explains its own scores (the attribution capability)."""

    def explain_scores(self, question: Question) -> Mapping[str, Attribution]:
        """Return doc_id -> its attribution for the documents of ``question.positions``."""
        ...

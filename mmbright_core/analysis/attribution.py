"""Why a retrieved document scored what it did, for one query: the score taken apart.

Attribution is a capability a retriever offers
(:class:`~mmbright_core.retrieval.explanation.ExplainsScores`): a retriever with an
``explain_scores`` method explains its own scores, one without it is answered
:class:`Unavailable`. The question, the records and each formula live with the retrievers
(:mod:`~mmbright_core.retrieval.explanation`); here they are asked. The package's retrievers
offer:

- ``bm25``, ``ocr-bm25``: each query term's share of the BM25 sum, with its origin (the query
  text, the words read from the query images, or both) and a passage snippet whose matched
  words can be highlighted (:mod:`~mmbright_core.retrieval.lexical.bm25_explain`);
- ``clip`` and every dual encoder built on an Embedder (plugins included) whose fusion is
  linear (``raw-mean``, ``zero-image``, ``normalised-mean``): the fused query's text part and
  image part, which add up to the score, and the images used
  (:mod:`~mmbright_core.retrieval.dual.encoder`); ``joint`` and ``text`` fusions say
  their scores have no such split;
- ``dense``, ``ocr-dense``: the similarity, and for ``ocr-dense`` the similarity without the
  words read from the images.

Where in an image a score came from (occlusion over a grid of the query image, or of an
item's own image) is ``explain(..., regions=True)``, one
:func:`~mmbright_core.retrieval.dual.regions.explain_regions` per document, for every retriever
that encodes images.

Everything is computed on demand from the retriever that made the run (one index look-up or
one batch of encodings per call), so the parts add up to the run's stored score. A run read
from files is explained only through the retriever its configuration rebuilds
(:func:`retriever_from_config`, with the recipe each retriever declares in
:mod:`~mmbright_core.retrieval.runner.rebuild`); without one, the answer is :class:`Unavailable`,
never a guess.

Example:
    >>> retriever = retriever_from_config(outputs_config)  # doctest: +SKIP
    >>> explain(retriever, data, source, "biology_0", ["biology/d1.txt"])  # doctest: +SKIP
    >>> explain(retriever, data, source, "biology_0", ["biology/d1.txt"],
    ...         regions=True, versus="biology/d2.txt", grid=7)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, overload

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import InputError, MissingDependencyError
from mmbright_core.retrieval.base import Retriever, RunConfig, check_task
from mmbright_core.retrieval.dual.regions import explain_regions
from mmbright_core.retrieval.explanation import (
    GRID,
    NO_RETRIEVER,
    Attribution,
    DenseAttribution,
    ExplainsScores,
    FusionAttribution,
    LexicalAttribution,
    Progress,
    Question,
    RegionAttribution,
    Span,
    TermContribution,
    Unavailable,
    explained_query,
)
from mmbright_core.retrieval.runner.rebuild import NotRebuildable, rebuild_retriever
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from typing import Unpack  # new in Python 3.11; annotations here are never evaluated

__all__ = [
    "Attribution",
    "DenseAttribution",
    "ExplainsScores",
    "FusionAttribution",
    "LexicalAttribution",
    "Question",
    "RegionOptions",
    "Span",
    "TermContribution",
    "Unavailable",
    "explain",
    "retriever_from_config",
]


def retriever_from_config(
    config: RunConfig | Mapping[str, Any], **given: Any
) -> Retriever | Unavailable:
    """Rebuild the retriever that made a run to explain its scores, or say why not.

    The rebuild itself, one recipe per retriever, is
    :func:`~mmbright_core.retrieval.runner.rebuild.rebuild_retriever`, which takes the same
    arguments (``cache_dir``, ``device``, ``ocr_words``, ``rewrites``); here a refusal
    becomes the answer every document of the run gets.

    Returns:
        The retriever, or :class:`Unavailable` with the reason it cannot be rebuilt
        faithfully.

    Raises:
        InputError: ``config`` is not a run configuration.
    """
    try:
        return rebuild_retriever(config, **given)
    except NotRebuildable as err:
        return Unavailable(str(err))


class RegionOptions(TypedDict, total=False):
    """The options of :func:`explain_regions` that :func:`explain` passes on with ``regions``."""

    versus: str | None
    side: str
    grid: int
    fill: str
    cache_dir: str | Path | None
    progress: Progress | None


#: :func:`explain_regions`' own defaults: what :func:`explain` accepts without ``regions``.
_REGION_DEFAULTS: RegionOptions = {
    "versus": None,
    "side": "query",
    "grid": GRID,
    "fill": "mean",
    "cache_dir": None,
    "progress": None,
}


@overload
def explain(
    retriever: Retriever | Unavailable | None,
    data: TaskData,
    source: ImageSource | None,
    query_id: str,
    doc_ids: Sequence[str],
    *,
    regions: Literal[False] = False,
) -> dict[str, Attribution]: ...


@overload
def explain(
    retriever: Retriever | Unavailable | None,
    data: TaskData,
    source: ImageSource | None,
    query_id: str,
    doc_ids: Sequence[str],
    *,
    regions: Literal[True],
    **options: Unpack[RegionOptions],
) -> dict[str, RegionAttribution | Unavailable]: ...


def explain(
    retriever: Retriever | Unavailable | None,
    data: TaskData,
    source: ImageSource | None,
    query_id: str,
    doc_ids: Sequence[str],
    *,
    regions: bool = False,
    **options: Unpack[RegionOptions],
) -> dict[str, Attribution] | dict[str, RegionAttribution | Unavailable]:
    """Explain the scores of ``doc_ids`` for one query, as ``retriever`` computes them.

    Args:
        retriever: The retriever that made the run (as :func:`retriever_from_config`
            rebuilds it). :class:`Unavailable` (from that function) or None gives every
            document that answer.
        data: The task's data for the run's domain (the run's task, protocol and corpus).
        source: Where the query and corpus images come from (tasks 2-4 of ``clip``, OCR).
        query_id: The query.
        doc_ids: The documents to explain (typically the run's top 10 for the query).
        regions: Explain where in an image each score came from instead of its parts:
            :func:`explain_regions` of each document, with the options below (which
            are refused without it).
        versus: With ``regions``: a second item; each grid then holds the changes of
            ``score(doc) - score(versus)``.
        side: With ``regions``: ``query`` (occlude the query image) or ``document`` (each
            document's own image, tasks 3 and 4).
        grid: With ``regions``: cells per side (``grid**2 + 1`` forward passes per image).
        fill: With ``regions``: ``mean`` (the image's mean colour), ``grey`` or ``blur``.
        cache_dir: With ``regions``: the cache root of the grids.
        progress: With ``regions``: called with (passes done, passes in all).

    Returns:
        doc_id -> its attribution, in the order given; a document absent from the corpus
        gets :class:`Unavailable`, and so does every document when the query side cannot
        be computed (an OCR run's image words neither recorded nor readable here). With
        ``regions``: doc_id -> its :class:`RegionAttribution`, or :class:`Unavailable`
        (the run cannot be rebuilt, or its retriever reads no images).

    Raises:
        InputError: ``query_id`` is not a query of ``data``, or the retriever cannot run
            the task; with ``regions``, an invalid grid, fill or side (as
            :func:`explain_regions`).
    """
    if regions:
        return {
            doc_id: explain_regions(retriever, data, source, query_id, doc_id, **options)
            for doc_id in dict.fromkeys(doc_ids)
        }
    if {**_REGION_DEFAULTS, **options} != _REGION_DEFAULTS:
        raise InputError(
            "versus, side, grid, fill, cache_dir and progress are options of the regions' "
            "explanation",
            hint="Pass regions=True, or leave them out",
        )
    return _parts(retriever, data, source, query_id, doc_ids)


def _parts(
    retriever: Retriever | Unavailable | None,
    data: TaskData,
    source: ImageSource | None,
    query_id: str,
    doc_ids: Sequence[str],
) -> dict[str, Attribution]:
    """Each document's score taken apart (:func:`explain` without ``regions``)."""
    if retriever is None or isinstance(retriever, Unavailable):
        reason = retriever or NO_RETRIEVER
        return dict.fromkeys(doc_ids, reason)
    query = explained_query(data, query_id)
    check_task(retriever, data.task)
    wanted = set(doc_ids)
    where = {doc.doc_id: i for i, doc in enumerate(data.corpus) if doc.doc_id in wanted}
    positions = {d: where[d] for d in dict.fromkeys(doc_ids) if d in where}
    try:
        found = _explained(retriever, Question(data, source, query, positions))
    except (MissingDependencyError, InputError) as err:
        # An OCR run whose record lacks an image's words, read again without the engine.
        return dict.fromkeys(doc_ids, Unavailable(str(err)))
    if found is None:
        return dict.fromkeys(
            doc_ids,
            Unavailable(
                f"retriever {retriever.name!r} offers no attribution of its scores "
                "(it has no explain_scores method)"
            ),
        )
    missing = Unavailable(f"not in the corpus of task {data.task}, domain {data.domain}")
    return {doc_id: found.get(doc_id, missing) for doc_id in doc_ids}


def _explained(retriever: Retriever, question: Question) -> Mapping[str, Attribution] | None:
    """The retriever's own attributions (None when it offers none)."""
    if not question.positions:
        return {}
    if not isinstance(retriever, ExplainsScores):
        return None
    return retriever.explain_scores(question)

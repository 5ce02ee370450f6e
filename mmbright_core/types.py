"""The shapes every layer shares: qrels, runs, and the benchmark's records.

One vocabulary everywhere: ``query_id``, ``doc_id``, ``relevance``, ``score``.
Functions accept ``Mapping`` and return plain ``dict`` so that values pass straight into
pytrec_eval, ir_measures and ranx.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Qrels = Mapping[str, Mapping[str, int]]
"""query_id -> doc_id -> relevance (an integer label; 0 means judged non-relevant)."""

Run = Mapping[str, Mapping[str, float]]
"""query_id -> doc_id -> score (higher is better)."""

Missing = Literal["skip", "zero"]
"""How queries judged in the qrels but absent from the run are averaged.

``skip`` averages over queries present in both (pytrec_eval, the official harness);
``zero`` counts each absent query as 0 (trec_eval ``-c``, ir_measures).
"""


@dataclass(frozen=True)
class ImageRef:
    r"""A reference to an image of the benchmark, never its pixels.

    Attributes:
        path: The image path with ``\\`` normalised to ``/``; it is also the Task 3 doc id.
        source_passage_id: The passage the image came from, where the data says so.
    """

    path: str
    source_passage_id: str | None = None


@dataclass(frozen=True)
class Query:
    """One benchmark query.

    Attributes:
        query_id: The query's id (a string, as in the published files).
        domain: The StackExchange domain the query belongs to.
        text: The query text.
        images: The query's images, in the published order.
    """

    query_id: str
    domain: str
    text: str
    images: tuple[ImageRef, ...] = ()


@dataclass(frozen=True)
class Document:
    """One retrievable item of a task's corpus.

    Attributes:
        doc_id: The id scored in runs and qrels (a passage id, an image path, or a Task 4
            pair id ``"<passage id>|||<image path>"``).
        text: The passage text; empty for a Task 3 image document.
        image: The image this item carries, if any (Task 3 and the image pairs of Task 4).
    """

    doc_id: str
    text: str = ""
    image: ImageRef | None = None


@dataclass(frozen=True)
class EvalCounts:
    """How many queries an evaluation used and why the others were left out.

    Attributes:
        evaluated: Queries that entered the averages.
        dropped_empty_qrels: Queries present in the qrels with no judgment at all.
        missing_from_run: Judged queries the run has no ranking for.
        extra_in_run: Queries of the run that the qrels do not know.
    """

    evaluated: int
    dropped_empty_qrels: int
    missing_from_run: int
    extra_in_run: int


@dataclass(frozen=True)
class IdCheck:
    """What the ids of a run matched in the qrels.

    Attributes:
        unknown_queries: How many query ids of the run the qrels do not know.
        unknown_query_examples: A few of them, sorted.
        blind_queries: Judged queries whose ranking holds no judged document.
        blind_query_examples: A few of them, sorted.
        near_queries: (run id, qrels id) pairs equal only after normalisation, a few.
        near_query_count: How many such query ids.
        near_docs: (query id, run doc id, judged doc id) triples, a few.
        near_doc_count: How many such documents.
    """

    unknown_queries: int = 0
    unknown_query_examples: tuple[str, ...] = ()
    blind_queries: int = 0
    blind_query_examples: tuple[str, ...] = ()
    near_query_count: int = 0
    near_queries: tuple[tuple[str, str], ...] = field(default=())
    near_doc_count: int = 0
    near_docs: tuple[tuple[str, str, str], ...] = field(default=())


@dataclass(frozen=True)
class EvalResult:
    """Per-query values, their means, and the counts behind them.

    Attributes:
        per_query: measure name -> query_id -> value.
        aggregate: measure name -> mean over the evaluated queries.
        counts: Which queries were evaluated, dropped, missing or extra.
        missing: The averaging rule used for queries absent from the run.
        ids: The run's ids that match nothing, or match only after normalisation
            (:mod:`mmbright_core.metrics.id_check`); the scores match ids exactly.
    """

    per_query: dict[str, dict[str, float]]
    aggregate: dict[str, float]
    counts: EvalCounts
    missing: Missing = "skip"
    measures: tuple[str, ...] = field(default=())
    ids: IdCheck = field(default_factory=IdCheck)


Task = Literal[1, 2, 3, 4]
"""1 text->text, 2 (text+image)->text, 3 (text+image)->image, 4 (text+image)->(text+image)."""

Protocol4 = Literal["paper", "legacy", "release"]
"""Task 4 judgment protocol: ``paper`` (fixed passage key, the default), ``legacy`` (the
released key, graded) or ``release`` (the January 2026 release's scoring, binary)."""


@dataclass(frozen=True)
class ProtocolReport:
    """What building a task's judgments counted and left out, for one domain.

    Attributes:
        empty_qrels: Query ids with no judgment at all (left out of scoring).
        orphan_positives: Positive images with no gold passage of the same key (Task 4).
        unavailable_positives: Positive images missing from the decodable corpus images.
        undecodable_images: image path -> reason, for images the corpus or queries drop.
        added_judged_pairs: Judged Task 4 pairs that were absent from the pair corpus.
        warnings: What the data lacked that a score depends on, with counts (null texts,
            every corpus image undecodable, no judgment at all), one sentence each.
    """

    empty_qrels: tuple[str, ...] = ()
    orphan_positives: int = 0
    unavailable_positives: int = 0
    undecodable_images: Mapping[str, str] = field(default_factory=dict)
    added_judged_pairs: int = 0
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskData:
    """Everything needed to run and score one task on one domain.

    Attributes:
        task: The task number.
        domain: The domain.
        protocol: The Task 4 protocol used (``"paper"`` for tasks 1-3, where it has no effect).
        queries: The task's queries, in published order.
        corpus: The retrievable items, in published order.
        qrels: query_id -> doc_id -> relevance, as the task defines it.
        excluded: query_id -> doc ids to remove from that query's ranking before the cut.
        report: What building the judgments counted and left out.
    """

    task: Task
    domain: str
    protocol: Protocol4
    queries: tuple[Query, ...]
    corpus: tuple[Document, ...]
    qrels: dict[str, dict[str, int]]
    excluded: dict[str, frozenset[str]]
    report: ProtocolReport = field(default_factory=ProtocolReport)

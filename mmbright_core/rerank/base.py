"""The reranker contract: what a second stage is given and what it answers.

A reranker re-scores the top ``depth`` candidates of one query of a first-stage run
(docs/protocol.md, "Two-stage runs"). It answers with a :class:`Reranked`: a best-first
permutation of the candidates, per-candidate scores (a pointwise reranker), scores of the
candidates it chose to rank (the others following in first-stage order), or a
``problem`` saying why its answer was unusable, in which case the query keeps its
first-stage order: a malformed answer is recorded, never turned into a silent reordering.
Candidates below the depth keep their first-stage order below the reranked ones.

A reranker whose model scores batches (a cross-encoder) may also answer many queries at
once (:class:`BatchReranker`): their candidates then share the model's batches, so no
query's last batch runs half empty, and each answer still comes as soon as it is complete.
:func:`answers` asks either kind.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mmbright_core.data.images import ImageSource

#: The images a reranker reads: ``query_image_bytes(domain, path)`` for the query's,
#: ``document_image_bytes(domain, path)`` for a candidate's (a data source satisfies it).
ImageStore = ImageSource


@dataclass(frozen=True)
class Candidate:
    """One first-stage candidate of a query.

    Attributes:
        doc_id: The id as in the run (a Task 4 pair id ``"<pid>|||<image>"``).
        text: The passage text; None on Task 3, whose documents are images only.
        image_paths: The dataset-relative paths of the document's images (Tasks 3-4).
    """

    doc_id: str
    text: str | None
    image_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class RerankQuery:
    """The query a reranker orders candidates for.

    Attributes:
        query_id: The query's id.
        text: The query text (a rewritten query's text where the first stage ran on one).
        image_paths: The dataset-relative paths of the query's images (Tasks 2-4).
        task: The task number (1-4).
        domain: The StackExchange domain, which ``images`` needs to resolve paths.
    """

    query_id: str
    text: str
    image_paths: tuple[str, ...]
    task: int
    domain: str


@dataclass(frozen=True)
class Reranked:
    """A reranker's answer for one query.

    Attributes:
        order: A permutation of ``range(len(candidates))``, best first; None keeps the
            first-stage order (or follows ``scores`` where they are given).
        scores: One score per candidate (higher is better) when the reranker is pointwise.
        ranked: ``(position, score)`` of the candidates the reranker ranked (higher is
            better); the others follow them in first-stage order.
        problem: Why the answer was unusable; the query then keeps its first-stage order
            and the problem is recorded beside the run.
    """

    order: tuple[int, ...] | None = None
    scores: tuple[float, ...] | None = None
    ranked: tuple[tuple[int, float], ...] | None = None
    problem: str | None = None

    @classmethod
    def from_scores(cls, scores: Sequence[float]) -> Reranked:
        """Answer with one score per candidate (the order follows them, ties first-stage)."""
        return cls(scores=tuple(float(s) for s in scores))

    @classmethod
    def from_order(cls, order: Sequence[int]) -> Reranked:
        """Answer with a best-first permutation of the candidates' positions."""
        return cls(order=tuple(int(i) for i in order))

    @classmethod
    def from_ranked(cls, scores: Mapping[int, float]) -> Reranked:
        """Answer with scores of some candidates, by position; the rest keep their order below."""
        return cls(ranked=tuple((int(i), float(s)) for i, s in scores.items()))

    @classmethod
    def failed(cls, problem: str) -> Reranked:
        """Answer that nothing usable came back: the query keeps its first-stage order."""
        return cls(problem=problem)


@runtime_checkable
class Reranker(Protocol):
    """A second-stage model.

    Attributes:
        name: The spec it was built from (``cross-encoder:NAME``, ``mteb:NAME``,
            ``llm:MODEL``, ``MODULE:FACTORY``).
    """

    name: str

    def label(self) -> str:
        """Return the short model name used in the reranked run's folder name."""

    def settings(self) -> dict[str, Any]:
        """Return everything that changes the scores (recorded in config.json; keys the cache)."""

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        """Order ``candidates`` (the first stage's top ``depth``, best first) for ``query``.

        Args:
            query: The query.
            candidates: The candidates, in first-stage order.
            images: Resolves the query's and candidates' ``image_paths`` to bytes (None
                where the data has no images).

        Returns:
            The answer; an unusable one says why in ``problem``.
        """


#: The queries a reranker is asked together: each query with its candidates.
Asked = Sequence[tuple[RerankQuery, Sequence[Candidate]]]


@runtime_checkable
class BatchReranker(Reranker, Protocol):
    """A reranker that answers many queries at once, their candidates sharing model batches."""

    def rerank_many(
        self, asked: Asked, images: ImageStore | None, known: Collection[int] = ()
    ) -> Iterator[tuple[int, Reranked]]:
        """Answer every query of ``asked`` but those at the positions in ``known``.

        Args:
            asked: The queries, each with its candidates in first-stage order.
            images: As :meth:`Reranker.rerank` takes it.
            known: Positions in ``asked`` whose answers are already kept (not yielded).

        Yields:
            ``(position, answer)`` for each other query, as soon as its answer is complete.
            An answer depends on ``asked`` alone, not on which positions are known, so a
            resumed job gets the answers an uninterrupted one got.
        """


def answers(
    reranker: Reranker, asked: Asked, images: ImageStore | None, known: Collection[int] = ()
) -> Iterator[tuple[int, Reranked]]:
    """Yield ``(position, answer)`` for each query of ``asked`` not in ``known``.

    A :class:`BatchReranker` answers them together; any other reranker one query at a time.
    """
    if isinstance(reranker, BatchReranker):
        yield from reranker.rerank_many(asked, images, known)
        return
    for position, (query, candidates) in enumerate(asked):
        if position not in known:
            yield position, reranker.rerank(query, candidates, images)


#: The key of the first stage in a reranked run's recorded options.
FIRST_STAGE = "first_stage"

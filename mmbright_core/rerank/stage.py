"""Reranking a first-stage run: the second stage as a retriever the runner writes out.

:func:`rerank_task` hands :class:`RerankStage` to
:func:`~mmbright_core.retrieval.runner.task_run.run_task`, so a reranked run gets what every run
gets (docs/protocol.md, "Two-stage runs"): the official layout, a ``config.json`` per domain
written last (a killed job re-runs only the domains it had not finished), the folder never shared
with another configuration, the metrics and ``run.trec``. Its configuration records the reranker,
its settings, the depth and the first stage (:mod:`mmbright_core.rerank.first_stage`). Within a
domain every answer is cached as soon as it is given (:mod:`mmbright_core.rerank.cache`), so a
resumed job asks nothing twice; an unusable answer is not kept, so a rerun asks that query again.
Each domain also gets ``rerank.json``: the reranker's own scores (of the candidates it
ranked) and the problem of every query whose answer was unusable (kept in first-stage
order); a domain where every answer was unusable is warned of (an ``InputWarning``).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from tqdm.auto import tqdm

from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError, InputWarning, cut
from mmbright_core.rerank.answers import checked_order, reranked_run
from mmbright_core.rerank.base import (
    FIRST_STAGE,
    Asked,
    Candidate,
    ImageStore,
    Reranked,
    Reranker,
    RerankQuery,
    answers,
)
from mmbright_core.rerank.cache import RerankCache, answer_key
from mmbright_core.rerank.first_stage import FirstStage, candidate_order
from mmbright_core.retrieval.cache.store import content_key
from mmbright_core.retrieval.runner.task_run import RunOutcome, run_task
from mmbright_core.task_table import TASK_TABLE, task_info
from mmbright_core.types import Document, Query, TaskData

#: The default depth: the top 100, which the official oracle lifts too.
DEFAULT_DEPTH = 100
#: The file each domain of a reranked run records its answers in.
RERANK_FILE = "rerank.json"
_ALL_TASKS = frozenset(TASK_TABLE)


class RerankStage:
    """A reranker over a first-stage run, as a :class:`~mmbright_core.retrieval.base.Retriever`.

    Args:
        reranker: The second stage.
        first: The first-stage run.
        depth: How many of each query's first-stage documents are reranked.
        cache: Where answers are kept (None: nowhere, every query is asked).
    """

    name = "rerank"
    recorded_files = (RERANK_FILE,)

    def __init__(
        self, reranker: Reranker, first: FirstStage, depth: int, cache: RerankCache | None
    ) -> None:
        self.reranker, self.first, self.depth, self.cache = reranker, first, depth, cache
        self.tasks: frozenset[int] = getattr(reranker, "tasks", _ALL_TASKS)
        self._settings = reranker.settings()
        self._answers: dict[str, dict[str, Any]] = {}
        self._digests: dict[tuple[str, str, str], str] = {}

    def label(self) -> str:
        """Return ``<first stage>+<reranker>``, the reranked run's folder name."""
        return f"{self.first.label}+{self.reranker.label()}".replace("/", "-")

    def settings(self) -> dict[str, Any]:
        """Return the reranker, its settings, the depth and the first stage."""
        return {
            "reranker": self.reranker.name,
            "reranker_settings": self._settings,
            "depth": self.depth,
            FIRST_STAGE: self.first.record(),
        }

    def retrieve(
        self, data: TaskData, source: ImageStore | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rerank the first stage's top ``depth`` of every query of ``data`` it ranks."""
        first = self.first.runs.get(data.domain, {})
        corpus = {doc.doc_id: doc for doc in data.corpus}
        rankings: list[list[str]] = []
        asked: list[tuple[RerankQuery, list[Candidate]]] = []
        for query in data.queries:
            if first.get(query.query_id):
                excluded = data.excluded.get(query.query_id, frozenset())
                ranking = [d for d in candidate_order(first[query.query_id]) if d not in excluded]
                rankings.append(ranking)
                candidates = [self._candidate(corpus, d, data) for d in ranking[: self.depth]]
                asked.append((_rerank_query(query, data.task), candidates))
        found: dict[str, dict[str, float]] = {}
        recorded: dict[str, Any] = {}
        given = self._answers_of(asked, source, data.domain)
        for (question, candidates), ranking, answer in zip(asked, rankings, given, strict=True):
            order, problem = checked_order(answer, len(candidates))
            recorded[question.query_id] = _recorded(answer, problem, candidates)
            found[question.query_id] = reranked_run(ranking, order)
        self._answers[data.domain] = recorded
        problems = [answer["problem"] for answer in recorded.values()]
        if problems and None not in problems:
            warnings.warn(
                f"every answer of the reranker {self.reranker.name!r} on {data.domain} was "
                f"unusable: its {len(problems)} queries keep their first-stage order; the "
                f"first: {cut(str(problems[0]))}",
                InputWarning,
                stacklevel=2,
            )
        return found

    def records(self, data: TaskData, source: ImageStore | None) -> dict[str, str]:
        """Return ``rerank.json`` of the domain just reranked."""
        record = {
            "reranker": self.reranker.name,
            "depth": self.depth,
            "queries": self._answers.pop(data.domain, {}),
        }
        return {RERANK_FILE: json.dumps(record, indent=1, sort_keys=True) + "\n"}

    def _candidate(self, corpus: Mapping[str, Document], doc_id: str, data: TaskData) -> Candidate:
        doc = corpus.get(doc_id)
        if doc is None:
            raise InputError(
                f"document {doc_id!r} of the first-stage run is not in the corpus of "
                f"task {data.task} on {data.domain}",
                source=self.first.path,
                hint="Rerank a run of this task, source and protocol.",
            )
        images = () if doc.image is None else (doc.image.path,)
        text = doc.text if TASK_TABLE[data.task].corpus_text else None
        return Candidate(doc_id, text, images)

    def _answers_of(self, asked: Asked, images: ImageStore | None, domain: str) -> list[Reranked]:
        # The cached answers are read, the others asked together, each kept once given.
        cache = self.cache
        keys = [] if cache is None else [self._key(q, c, images) for q, c in asked]
        given: dict[int, Reranked] = {}
        for position, key in enumerate(keys):
            answer = None if cache is None else cache.get(key)
            if answer is not None:
                given[position] = answer
        progress = {"desc": f"rerank {domain}", "unit": "query", "disable": None}
        with tqdm(total=len(asked), initial=len(given), **progress) as bar:
            known = frozenset(given)
            for position, answer in answers(self.reranker, asked, images, known):
                if cache is not None and checked_order(answer, len(asked[position][1]))[1] is None:
                    cache.put(keys[position], answer)  # a failed answer is asked again
                given[position] = answer
                bar.update()
        return [given[position] for position in range(len(asked))]

    def _key(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> str:
        return answer_key(
            self._settings,
            self._query_key(query, images),
            self._docs_key(query, candidates, images),
        )

    def _query_key(self, query: RerankQuery, images: ImageStore | None) -> dict[str, Any]:
        digests = [self._digest(images, query.domain, p, "query") for p in query.image_paths]
        return {"task": query.task, "domain": query.domain, "text": query.text, "images": digests}

    def _docs_key(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> list[Any]:
        def images_of(c: Candidate) -> list[str]:
            return [self._digest(images, query.domain, p, "document") for p in c.image_paths]

        return [[c.doc_id, c.text, images_of(c)] for c in candidates]

    def _digest(self, images: ImageStore | None, domain: str, path: str, role: str) -> str:
        # An image is known by its bytes, as a text by its characters (each read once).
        memo = (role, domain, path)
        if memo not in self._digests:
            read = None
            if images is not None:
                fetch = images.query_image_bytes if role == "query" else images.document_image_bytes
                read = fetch(domain, path)
            self._digests[memo] = "missing" if read is None else content_key(read)
        return self._digests[memo]


def _rerank_query(query: Query, task: int) -> RerankQuery:
    paths = tuple(ref.path for ref in query.images)
    return RerankQuery(query.query_id, query.text, paths, task, query.domain)


def _recorded(answer: Reranked, problem: str | None, candidates: Sequence[Candidate]) -> Any:
    scores = None
    if problem is None and answer.scores is not None:
        scores = {c.doc_id: s for c, s in zip(candidates, answer.scores, strict=True)}
    if problem is None and answer.ranked is not None:
        scores = {candidates[i].doc_id: s for i, s in answer.ranked}
    return {"problem": problem, "scores": scores}


def check_depth(depth: int) -> None:
    """Raise :class:`InputError` unless ``depth`` is a positive integer."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputError("invalid rerank depth", expected="a positive integer", found=repr(depth))


def check_reranker_task(reranker: Reranker, task: int) -> None:
    """Raise :class:`InputError` unless ``reranker`` reads what ``task``'s documents are."""
    tasks = getattr(reranker, "tasks", _ALL_TASKS)
    if task not in tasks:
        raise InputError(
            f"reranker {reranker.name!r} cannot rerank task {task}",
            expected=f"one of tasks {', '.join(map(str, sorted(tasks)))}",
            found=f"task {task}",
            hint="Task 3's documents are images: rerank them with a reranker that reads "
            "images (mteb:, llm: or a plugin)."
            if task in TASK_TABLE and TASK_TABLE[task].corpus == "images"
            else None,
        )


def rerank_task(
    view: TaskView,
    first: FirstStage,
    reranker: Reranker,
    out_dir: str | os.PathLike[str],
    *,
    depth: int = DEFAULT_DEPTH,
    domains: Sequence[str] | None = None,
    negatives: str = "exclude",
    cache_dir: str | os.PathLike[str] | None = None,
    cache: bool = True,
    **run: Any,
) -> RunOutcome:
    """Rerank the top ``depth`` of every query of a first-stage run and write the new run.

    Args:
        view: The data source the first stage ran on, the task and its Task 4 protocol
            (the first stage's, where it recorded one).
        first: The first-stage run (:func:`~mmbright_core.rerank.first_stage.load_first_stage`).
        reranker: The second stage.
        out_dir: The output root; ``<subdir>`` is named after ``<first>+<reranker>``.
        depth: How many documents of each query are reranked.
        domains: The domains (default: those the first stage covers, in the source's order).
        negatives: The ``negative_ids`` policy; the first stage's, where it recorded one.
        cache_dir: The cache root of the answers.
        cache: False to ask every query afresh and keep no answer.
        **run: ``k`` (the per-query cut of the reranked run), ``progress`` and
            ``new_folder``, as :func:`~mmbright_core.retrieval.runner.task_run.run_task` takes them.

    Raises:
        InputError: A bad depth, a task the reranker cannot read (images for a text
            reranker), or a protocol or policy
            that is not the one the first stage ran with.
    """
    check_depth(depth)
    check_reranker_task(reranker, view.task)
    check_judged_alike(first, view, negatives)
    chosen = list(domains) if domains else [d for d in view.domains() if d in first.runs]
    stage = RerankStage(reranker, first, depth, RerankCache(cache_dir) if cache else None)
    return run_task(view, stage, out_dir, domains=chosen, negatives=negatives, **run)


def check_judged_alike(first: FirstStage, view: TaskView, negatives: str) -> None:
    """Raise :class:`InputError` unless both stages use the first stage's protocol and policy.

    Only where they apply to the view's task (the Task 4 protocol; ``negative_ids`` of
    tasks 1-2), and only where the first stage recorded them.
    """
    recorded = first.config or {}
    info = task_info(view.task)
    for name, given in (("protocol", view.protocol), ("negatives", negatives)):
        applies = info.protocols if name == "protocol" else info.negatives
        if applies and recorded.get(name, given) != given:
            raise InputError(
                f"the first stage ran with --{name} {recorded[name]}",
                source=first.path,
                expected=f"--{name} {recorded[name]}, so both stages are judged alike",
                found=f"--{name} {given}",
            )

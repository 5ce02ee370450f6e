"""How much of a task a run's ids match: its queries among the task's, its doc ids in the corpus.

A run made for another copy of the data, another dataset or with mangled ids scores 0 on every
query it shares with the task and raises nothing, as the official harness reports that zero;
only a doc id of another task's *shape* is refused outright (``benchmark.check_doc_ids``).
These counts let a caller say how much of the run the task knows before it is added, and ask
when that is little (:data:`WEAK_MATCH`, docs/dashboard.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mmbright_core.data.ids import pair_id
from mmbright_core.data.pairs import pair_corpus
from mmbright_core.data.sources import FolderSource
from mmbright_core.data.task_inputs import read_passages
from mmbright_core.data.view import TaskView
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Run

WEAK_MATCH = 0.5
"""Below this share of a run's queries known to the task, or of its doc ids found in the
corpus, the run matches the task only a little: a caller asks before adding it."""


@dataclass(frozen=True)
class MatchCounts:
    """What of a run the task knows.

    Attributes:
        run_queries: The queries in the run (every id in the file).
        matched_queries: Those that are queries of the task (in the domain they are filed in).
        task_queries: The task's queries over every domain of the source.
        run_docs: The distinct (domain, doc id) the run ranks for its matched queries.
        matched_docs: Those that are items of the domain's corpus, or None when the corpus
            was not at hand to count them (the hub's: it is not downloaded for a count).
        corpus_docs: The items in the corpus of the domains the run covers (None likewise).
    """

    run_queries: int
    matched_queries: int
    task_queries: int
    run_docs: int
    matched_docs: int | None
    corpus_docs: int | None

    @property
    def nothing(self) -> bool:
        """Whether no query of the run, or no doc id it ranks for them, is the task's."""
        return self.matched_queries == 0 or self.matched_docs == 0

    @property
    def weak(self) -> bool:
        """Whether the run matches nothing, or under :data:`WEAK_MATCH` of its ids."""
        return (
            self.nothing
            or self.matched_queries < WEAK_MATCH * self.run_queries
            or (self.matched_docs is not None and self.matched_docs < WEAK_MATCH * self.run_docs)
        )

    def describe(self) -> str:
        """The counts in one sentence, for a message."""
        queries = (
            f"{self.matched_queries:,} of its {self.run_queries:,} queries are queries of the "
            f"task (which has {self.task_queries:,})"
        )
        if self.matched_docs is None:
            return f"{queries}; its {self.run_docs:,} doc ids were not looked up in the corpus"
        return (
            f"{queries}; {self.matched_docs:,} of the {self.run_docs:,} doc ids it ranks are in "
            f"the corpus ({self.corpus_docs:,} items in the domains it covers)"
        )


def match_counts(
    view: TaskView, runs: Mapping[str, Run], *, run_queries: int | None = None
) -> MatchCounts:
    """Count the run's queries the task has and the doc ids its corpus holds.

    The corpus is read by id only (passage ids, image paths), never its text or bytes, and
    only from a local folder: the hub's corpus files are not downloaded for a count (its doc
    ids are then left uncounted, ``None``).

    Args:
        view: The dataset copy, the task the run is for and its protocol.
        runs: domain -> query_id -> doc_id -> score (a domain the source lacks matches nothing).
        run_queries: The queries in the file, when some could not be filed under a domain
            (default: those in ``runs``).
    """
    held = set(view.domains())
    local = isinstance(view.source, FolderSource)
    task_queries = sum(len(view.judgments(d).queries) for d in sorted(held))
    filed = sum(len(run) for run in runs.values())
    matched_queries = run_docs = matched_docs = corpus_docs = 0
    for domain, run in runs.items():
        known = {q.query_id for q in view.judgments(domain).queries} if domain in held else set()
        docs = {d for query_id, ranked in run.items() if query_id in known for d in ranked}
        matched_queries += sum(1 for query_id in run if query_id in known)
        run_docs += len(docs)
        if docs and local:
            corpus = _corpus(view, domain)
            corpus_docs += len(corpus)
            matched_docs += len(docs & corpus)
    return MatchCounts(
        filed if run_queries is None else run_queries,
        matched_queries,
        task_queries,
        run_docs,
        matched_docs if local else None,
        corpus_docs if local else None,
    )


def _corpus(view: TaskView, domain: str) -> frozenset[str]:
    """The ids of a domain's corpus items, read by id alone, with the judged ones added.

    Task 4's pairs are built from every corpus image, decodable or not: decoding them all
    would cost more than the check is worth, and an undecodable image's pair is a real id.
    """
    source = view.source
    judged = {d for docs in view.qrels(domain).values() for d in docs}
    corpus = TASK_TABLE[view.task].corpus
    if corpus == "images":
        return frozenset(source.image_paths("document_images", domain)) | judged
    passages = read_passages(source, domain, text=False)[0]
    if corpus == "passages":
        return frozenset(passages) | judged
    images = source.image_paths("document_images", domain)
    pairs = pair_corpus(passages, images, domain, view.checked_protocol)
    return frozenset(pair_id(*pair) for pair in pairs) | judged

"""One view of MM-BRIGHT: a source read as one task under one protocol, and a query in it.

A :class:`TaskView` is the value every reader of a task's queries, judgments and corpus
takes, in place of the source, the task and the protocol side by side; it hashes and
compares by the three, so caches key on it. The reads it owns are cached here, bounded:
a domain's queries and judgments by id (the source keeps the judgments themselves), a
domain's corpus for the tasks that need it built, and passages read by id. A
:class:`QueryRef` names one query of a view (its domain and id) and hands out what a page
shows of it: its text and images, its judgments, what the protocol excludes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

from mmbright_core.data.ids import check_protocol
from mmbright_core.data.sources import Source
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Protocol4, Query, Task, TaskData


@dataclass(frozen=True)
class TaskView:
    """A source read as one task under one Task 4 protocol (tasks 1-3 ignore it).

    Attributes:
        source: The dataset copy.
        task: 1, 2, 3 or 4.
        protocol: The Task 4 protocol, ``"paper"``, ``"legacy"`` or ``"release"``.
    """

    source: Source
    task: Task
    protocol: str = "paper"

    @property
    def key(self) -> tuple[str, int, str]:
        """What names the view's content: the source's name, the task and the protocol."""
        return (self.source.name, self.task, self.protocol)

    @property
    def checked_protocol(self) -> Protocol4:
        """The protocol, checked to be one (docs/protocol.md, Per-task protocol)."""
        return check_protocol(self.protocol)

    def domains(self) -> tuple[str, ...]:
        """The domains the source holds."""
        return tuple(self.source.domains())

    def judgments(self, domain: str, negatives: str = "exclude") -> TaskData:
        """One domain's queries, qrels and exclusions, its corpus left unread."""
        return self.source.judgments(self.task, domain, self.protocol, negatives=negatives)

    def data(self, domain: str, negatives: str = "exclude") -> TaskData:
        """One domain's task data, corpus included (what a retriever scores against)."""
        return self.source.task(self.task, domain, self.protocol, negatives=negatives)

    def queries(self, domain: str) -> dict[str, Query]:
        """query_id -> query of one domain (no corpus is read)."""
        return _queries(self, domain)

    def qrels(self, domain: str) -> dict[str, dict[str, int]]:
        """query_id -> doc_id -> relevance of one domain."""
        return self.judgments(domain).qrels

    def excluded(self, domain: str, negatives: str = "exclude") -> dict[str, frozenset[str]]:
        """query_id -> the doc ids the protocol (and a run's policy) excludes in a domain."""
        return self.judgments(domain, negatives).excluded

    def documents(self, domain: str) -> dict[str, Document]:
        """doc_id -> document of one domain's corpus, built by the task's rules."""
        return _documents(self, domain)

    def shown_documents(self, domain: str, ids: Collection[str]) -> dict[str, Document]:
        """doc_id -> document for the items a page shows (missing ids are left out).

        Passages (tasks 1-2) are read by id, never the whole corpus; image and pair items
        (tasks 3-4) need the corpus built by the task's rules, read once per domain.
        """
        if not ids:
            return {}
        if TASK_TABLE[self.task].corpus != "passages":
            corpus = self.documents(domain)
            return {i: corpus[i] for i in ids if i in corpus}
        texts = _passages(self.source, domain, tuple(sorted(set(ids))))
        return {i: Document(i, text) for i, text in texts.items()}

    def query(self, domain: str, query_id: str) -> QueryRef:
        """One query of the view, by its domain and id (read when its parts are asked for)."""
        return QueryRef(self, domain, query_id)


@dataclass(frozen=True)
class QueryRef:
    """One query of a task view: what the pages pass from one to the next.

    Attributes:
        view: The task view the query belongs to.
        domain: The query's domain.
        query_id: The query's id.
    """

    view: TaskView
    domain: str
    query_id: str

    @property
    def key(self) -> tuple[str, int, str, str, str]:
        """What names the query: its view's key, its domain and its id."""
        return (*self.view.key, self.domain, self.query_id)

    def exists(self) -> bool:
        """Whether the view holds this query."""
        return self.domain in self.view.domains() and self.query_id in self.view.queries(
            self.domain
        )

    @property
    def query(self) -> Query:
        """The query itself: its text and images."""
        return self.view.queries(self.domain)[self.query_id]

    @property
    def qrels(self) -> dict[str, int]:
        """doc_id -> relevance of the query's judged documents (empty if none)."""
        return self.view.qrels(self.domain).get(self.query_id, {})

    def excluded(self, negatives: str = "exclude") -> frozenset[str]:
        """The doc ids the protocol (and a run's ``negative_ids`` policy) excludes."""
        return self.view.excluded(self.domain, negatives).get(self.query_id, frozenset())


@lru_cache(maxsize=64)
def _queries(view: TaskView, domain: str) -> dict[str, Query]:
    return {q.query_id: q for q in view.judgments(domain).queries}


@lru_cache(maxsize=8)
def _documents(view: TaskView, domain: str) -> dict[str, Document]:
    return {doc.doc_id: doc for doc in view.data(domain).corpus}


@lru_cache(maxsize=64)
def _passages(source: Source, domain: str, ids: tuple[str, ...]) -> dict[str, str]:
    return source.passages(domain, ids)

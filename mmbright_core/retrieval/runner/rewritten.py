"""Running any retriever on a rewritten query set (``mmbright run --queries Q``).

:class:`Rewritten` gives the retriever each query with the text the set holds for it
(:mod:`mmbright_core.io.rewrites`) and everything else as it was: its images, its
judgments, its exclusions. The run records the set's sha256 and the rewriting settings
(model, endpoint, prompt and its sha256, combine, parameters, image policy) in its
``config.json``, and its folder name carries the prompt and the set's hash, so a plain
run's folder is never written over (docs/commands.md, "Rewritten queries"). Each domain
folder gets ``rewrites.json``: the original and the rewritten text of every query, so that
the dashboard shows what the rewrite added from the run alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import InputError, show
from mmbright_core.io.rewrites import QuerySet, Rewrite
from mmbright_core.io.run_rewrites import REWRITES_FILE, domain_rewrites_json
from mmbright_core.retrieval.base import Retriever
from mmbright_core.types import Query, TaskData

if TYPE_CHECKING:
    from mmbright_core.retrieval.explanation import Attribution, Question

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class Rewritten:
    """A retriever that ranks with a query set's texts in place of the queries' own.

    Everything but the query text, the label, the settings and the recorded files is the
    wrapped retriever's own (attributes too, so an engine's capabilities stay visible).

    Args:
        inner: The retriever.
        rewrites: ``(domain, query_id)`` -> the rewrite of that query.
        record: What the run records of the set (:func:`set_record`).
        task: The task the rewrites are of.
        name: Where the rewrites come from, for messages (the set's file).
    """

    def __init__(
        self,
        inner: Retriever,
        rewrites: Mapping[tuple[str, str], Rewrite],
        record: Mapping[str, Any],
        task: int,
        name: str,
    ) -> None:
        self.inner, self.rewrites_of, self.record = inner, rewrites, dict(record)
        self.task, self.source_name = task, name
        self.name = inner.name
        self.tasks = inner.tasks & {task}

    @classmethod
    def of(cls, inner: Retriever, queries: QuerySet) -> Rewritten:
        """``inner`` run on the query set ``queries``."""
        return cls(inner, queries.rewrites, set_record(queries), queries.task, queries.name)

    def label(self) -> str:
        """Return ``<inner label>-rw-<prompt>-<first 8 hex of the set's sha256>``."""
        prompt = _UNSAFE.sub("_", str(self.record["rewrite_prompt"])).strip("_")
        return f"{self.inner.label()}-rw-{prompt or 'prompt'}-{self.record[SET_KEY][:8]}"

    def settings(self) -> dict[str, Any]:
        """Return the inner retriever's settings plus the set's hash and rewriting settings."""
        return {**self.inner.settings(), **self.record}

    @property
    def recorded_files(self) -> tuple[str, ...]:
        """The inner retriever's recorded files, and ``rewrites.json``."""
        return (*getattr(self.inner, "recorded_files", ()), REWRITES_FILE)

    def rewrites(self, data: TaskData) -> list[Rewrite]:
        """The set's rewrite of every query of ``data``, in order.

        Raises:
            InputError: The set is of another task, misses a query, or was made from
                another text of it.
        """
        if data.task != self.task:
            raise InputError(
                "the query set was written for another task",
                source=self.source_name,
                expected=f"task {data.task}",
                found=f"task {self.task}",
                hint="Rewrite this task's queries (mmbright rewrite --task N)",
            )
        return [self._rewrite(data.domain, query) for query in data.queries]

    def _rewrite(self, domain: str, query: Query) -> Rewrite:
        found = self.rewrites_of.get((domain, query.query_id))
        if found is None:
            covered = dict.fromkeys(d for d, _ in self.rewrites_of)
            raise InputError(
                "the query set has no rewrite of a query",
                source=self.source_name,
                found=f"domain {show(domain)}, query {show(query.query_id)}",
                hint=f"Rewrite the domain too (mmbright rewrite --domain {domain}) or run "
                f"only the domains the set covers: {', '.join(covered)}",
            )
        if found.original != query.text:
            raise InputError(
                "the query set was written from another text of a query",
                source=self.source_name,
                found=f"domain {show(domain)}, query {show(query.query_id)}",
                hint="The data changed since: rewrite the queries again",
            )
        return found

    def rewritten(self, data: TaskData) -> TaskData:
        """``data`` with every query's text replaced by the set's."""
        texts = [r.query for r in self.rewrites(data)]
        queries = tuple(
            dataclasses.replace(q, text=t) for q, t in zip(data.queries, texts, strict=True)
        )
        return dataclasses.replace(data, queries=queries)

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank with the inner retriever on the rewritten queries."""
        return self.inner.retrieve(self.rewritten(data), source, k)

    def records(self, data: TaskData, source: ImageSource | None) -> dict[str, str]:
        """The inner retriever's records (of the rewritten queries), and ``rewrites.json``."""
        inner = getattr(self.inner, "records", None)
        found = dict(inner(self.rewritten(data), source)) if callable(inner) else {}
        found[REWRITES_FILE] = domain_rewrites_json(self.record, self.rewrites(data))
        return found

    def explain_scores(self, question: Question) -> Mapping[str, Attribution]:
        """Explain the inner retriever's scores of the rewritten query.

        A lexical retriever also tells the terms only the LLM wrote (origin ``llm``) from
        those of the original text; any other explains the rewritten text as its text.
        """
        rewrite = self._rewrite(question.data.domain, question.query)
        asked = dataclasses.replace(
            question,
            query=dataclasses.replace(question.query, text=rewrite.query),
            rewrite=(rewrite.original, rewrite.answer or ""),
        )
        found: Mapping[str, Attribution] = self.inner.explain_scores(asked)  # type: ignore[attr-defined]
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


SET_KEY = "queries_sha256"
"""The option of a run's configuration that marks a run on rewritten queries."""


def set_record(queries: QuerySet) -> dict[str, Any]:
    """What a run on ``queries`` records of them: the set's sha256 and how it was written."""
    shared = queries.settings
    prompt, llm = shared["prompt"], shared["llm"]
    template = str(prompt["template"]).encode("utf-8")
    return {
        SET_KEY: queries.sha256,
        "rewrite_source": shared["source"],
        "rewrite_model": llm["model"],
        "rewrite_endpoint": llm["endpoint"],
        "rewrite_parameters": json.dumps(llm["parameters"], sort_keys=True),
        "rewrite_prompt": prompt["name"],
        "rewrite_prompt_sha256": hashlib.sha256(template).hexdigest(),
        "rewrite_system": prompt.get("system"),
        "rewrite_query_newlines": prompt.get("query_newlines"),
        "rewrite_combine": prompt["combine"],
        "rewrite_image_policy": prompt["image_policy"],
    }


def is_set_setting(name: str) -> bool:
    """Whether an option of a run's configuration records its rewritten query set."""
    return name == SET_KEY or name.startswith("rewrite_")

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
from typing import Any

from mmbright_core.errors import InputError, show
from mmbright_core.io.rewrites import REWRITES_FILE, QuerySet, Rewrite, domain_rewrites_json
from mmbright_core.retrieval.base import ImageSource, Retriever
from mmbright_core.types import Query, TaskData

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class Rewritten:
    """A retriever that ranks with a query set's texts in place of the queries' own.

    Everything but the query text, the label, the settings and the recorded files is the
    wrapped retriever's own (attributes too, so an engine's capabilities stay visible).

    Args:
        inner: The retriever.
        queries: The rewritten query set.
    """

    def __init__(self, inner: Retriever, queries: QuerySet) -> None:
        self.inner, self.queries = inner, queries
        self.name = inner.name
        self.tasks = inner.tasks & {queries.task}

    def label(self) -> str:
        """Return ``<inner label>-rw-<prompt>-<first 8 hex of the set's sha256>``."""
        prompt = _UNSAFE.sub("_", str(self.queries.settings["prompt"]["name"])).strip("_")
        return f"{self.inner.label()}-rw-{prompt or 'prompt'}-{self.queries.sha256[:8]}"

    def settings(self) -> dict[str, Any]:
        """Return the inner retriever's settings plus the set's hash and rewriting settings."""
        shared = self.queries.settings
        prompt, llm = shared["prompt"], shared["llm"]
        template = str(prompt["template"]).encode("utf-8")
        return {
            **self.inner.settings(),
            "queries_sha256": self.queries.sha256,
            "rewrite_source": shared["source"],
            "rewrite_model": llm["model"],
            "rewrite_endpoint": llm["endpoint"],
            "rewrite_parameters": json.dumps(llm["parameters"], sort_keys=True),
            "rewrite_prompt": prompt["name"],
            "rewrite_prompt_sha256": hashlib.sha256(template).hexdigest(),
            "rewrite_combine": prompt["combine"],
            "rewrite_image_policy": prompt["image_policy"],
        }

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
        if data.task != self.queries.task:
            raise InputError(
                "the query set was written for another task",
                source=self.queries.name,
                expected=f"task {data.task}",
                found=f"task {self.queries.task}",
                hint="Rewrite this task's queries (mmbright rewrite --task N)",
            )
        return [self._rewrite(data.domain, query) for query in data.queries]

    def _rewrite(self, domain: str, query: Query) -> Rewrite:
        found = self.queries.rewrites.get((domain, query.query_id))
        if found is None:
            raise InputError(
                "the query set has no rewrite of a query",
                source=self.queries.name,
                found=f"domain {show(domain)}, query {show(query.query_id)}",
                hint=f"Rewrite the domain too (mmbright rewrite --domain {domain}) or run "
                f"only the domains the set covers: {', '.join(self.queries.domains())}",
            )
        if found.original != query.text:
            raise InputError(
                "the query set was written from another text of a query",
                source=self.queries.name,
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
        found[REWRITES_FILE] = domain_rewrites_json(self.queries, self.rewrites(data))
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

"""A run's recorded configuration, read once, and what it says of where the run came from.

``mmbright run`` and ``mmbright rerank`` write a :class:`~mmbright_core.retrieval.base.RunConfig`
beside their outputs (``config.json``). It is read and checked once, when the folder is
loaded (:func:`recorded_config`), and its lineage is had from the typed configuration
(:class:`Lineage`): the first stage a reranked run reordered, the rewritten query set a run
ran on. Every reader (the dashboard, ``mmbright compare``) asks these, never the raw JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmbright_core.io.official import OfficialOutputs
from mmbright_core.rerank.base import FIRST_STAGE
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.retrieval.runner.rewritten import SET_KEY


def recorded_config(outputs: OfficialOutputs) -> RunConfig | None:
    """The configuration an outputs folder records, checked, or None where it records none.

    Raises:
        InputError: Its ``config.json`` is not a run configuration (``RunConfig.from_dict``).
    """
    if not outputs.run_config:
        return None
    return RunConfig.from_dict(outputs.run_config, source=str(outputs.path / "config.json"))


@dataclass(frozen=True)
class Reranks:
    """What a reranked run records of its first stage (:mod:`mmbright_core.rerank.stage`).

    Attributes:
        label: The first stage's short name, if recorded.
        path: Where the first stage was read from, if recorded.
        fingerprint: The sha256 of the first stage's scores, if recorded.
        reranker: The reranker's name, if recorded.
        depth: How many documents of each query it reordered, as recorded.
    """

    label: str | None
    path: str | None
    fingerprint: str | None
    reranker: str | None
    depth: Any


@dataclass(frozen=True)
class RewrittenQueries:
    """The rewritten query set a run ran on (``mmbright run --queries``).

    Attributes:
        sha256: The set's sha256.
        model: The LLM that rewrote the queries, if recorded.
        prompt: The prompt's name, if recorded.
    """

    sha256: str
    model: str | None
    prompt: str | None


@dataclass(frozen=True)
class Lineage:
    """Where a run came from, as its configuration records it.

    Attributes:
        reranks: The first stage it reranks, for a reranked run.
        queries: The rewritten query set it ran on, for a run on rewritten queries.
    """

    reranks: Reranks | None = None
    queries: RewrittenQueries | None = None

    @classmethod
    def of(cls, config: RunConfig | None) -> Lineage:
        """The lineage ``config`` records (none for a run without a configuration)."""
        if config is None:
            return cls()
        options = dict(config.options)
        first = options.get(FIRST_STAGE)
        reranks = None
        if isinstance(first, Mapping):
            reranks = Reranks(
                _text(first.get("label")),
                _text(first.get("path")),
                _text(first.get("fingerprint")),
                _text(options.get("reranker")),
                options.get("depth"),
            )
        queries = None
        if SET_KEY in options:
            queries = RewrittenQueries(
                str(options[SET_KEY]),
                _text(options.get("rewrite_model")),
                _text(options.get("rewrite_prompt")),
            )
        return cls(reranks, queries)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

"""What a query rewrite changed: a run on rewritten queries beside its plain run, per domain.

A run made by ``mmbright run --queries Q`` records the query set's sha256 and how the set
was written among its options (docs/commands.md, "Rewritten queries"). Its *plain run* is
the run whose recorded configuration equals the rewritten run's with those options
removed: the same retriever, model, settings, task, protocol, source, cut and policy for
``negative_ids``, by the rule that decides whether an output folder holds one
configuration (:func:`mmbright_core.io.recorded.config_differences`: the package version
aside, and a top-level field one configuration predates not held against it). A run with
no recorded configuration is never taken for it: nothing says how it was made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mmbright_core.analysis.lineage import Lineage, RewrittenQueries
from mmbright_core.analysis.two_stage import ALL_DOMAINS, MEASURE, TwoStage
from mmbright_core.io.recorded import config_differences
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.retrieval.runner.rewritten import SET_KEY, is_set_setting

COLUMNS = ["domain", "queries", "plain", "rewritten", "gain", "helped", "hurt"]

Configs = Mapping[str, RunConfig | None]
"""name -> the run's recorded configuration (None: it has none)."""
Scorer = Callable[[str, str], pd.DataFrame]
"""(plain, rewritten) -> the results table of the two runs (``run``, ``domain``,
``query_id`` and ``nDCG@10`` columns, scored the benchmark's way)."""


def plain_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without the options that record its rewritten query set."""
    options = config.get("options") or {}
    kept = {name: value for name, value in options.items() if not is_set_setting(name)}
    return {**config, "options": kept}


def is_plain_run_of(candidate: Mapping[str, Any] | None, rewritten: Mapping[str, Any]) -> bool:
    """Whether ``candidate`` is the plain run of the rewritten run configured as ``rewritten``.

    Args:
        candidate: A run's recorded configuration (None or empty: it has none, never a
            match).
        rewritten: The rewritten run's recorded configuration.
    """
    options = (candidate or {}).get("options")
    if not candidate or (isinstance(options, Mapping) and SET_KEY in options):
        return False  # none recorded, or a rewritten run
    return not config_differences(candidate, plain_config(rewritten))


def find_plain(rewritten: str, configs: Configs, prefer: str | None = None) -> str | None:
    """The loaded run that is the plain run of ``rewritten``, ``prefer`` looked at first."""
    recorded = configs.get(rewritten)
    if recorded is None:
        return None
    names = [n for n in configs if n not in (prefer, rewritten)]
    if prefer is not None and prefer in configs:
        names.insert(0, prefer)
    wanted = recorded.to_dict()
    return next((n for n in names if is_plain_run_of(_recorded(configs[n]), wanted)), None)


def _recorded(config: RunConfig | None) -> dict[str, Any] | None:
    return None if config is None else config.to_dict()


def rewrite_table(scores: pd.DataFrame, plain: str, rewritten: str) -> pd.DataFrame:
    """nDCG@10 of the plain and the rewritten run per domain, and the queries helped or hurt.

    Args:
        scores: The results table of both runs (one row per run and query).
        plain: The plain run's name in ``scores``.
        rewritten: The rewritten run's name.

    Returns:
        One row per domain (queries both runs were scored on): both means, the gain and
        how many queries the rewrite helped (rewritten above plain) or hurt; then the
        mean over the domains (unweighted, as the benchmark's figure) and the counts' sums.
    """
    paired = (
        scores.loc[scores["run"].isin([plain, rewritten])]
        .pivot_table(index=["domain", "query_id"], columns="run", values=MEASURE)
        .reindex(columns=[plain, rewritten])
        .dropna()
    )
    rows = [
        _row(domain, group[plain], group[rewritten])
        for domain, group in paired.groupby(level="domain", sort=False)
    ]
    if rows:
        means = {c: sum(r[c] for r in rows) / len(rows) for c in ("plain", "rewritten")}
        sums = {c: sum(r[c] for r in rows) for c in ("queries", "helped", "hurt")}
        rows.append(
            {"domain": ALL_DOMAINS, **means, **sums, "gain": means["rewritten"] - means["plain"]}
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _row(domain: str, plain: pd.Series, rewritten: pd.Series) -> dict[str, Any]:
    return {
        "domain": domain,
        "queries": len(plain),
        "plain": float(plain.mean()),
        "rewritten": float(rewritten.mean()),
        "gain": float(rewritten.mean() - plain.mean()),
        "helped": int((rewritten > plain).sum()),
        "hurt": int((rewritten < plain).sum()),
    }


@dataclass(frozen=True)
class RewriteStage:
    """A run on rewritten queries and its plain run, as a comparison shows them.

    Attributes:
        rewritten: The rewritten run's name.
        plain: The loaded run that is its plain run, or None.
        plain_label: What made the rewritten run (its model, else its retriever).
        model: The LLM that rewrote the queries.
        prompt: The prompt's name.
        queries_sha256: The sha256 of the query set.
        reranked: The run of the pair that reranks the rewritten run, if that is how it
            was reached (a chain plain -> rewritten -> reranked).
        table: :func:`rewrite_table` of the two, when the plain run is loaded.
    """

    rewritten: str
    plain: str | None
    plain_label: str
    model: str
    prompt: str
    queries_sha256: str
    reranked: str | None = None
    table: pd.DataFrame | None = None

    def caption(self) -> str:
        """One line: which run ran on which queries, and its plain run if loaded."""
        plain = "." if self.plain is None else f"; its plain run is {self.plain}."
        return (
            f"{self.rewritten} runs {self.plain_label} on queries rewritten by {self.model} "
            f"({self.prompt}, set {self.queries_sha256[:8]}){plain}"
        )

    def chain(self) -> str | None:
        """``plain -> rewritten -> reranked`` when the rewritten run is a first stage."""
        if self.reranked is None:
            return None
        plain = self.plain if self.plain is not None else "its plain run (not loaded)"
        return f"{plain} → {self.rewritten} → {self.reranked}"


def find_rewrite(
    pair: tuple[str, str],
    configs: Configs,
    score: Scorer,
    two_stage: TwoStage | None = None,
) -> RewriteStage | None:
    """Return B (else A) of ``pair`` as a rewritten run with its plain run, or None.

    A reranked run of the pair whose first stage is a loaded rewritten run (``two_stage``)
    gives that first stage, with the chain. The plain run is looked for in the other run
    of the pair first, then among all of ``configs``.

    Args:
        pair: The names of runs A and B.
        configs: name -> recorded configuration, for every loaded run.
        score: How the results table of the plain and the rewritten run is had.
        two_stage: The pair's reranked run with its first stage, if it has one.
    """
    found = _rewritten_of(pair, configs, two_stage)
    if found is None:
        return None
    rewritten, reranked, recorded, queries = found
    other = next((n for n in pair if n not in (rewritten, reranked)), None)
    plain = find_plain(rewritten, configs, prefer=other)
    table = None if plain is None else rewrite_table(score(plain, rewritten), plain, rewritten)
    return RewriteStage(
        rewritten,
        plain,
        str(recorded.model or recorded.retriever),
        str(queries.model),
        str(queries.prompt),
        queries.sha256,
        reranked,
        table,
    )


def _rewritten_of(
    pair: tuple[str, str], configs: Configs, two_stage: TwoStage | None
) -> tuple[str, str | None, RunConfig, RewrittenQueries] | None:
    # (the rewritten run, the run of the pair reranking it or None, its configuration and
    # queries), or None: B, else A, else the first stage the pair's reranked run reorders.
    candidates: list[tuple[str | None, str | None]] = [(pair[1], None), (pair[0], None)]
    if two_stage is not None:
        candidates.append((two_stage.first, two_stage.reranked))
    for name, reranked in candidates:
        config = None if name is None else configs.get(name)
        queries = Lineage.of(config).queries
        if name is not None and config is not None and queries is not None:
            return name, reranked, config, queries
    return None

"""Score runs on a whole MM-BRIGHT task: exclusions, the top-1000 cut, and the macro average.

For each domain, a query's excluded ids are removed from its ranking *before* the ranking is
cut to 1,000 (SPEC §3), the domain is evaluated against the task's qrels (queries with no
judgment are dropped, SPEC §4), and the benchmark figure is the unweighted mean over the
domains scored. The result names the task protocol and the missing-query rule it used.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from mmbright_core.data.sources import Source
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.metrics import evaluate
from mmbright_core.ranking import top_k
from mmbright_core.types import EvalResult, Missing, Protocol4, Run

RUN_DEPTH = 1000
"""Every run is cut to its top 1,000 per query (SPEC §3)."""


@dataclass(frozen=True)
class TaskScores:
    """A task's scores over domains.

    Attributes:
        task: The task number.
        protocol: The Task 4 protocol used (``"paper"`` for tasks 1-3).
        missing: The rule for judged queries absent from a run (``"skip"`` or ``"zero"``).
        per_domain: domain -> its evaluation.
        query_counts: domain -> number of queries that entered its averages.
        macro: measure name -> unweighted mean over the domains scored (NaN if none was).
        scored_domains: Domains with at least one evaluated query, which enter ``macro``.
    """

    task: int
    protocol: Protocol4
    missing: Missing
    per_domain: dict[str, EvalResult]
    query_counts: dict[str, int]
    macro: dict[str, float]
    scored_domains: tuple[str, ...]


def apply_protocol(
    run: Run, excluded: Mapping[str, Collection[str]], depth: int = RUN_DEPTH
) -> dict[str, dict[str, float]]:
    """Drop each query's excluded ids from its ranking, then cut it to ``depth`` documents.

    Args:
        run: query_id -> doc_id -> score.
        excluded: query_id -> doc ids to remove before the cut.
        depth: How many documents to keep per query.
    """
    return {qid: top_k(scores, depth, excluded.get(qid, ())) for qid, scores in run.items()}


def runs_by_domain(
    source: Source,
    task: int,
    run: Run,
    *,
    domains: Sequence[str] | None = None,
    protocol: Protocol4 = "paper",
) -> dict[str, dict[str, dict[str, float]]]:
    """Split one run over all domains into one run per domain, by the domains' query ids.

    A run file may hold every domain's queries at once; each query is given to the domain
    whose task queries include it. Queries no chosen domain knows are left out; evaluation
    counts them as extra.

    Args:
        source: The dataset copy.
        task: 1, 2, 3 or 4.
        run: query_id -> doc_id -> score, over any number of domains.
        domains: The domains to consider (default: every domain of the source).
        protocol: The Task 4 protocol.

    Returns:
        domain -> its part of the run, for each domain with at least one query in the run.

    Raises:
        InputError: A query id belongs to more than one domain, so the split is ambiguous.
    """
    owner: dict[str, str] = {}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for domain in domains if domains is not None else source.domains():
        for query in source.judgments(task, domain, protocol).queries:
            if query.query_id in run:
                if query.query_id in owner:
                    raise InputError(
                        f"query id {query.query_id!r} belongs to two domains",
                        expected="query ids unique across the domains scored",
                        found=f"{owner[query.query_id]!r} and {domain!r}",
                        hint="Score one domain at a time with --domain, or use an official "
                        "outputs folder, which holds one run per domain",
                    )
                owner[query.query_id] = domain
                out.setdefault(domain, {})[query.query_id] = dict(run[query.query_id])
    return out


def score_task(
    source: Source,
    task: int,
    runs: Mapping[str, Run],
    *,
    domains: Sequence[str] | None = None,
    protocol: Protocol4 = "paper",
    measures: Iterable[str] = ("nDCG@10",),
    missing: Missing = "skip",
) -> TaskScores:
    """Score one run per domain on a task and average over domains.

    Args:
        source: The dataset copy whose judgments define the task.
        task: 1, 2, 3 or 4.
        runs: domain -> run (query_id -> doc_id -> score).
        domains: The domains to score (default: those in ``runs``); a domain without a run
            is scored as an empty run, which counts only under ``missing="zero"``.
        protocol: The Task 4 protocol, ``"paper"`` or ``"legacy"``.
        measures: Measure names such as ``"nDCG@10"``.
        missing: ``"skip"`` averages over queries in both run and qrels (the official
            harness); ``"zero"`` counts judged queries absent from the run as 0.

    Raises:
        UnknownNameError: For a domain the source does not hold.
    """
    chosen = tuple(domains) if domains is not None else tuple(sorted(runs))
    wanted = tuple(measures)
    per_domain: dict[str, EvalResult] = {}
    used: Protocol4 = protocol
    for domain in chosen:
        if domain not in source.domains():
            raise UnknownNameError("domain", domain, source.domains())
        data = source.judgments(task, domain, protocol)
        used = data.protocol
        run = apply_protocol(runs.get(domain, {}), data.excluded)
        per_domain[domain] = evaluate(data.qrels, run, measures=wanted, missing=missing)
    scored = tuple(d for d, r in per_domain.items() if r.counts.evaluated > 0)
    names = next(iter(per_domain.values())).aggregate.keys() if per_domain else ()
    macro = {
        name: math.fsum(per_domain[d].aggregate[name] for d in scored) / len(scored)
        if scored
        else math.nan
        for name in names
    }
    return TaskScores(
        task=task,
        protocol=used,
        missing=missing,
        per_domain=per_domain,
        query_counts={d: r.counts.evaluated for d, r in per_domain.items()},
        macro=macro,
        scored_domains=scored,
    )

"""Running a retriever over a task's domains and writing the official output folders.

Layout (SPEC §5) under ``<out>/<subdir>/``: ``<domain>/scores.json`` and ``metrics.json``,
``summary.json``; and beside them ``run.trec`` (every domain's run, query ids written
``<domain>/<query id>`` because ids repeat across domains) and ``config.json``. Each domain
folder also gets a ``config.json``, written last: a domain is reused only when that stored
configuration equals the new one (the official code reuses any existing ``scores.json``,
SPEC §7), and a run killed mid-domain leaves no configuration there, so it re-runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mmbright_core.data.sources import Source
from mmbright_core.data.tasks import negatives_for
from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.official import (
    TASK_TYPES,
    official_subdir,
    write_domain_outputs,
    write_summary,
)
from mmbright_core.io.runs import read_run, write_trec_run
from mmbright_core.metrics.official import official_metrics
from mmbright_core.ranking import top_k
from mmbright_core.retrieval.base import DEFAULT_K, Retriever, RunConfig, check_k, check_task
from mmbright_core.types import Run

CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class DomainOutcome:
    """What running one domain gave.

    Attributes:
        domain: The domain.
        reused: True when stored outputs with an equal configuration were kept.
        run: The domain's run (top ``k``, exclusions applied).
        metrics: The official metrics of the run.
    """

    domain: str
    reused: bool
    run: dict[str, dict[str, float]]
    metrics: dict[str, float]


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run_task` wrote.

    Attributes:
        task_dir: The ``<out>/<subdir>`` folder.
        config: The run's configuration.
        domains: One outcome per domain, in the order run.
    """

    task_dir: Path
    config: RunConfig
    domains: tuple[DomainOutcome, ...]


def run_task(
    source: Source,
    task: int,
    retriever: Retriever,
    out_dir: str | os.PathLike[str],
    *,
    domains: Sequence[str] | None = None,
    protocol: str = "paper",
    k: int = DEFAULT_K,
    negatives: str = "exclude",
) -> RunOutcome:
    """Run ``retriever`` on ``task`` for each domain and write the output folders.

    Args:
        source: The data source.
        task: The task number.
        retriever: The retriever (it must support ``task``).
        out_dir: The output root; the official ``<subdir>`` is created inside it.
        domains: The domains to run (default: every domain of the source).
        protocol: The Task 4 judgment protocol (tasks 1-3 record ``paper``: it has no effect).
        k: The per-query cut.
        negatives: ``"exclude"`` (official) or ``"keep"`` each query's ``negative_ids``
            (tasks 1-2; tasks 3-4 record ``exclude``: it has no effect there).

    Returns:
        What was run, reused and written.
    """
    check_task(retriever, task)
    check_k(k)
    if protocol not in ("paper", "legacy"):
        raise InputError("unknown protocol", expected="paper or legacy", found=repr(protocol))
    protocol = protocol if task == 4 else "paper"
    policy = negatives_for(task, negatives)
    chosen = tuple(source.check_domain(d) for d in domains) if domains else source.domains()
    config = RunConfig.build(
        retriever, task=task, protocol=protocol, source=source.name, k=k, negatives=policy
    )
    task_dir = Path(out_dir) / official_subdir(task, retriever.label())
    outcomes = []
    for domain in tqdm(chosen, desc=f"task {task} {retriever.name}", unit="domain", disable=None):
        outcome = _reuse(task_dir, domain, config)
        if outcome is None:
            outcome = _run_domain(source, task, retriever, task_dir, domain, config)
        outcomes.append(outcome)
    write_summary(
        task_dir, retriever.label(), TASK_TYPES[task], {o.domain: o.metrics for o in outcomes}
    )
    combined = {f"{o.domain}/{q}": docs for o in outcomes for q, docs in o.run.items()}
    write_trec_run(task_dir / "run.trec", combined, tag=retriever.label())
    summary = {"config": config.to_dict(), "domains": [o.domain for o in outcomes]}
    atomic_write_text(task_dir / CONFIG_FILE, _dump(summary))
    return RunOutcome(task_dir, config, tuple(outcomes))


def _domain_config(config: RunConfig, domain: str) -> dict[str, Any]:
    # Through JSON so that it compares equal to what a stored file reads back as.
    stored: dict[str, Any] = json.loads(_dump({"config": config.to_dict(), "domain": domain}))
    return stored


def _reuse(task_dir: Path, domain: str, config: RunConfig) -> DomainOutcome | None:
    folder = task_dir / domain
    paths = [folder / name for name in (CONFIG_FILE, "scores.json", "metrics.json")]
    if not all(p.is_file() for p in paths):
        return None
    try:
        stored = json.loads(paths[0].read_text(encoding="utf-8"))
        metrics = json.loads(paths[2].read_text(encoding="utf-8"))
        # Read back through RunConfig, so that a field added since (with the default the
        # older run necessarily used) compares equal, and any other difference does not.
        if _domain_config(RunConfig.from_dict(stored["config"]), stored["domain"]) != (
            _domain_config(config, domain)
        ):
            return None
        scores = read_run(paths[1], format="json")
    except (OSError, ValueError, KeyError, TypeError):  # InputError is a ValueError
        return None  # unreadable: run again rather than trust it
    return DomainOutcome(domain, True, scores, metrics)


def _run_domain(
    source: Source, task: int, retriever: Retriever, task_dir: Path, domain: str, config: RunConfig
) -> DomainOutcome:
    # The old configuration goes first: outputs written under a new one must never sit
    # beside it if the run stops half-way.
    (task_dir / domain / CONFIG_FILE).unlink(missing_ok=True)
    data = source.task(task, domain, config.protocol, negatives=config.negatives)
    found = retriever.retrieve(data, source, config.k)
    run = _cut(found, data.excluded, config.k)
    metrics = official_metrics(data.qrels, run)
    write_domain_outputs(task_dir, domain, run, metrics)
    atomic_write_text(task_dir / domain / CONFIG_FILE, _dump(_domain_config(config, domain)))
    return DomainOutcome(domain, False, run, metrics)


def _cut(run: Run, excluded: dict[str, frozenset[str]], k: int) -> dict[str, dict[str, float]]:
    # Every backend cuts already; doing it again here holds any registered retriever to the
    # protocol (exclusions before the top-k cut, SPEC §3).
    return {q: top_k(docs, k, excluded.get(q, frozenset())) for q, docs in run.items()}


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"

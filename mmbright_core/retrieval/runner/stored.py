"""A run's stored domains: the folder claimed first, a domain reused when its record matches.

A domain folder's ``config.json`` is written last (:mod:`mmbright_core.retrieval.runner.task_run`),
so a domain is reused only when that stored configuration equals the new one (the official
code reuses any existing ``scores.json``, docs/protocol.md, What peer tools do differently),
and when every file the run writes there exists; a run killed mid-domain leaves no
configuration there, so it re-runs. Before any domain is written, the task folder's
``config.json`` claims the folder for the run's configuration and names every domain it
will hold: the chosen ones and the folder's other domains of this configuration, kept from
earlier runs (:mod:`mmbright_core.retrieval.runner.folders` says which folder may be claimed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.official_json import read_metrics
from mmbright_core.io.runs import read_run
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.retrieval.runner.folders import CONFIG_FILE, Guard, held_domains

TASK_FILES = ("summary.json", "run.trec", CONFIG_FILE)
"""The files of a task folder, beside its domain folders."""
DOMAIN_FILES = (CONFIG_FILE, "scores.json", "metrics.json")
"""The files every run writes in a domain folder (its configuration first)."""


@dataclass(frozen=True)
class DomainOutcome:
    """What running one domain gave.

    Attributes:
        domain: The domain.
        reused: True when stored outputs with an equal configuration were kept.
        run: The domain's run (top ``k``, exclusions applied).
        metrics: The official metrics of the run.
        warnings: What made its scores lower than they look, one sentence each (none for
            a clean domain).
    """

    domain: str
    reused: bool
    run: dict[str, dict[str, float]]
    metrics: dict[str, float]
    warnings: tuple[str, ...] = ()


def plan_folder(
    task_dir: Path,
    every: Sequence[str],
    chosen: Sequence[str],
    config: RunConfig,
    names: Sequence[str],
    check: Guard,
) -> tuple[list[DomainOutcome], list[str]]:
    """Check every path a run will write, and find what the folder already holds of it.

    Nothing is written: the run claims the folder (:func:`claim_folder`) only once it has
    a domain's results to write, so a run that cannot start leaves no folder behind.

    Returns:
        The folder's other domains of this configuration, and every domain it will hold
        (in the source's order).
    """
    for path in (task_dir, *(task_dir / n for n in TASK_FILES)):
        check(path)
    for domain in chosen:
        for path in (task_dir / domain, *(task_dir / domain / n for n in names)):
            check(path)
    kept = _kept(task_dir, chosen, config, names, check)
    held = [d for d in every if d in chosen or d in {o.domain for o in kept}]
    return kept, held


def claim_folder(task_dir: Path, config: RunConfig, held: Sequence[str]) -> None:
    """Write the folder's config.json before any domain's files.

    A run stopped at any point then leaves a folder that says which configuration its
    files belong to (:mod:`mmbright_core.retrieval.runner.folders`).
    """
    claim = {"config": config.to_dict(), "domains": list(held)}
    atomic_write_text(task_dir / CONFIG_FILE, dump_json(claim))


def _kept(
    task_dir: Path, chosen: Sequence[str], config: RunConfig, names: Sequence[str], check: Guard
) -> list[DomainOutcome]:
    # The folder's other domains of this configuration stay in its summary, so that the
    # summary's figure is the one its domains' scores give.
    others = [d for d in held_domains(task_dir, check) if d not in chosen]
    found = (reuse_domain(task_dir, d, config, names) for d in others)
    return [o for o in found if o is not None]


def domain_config(config: RunConfig, domain: str) -> dict[str, Any]:
    """Return what a domain folder's ``config.json`` records for ``config``."""
    # Through JSON so that it compares equal to what a stored file reads back as.
    stored: dict[str, Any] = json.loads(dump_json({"config": config.to_dict(), "domain": domain}))
    return stored


def reuse_domain(
    task_dir: Path, domain: str, config: RunConfig, names: Sequence[str]
) -> DomainOutcome | None:
    """Return a domain's stored outcome, or None when it must be run (again).

    Args:
        task_dir: The task folder.
        domain: The domain.
        config: The run's configuration.
        names: The files a run writes in the domain folder (:data:`DOMAIN_FILES` first).
    """
    folder = task_dir / domain
    paths = [folder / name for name in names]
    if not all(p.is_file() for p in paths):
        return None
    try:
        stored = json.loads(paths[0].read_text(encoding="utf-8"))
        metrics, warnings = read_metrics(paths[2])
        # Read back through RunConfig, so that a field added since (with the default the
        # older run necessarily used) compares equal, and any other difference does not.
        if domain_config(RunConfig.from_dict(stored["config"]), stored["domain"]) != (
            domain_config(config, domain)
        ):
            return None
        scores = read_run(paths[1], format="json")
    except (OSError, ValueError, KeyError, TypeError):  # InputError is a ValueError
        return None  # unreadable: run again rather than trust it
    return DomainOutcome(domain, True, scores, metrics, warnings)


def dump_json(data: Any) -> str:
    """Return ``data`` as the indented, key-sorted JSON text every stored record uses."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"

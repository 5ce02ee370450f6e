"""Running a retriever over a task's domains and writing the official output folders.

Layout (docs/protocol.md, The official harness's files) under ``<out>/<subdir>/``:
``<domain>/scores.json`` and ``metrics.json``, ``summary.json``; and beside them ``run.trec`` (every
domain's run, query ids written ``<domain>/<query id>`` because ids repeat across domains) and
``config.json``. Each domain folder also gets a ``config.json``, written last: a domain is reused
only when that stored configuration equals the new one (the official code reuses any existing
``scores.json``, docs/protocol.md, What peer tools do differently), and a run killed mid-domain
leaves no configuration there, so it re-runs.

Nothing of another configuration is ever replaced (:mod:`mmbright_core.retrieval.folders`):
the folder's ``config.json`` claims it before any domain is written, a folder holding
another configuration (or outputs with none) is refused or passed over for
``<subdir>_2``..., and the summary covers every domain the folder holds.

A retriever may record what its run used beyond the scores (``ocr-*``: the words read from
each query image, ``ocr.json``): one that has ``recorded_files`` and ``records(data, source)``
gets those files written in each domain folder before its ``config.json``, and a domain is
reused only where they exist.

No silent zeros: what the data lacked (null texts, every corpus image undecodable, no
judgment; :mod:`mmbright_core.data.checks`) and a run in which no query got a single document
are said in the domain's ``metrics.json`` (``"warnings"``) and in :attr:`DomainOutcome.warnings`,
which the command line prints to stderr and the Run page shows.

Two hooks serve a caller other than the command line (the dashboard): ``progress`` hears of
each step, within a domain too, and ``guard`` is shown every folder and file before it is
read or written, so that a server can refuse a symlinked subfolder that leads elsewhere.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mmbright_core.data.choices import PROTOCOLS
from mmbright_core.data.sources import Source
from mmbright_core.data.tasks import negatives_for
from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.official import official_subdir, write_domain_outputs, write_summary
from mmbright_core.io.official_json import read_metrics
from mmbright_core.io.runs import read_run, write_trec_run
from mmbright_core.metrics.official import official_metrics
from mmbright_core.ranking import top_k
from mmbright_core.retrieval.base import DEFAULT_K, Retriever, RunConfig, check_k, check_task
from mmbright_core.retrieval.folders import CONFIG_FILE, choose_folder, held_domains
from mmbright_core.task_table import TASK_TABLE, task_info
from mmbright_core.types import Run, TaskData

QUERY_STEPS = 10
"""With a ``progress`` hook, a domain's queries are retrieved in up to this many batches."""
MIN_BATCH = 16
"""...of at least this many queries each: each batch re-checks the retriever's corpus cache."""


@dataclass(frozen=True)
class Progress:
    """One step of :func:`run_task`, for a progress bar.

    Attributes:
        domain: The domain in flight.
        index: Its place among the chosen domains (0-based).
        domains: How many domains were chosen.
        done: The share of this domain done, 0 to 1.
        step: What is happening (``"retrieving queries 32-47 of 120"``...).
    """

    domain: str
    index: int
    domains: int
    done: float
    step: str

    @property
    def overall(self) -> float:
        """The share of the whole run done, 0 to 1."""
        return (self.index + self.done) / self.domains


ProgressHook = Callable[[Progress], None]
Guard = Callable[[Path], None]
"""Called with each folder or file before it is read or written; raises to refuse it."""


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


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run_task` wrote.

    Attributes:
        task_dir: The ``<out>/<subdir>`` folder (``<subdir>_<n>`` when others were avoided).
        config: The run's configuration.
        domains: One outcome per domain, in the order run.
        kept: The folder's other domains of this configuration, from earlier runs: the
            summary and ``run.trec`` cover them too.
        avoided: ``(folder, reason)`` for each folder passed over (``new_folder=True``).
    """

    task_dir: Path
    config: RunConfig
    domains: tuple[DomainOutcome, ...]
    kept: tuple[DomainOutcome, ...] = ()
    avoided: tuple[tuple[Path, str], ...] = ()


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
    progress: ProgressHook | None = None,
    guard: Guard | None = None,
    new_folder: bool = False,
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
        progress: Called at each step: reading a domain, each batch of its queries (the
            queries are then retrieved in batches; every retriever ranks each query on its
            own, so the run is the same), writing, reuse.
        guard: Called with every folder and file before it is read or written; whatever
            it raises stops the run before anything is written there.
        new_folder: When ``<subdir>`` holds another configuration, write to the first of
            ``<subdir>_2``, ``<subdir>_3``... that is absent or holds this one, instead of
            refusing.

    Returns:
        What was run, reused and written.

    Raises:
        OutputConflictError: The folder holds outputs of another configuration, or with
            none recorded, and ``new_folder`` is False; nothing was written.
    """
    check_task(retriever, task)
    check_k(k)
    if protocol not in PROTOCOLS:
        raise InputError("unknown protocol", expected="paper or legacy", found=repr(protocol))
    protocol = protocol if task_info(task).protocols else "paper"
    policy = negatives_for(task, negatives)
    chosen = tuple(source.check_domain(d) for d in domains) if domains else source.domains()
    config = RunConfig.build(
        retriever, task=task, protocol=protocol, source=source.name, k=k, negatives=policy
    )
    check = guard or _no_guard
    check(Path(out_dir))
    subdir = official_subdir(task, retriever.label())
    choice = choose_folder(Path(out_dir), subdir, config, new_folder=new_folder, guard=check)
    task_dir = choice.task_dir
    names = (*_DOMAIN_FILES, *_recorded_files(retriever))
    kept, held = _claim(task_dir, source.domains(), chosen, config, names, check)
    outcomes = []
    for index, domain in enumerate(
        tqdm(chosen, desc=f"task {task} {retriever.name}", unit="domain", disable=None)
    ):
        tell = _teller(progress, domain, index, len(chosen))
        outcome = _reuse(task_dir, domain, config, names)
        if outcome is None:
            outcome = _run_domain(source, task, retriever, task_dir, domain, config, tell)
        tell(1.0, "reused from disk" if outcome.reused else "done")
        outcomes.append(outcome)
    every = sorted([*outcomes, *kept], key=lambda o: held.index(o.domain))
    write_summary(
        task_dir,
        retriever.label(),
        TASK_TABLE[task].task_type,
        {o.domain: o.metrics for o in every},
    )
    combined = {f"{o.domain}/{q}": docs for o in every for q, docs in o.run.items()}
    write_trec_run(task_dir / "run.trec", combined, tag=retriever.label())
    summary = {"config": config.to_dict(), "domains": [o.domain for o in every]}
    atomic_write_text(task_dir / CONFIG_FILE, _dump(summary))
    return RunOutcome(task_dir, config, tuple(outcomes), tuple(kept), choice.avoided)


_TASK_FILES = ("summary.json", "run.trec", CONFIG_FILE)
_DOMAIN_FILES = (CONFIG_FILE, "scores.json", "metrics.json")


_Tell = Callable[[float, str], None]


def _no_guard(path: Path) -> None:
    return None


def _teller(hook: ProgressHook | None, domain: str, index: int, count: int) -> _Tell:
    def tell(done: float, step: str) -> None:
        if hook is not None:
            hook(Progress(domain, index, count, done, step))

    return tell


def _claim(
    task_dir: Path,
    every: Sequence[str],
    chosen: Sequence[str],
    config: RunConfig,
    names: Sequence[str],
    check: Guard,
) -> tuple[list[DomainOutcome], list[str]]:
    """Check every path, then write the folder's config.json before any domain.

    A run stopped at any point then leaves a folder that says which configuration its
    files belong to (:mod:`mmbright_core.retrieval.folders`).

    Returns:
        The folder's other domains of this configuration, and every domain it will hold
        (in the source's order).
    """
    for path in (task_dir, *(task_dir / n for n in _TASK_FILES)):
        check(path)
    for domain in chosen:
        for path in (task_dir / domain, *(task_dir / domain / n for n in names)):
            check(path)
    kept = _kept(task_dir, chosen, config, names, check)
    held = [d for d in every if d in chosen or d in {o.domain for o in kept}]
    atomic_write_text(task_dir / CONFIG_FILE, _dump({"config": config.to_dict(), "domains": held}))
    return kept, held


def _kept(
    task_dir: Path, chosen: Sequence[str], config: RunConfig, names: Sequence[str], check: Guard
) -> list[DomainOutcome]:
    # The folder's other domains of this configuration stay in its summary, so that the
    # summary's figure is the one its domains' scores give.
    others = [d for d in held_domains(task_dir, check) if d not in chosen]
    found = (_reuse(task_dir, d, config, names) for d in others)
    return [o for o in found if o is not None]


def _domain_config(config: RunConfig, domain: str) -> dict[str, Any]:
    # Through JSON so that it compares equal to what a stored file reads back as.
    stored: dict[str, Any] = json.loads(_dump({"config": config.to_dict(), "domain": domain}))
    return stored


def _recorded_files(retriever: Retriever) -> tuple[str, ...]:
    return tuple(getattr(retriever, "recorded_files", ()))


def _reuse(
    task_dir: Path, domain: str, config: RunConfig, names: Sequence[str]
) -> DomainOutcome | None:
    folder = task_dir / domain
    paths = [folder / name for name in names]
    if not all(p.is_file() for p in paths):
        return None
    try:
        stored = json.loads(paths[0].read_text(encoding="utf-8"))
        metrics, warnings = read_metrics(paths[2])
        # Read back through RunConfig, so that a field added since (with the default the
        # older run necessarily used) compares equal, and any other difference does not.
        if _domain_config(RunConfig.from_dict(stored["config"]), stored["domain"]) != (
            _domain_config(config, domain)
        ):
            return None
        scores = read_run(paths[1], format="json")
    except (OSError, ValueError, KeyError, TypeError):  # InputError is a ValueError
        return None  # unreadable: run again rather than trust it
    return DomainOutcome(domain, True, scores, metrics, warnings)


def _run_domain(
    source: Source,
    task: int,
    retriever: Retriever,
    task_dir: Path,
    domain: str,
    config: RunConfig,
    tell: _Tell | None = None,
) -> DomainOutcome:
    # The old configuration goes first: outputs written under a new one must never sit
    # beside it if the run stops half-way.
    (task_dir / domain / CONFIG_FILE).unlink(missing_ok=True)
    if tell is not None:
        tell(0.0, "reading the domain")
    data = source.task(task, domain, config.protocol, negatives=config.negatives)
    if tell is None:
        found = retriever.retrieve(data, source, config.k)
    else:
        found = _retrieve_in_batches(retriever, data, source, config.k, tell)
        tell(0.95, "scoring and writing")
    run = _cut(found, data.excluded, config.k)
    metrics = official_metrics(data.qrels, run)
    warnings = (*data.report.warnings, *_nothing_ranked(data, run))
    write_domain_outputs(task_dir, domain, run, metrics, warnings)
    records = getattr(retriever, "records", None)
    for name, text in (records(data, source) if callable(records) else {}).items():
        atomic_write_text(task_dir / domain / name, text)
    atomic_write_text(task_dir / domain / CONFIG_FILE, _dump(_domain_config(config, domain)))
    return DomainOutcome(domain, False, run, metrics, warnings)


def _nothing_ranked(data: TaskData, run: Run) -> tuple[str, ...]:
    # A run that ranks no document for any query scores 0.0 on every measure: say why.
    if not data.queries or any(run.values()):
        return ()
    return (
        f"no document was ranked for any of the {len(data.queries):,} queries (the corpus "
        f"holds {len(data.corpus):,} documents after the protocol's drops); every score is 0",
    )


def _retrieve_in_batches(
    retriever: Retriever, data: TaskData, source: Source, k: int, tell: _Tell
) -> dict[str, dict[str, float]]:
    # The protocol ranks each query on its own (Retriever.retrieve), so batches of queries
    # give the same run; the corpus side is built once and kept (index, embedding cache).
    queries = data.queries
    size = max(MIN_BATCH, math.ceil(len(queries) / QUERY_STEPS))
    found: dict[str, dict[str, float]] = {}
    for start in range(0, max(len(queries), 1), size):
        batch = queries[start : start + size]
        tell(0.05 + 0.9 * start / max(len(queries), 1), _batch_step(start, len(batch), queries))
        found.update(retriever.retrieve(dataclasses.replace(data, queries=batch), source, k))
    return found


def _batch_step(start: int, size: int, queries: Sequence[object]) -> str:
    return f"retrieving queries {start + 1}-{start + size} of {len(queries)}"


def _cut(run: Run, excluded: dict[str, frozenset[str]], k: int) -> dict[str, dict[str, float]]:
    # Every backend cuts already; doing it again here holds any registered retriever to the
    # protocol (exclusions before the top-k cut, docs/protocol.md, Per-task protocol).
    return {q: top_k(docs, k, excluded.get(q, frozenset())) for q, docs in run.items()}


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"

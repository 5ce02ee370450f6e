"""Running a retriever over a task's domains and writing the official output folders.

Layout (docs/protocol.md, The official harness's files) under ``<out>/<subdir>/``:
``<domain>/scores.json`` and ``metrics.json``, ``summary.json``; and beside them ``run.trec`` (every
domain's run, query ids written ``<domain>/<query id>`` because ids repeat across domains) and
``config.json``. Each domain folder also gets a ``config.json``, written last: a domain is reused
only when that stored configuration equals the new one
(:mod:`mmbright_core.retrieval.runner.stored`), and a run killed mid-domain leaves no configuration
there, so it re-runs.

Nothing of another configuration is ever replaced (:mod:`mmbright_core.retrieval.runner.folders`):
the folder's ``config.json`` claims it before any domain is written (and only once the first
domain's retrieval has succeeded, so a run that cannot start, for a missing extra say,
leaves no folder behind), a folder holding
another configuration (or outputs with none) is refused or passed over for
``<subdir>_2``..., and the summary covers every domain the folder holds. The run holds the
folder's claim from that choice to its last file (:mod:`mmbright_core.io.claims`): another job
writing into the same folder is refused, or waits until this one ends and then sees what it
wrote.

A retriever may record what its run used beyond the scores (``ocr-*``: the words read from
each query image, ``ocr.json``): one that has ``recorded_files`` and ``records(data, source)``
gets those files written in each domain folder before its ``config.json``, and a domain is
reused only where they exist.

No silent zeros: what the data lacked (null texts, every corpus image undecodable, no
judgment; :mod:`mmbright_core.data.checks`) and a run in which no query got a single document
are said in the domain's ``metrics.json`` (``"warnings"``) and in the warnings of its
:class:`~mmbright_core.retrieval.runner.stored.DomainOutcome`, which the command line prints to
stderr and the Run page shows.

Two hooks serve a caller other than the command line (the dashboard): ``progress`` hears of
each step, within a domain too (each query's images, for a retriever with ``read_ahead``),
and ``guard`` is shown every folder and file before it is
read or written, so that a server can refuse a symlinked subfolder that leads elsewhere.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from mmbright_core.data.choices import PROTOCOLS
from mmbright_core.data.ids import domain_query_id
from mmbright_core.data.sources import Source
from mmbright_core.data.tasks import negatives_for
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.claims import Claimant, claimed
from mmbright_core.io.official import official_subdir, write_domain_outputs, write_summary
from mmbright_core.io.runs import write_trec_run
from mmbright_core.metrics.official import official_metrics
from mmbright_core.ranking import top_k
from mmbright_core.retrieval.base import Retriever, RunConfig, check_k, check_task
from mmbright_core.retrieval.runner.folders import CONFIG_FILE, FolderChoice, Guard, choose_folder
from mmbright_core.retrieval.runner.stored import (
    DOMAIN_FILES,
    DomainOutcome,
    claim_folder,
    domain_config,
    dump_json,
    plan_folder,
    reuse_domain,
)
from mmbright_core.task_table import RUN_DEPTH, TASK_TABLE, task_info
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
    view: TaskView,
    retriever: Retriever,
    out_dir: str | os.PathLike[str],
    *,
    domains: Sequence[str] | None = None,
    k: int = RUN_DEPTH,
    negatives: str = "exclude",
    progress: ProgressHook | None = None,
    guard: Guard | None = None,
    new_folder: bool = False,
    claimant: Claimant | None = None,
    finish: Callable[[RunOutcome], None] | None = None,
) -> RunOutcome:
    """Run ``retriever`` on the view's task for each domain and write the output folders.

    Args:
        view: The data source, the task and its Task 4 judgment protocol (tasks 1-3 record
            ``paper``: it has no effect).
        retriever: The retriever (it must support the task).
        out_dir: The output root; the official ``<subdir>`` is created inside it.
        domains: The domains to run (default: every domain of the source).
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
        claimant: Who claims the folder for the run, and how long it waits for another
            job's claim (default: refused at once; :mod:`mmbright_core.io.claims`).
        finish: Called with the outcome while the folder is still claimed, to write more
            files into it (the command line's MTEB predictions).

    Returns:
        What was run, reused and written.

    Raises:
        OutputConflictError: The folder holds outputs of another configuration, or with
            none recorded, and ``new_folder`` is False; nothing was written.
        OutputBusyError: Another job is writing the folder; nothing was written.
    """
    config, chosen = _configure(view, retriever, domains, k, negatives)
    check = guard or _no_guard
    check(Path(out_dir))
    subdir = official_subdir(view.task, retriever.label())
    # The folder is chosen under the claim: no other job can write there between the
    # check of what it holds and this run's writes (mmbright_core.io.claims).
    with claimed(Path(out_dir) / subdir, claimant, check):
        choice = choose_folder(Path(out_dir), subdir, config, new_folder=new_folder, guard=check)
        outcome = _run_domains(view.source, retriever, choice, chosen, config, progress, check)
        if finish is not None:
            finish(outcome)
        return outcome


def _run_domains(
    source: Source,
    retriever: Retriever,
    choice: FolderChoice,
    chosen: Sequence[str],
    config: RunConfig,
    progress: ProgressHook | None,
    check: Guard,
) -> RunOutcome:
    task_dir = choice.task_dir
    names = (*DOMAIN_FILES, *_recorded_files(retriever))
    kept, held = plan_folder(task_dir, source.domains(), chosen, config, names, check)
    claimed_folder = False

    def claim() -> None:  # once, before the first domain's files
        nonlocal claimed_folder
        if not claimed_folder:
            claim_folder(task_dir, config, held)
            claimed_folder = True

    bar = tqdm(chosen, desc=f"task {config.task} {retriever.name}", unit="domain", disable=None)
    outcomes = []
    for index, domain in enumerate(bar):
        tell = _teller(progress, domain, index, len(chosen))
        outcomes.append(_domain(source, retriever, task_dir, domain, config, names, tell, claim))
    every = sorted([*outcomes, *kept], key=lambda o: held.index(o.domain))
    _write_task_files(task_dir, retriever.label(), config, every)
    return RunOutcome(task_dir, config, tuple(outcomes), tuple(kept), choice.avoided)


def _configure(
    view: TaskView, retriever: Retriever, domains: Sequence[str] | None, k: int, negatives: str
) -> tuple[RunConfig, tuple[str, ...]]:
    # Everything is checked before a folder is looked at; the settings a task ignores are
    # recorded as the ones it follows (docs/protocol.md, Per-task protocol).
    source, task, protocol = view.source, view.task, view.protocol
    check_task(retriever, task)
    check_k(k)
    if protocol not in PROTOCOLS:
        raise InputError("unknown protocol", expected=" or ".join(PROTOCOLS), found=repr(protocol))
    protocol = protocol if task_info(task).protocols else "paper"
    policy = negatives_for(task, negatives)
    chosen = tuple(source.check_domain(d) for d in domains) if domains else source.domains()
    config = RunConfig.build(
        retriever, task=task, protocol=protocol, source=source.name, k=k, negatives=policy
    )
    return config, chosen


def _write_task_files(
    task_dir: Path, label: str, config: RunConfig, every: Sequence[DomainOutcome]
) -> None:
    # The summary and run.trec cover every domain the folder holds; config.json goes last.
    metrics = {o.domain: o.metrics for o in every}
    write_summary(task_dir, label, TASK_TABLE[config.task].task_type, metrics)
    combined = {domain_query_id(o.domain, q): docs for o in every for q, docs in o.run.items()}
    write_trec_run(task_dir / "run.trec", combined, tag=label)
    summary = {"config": config.to_dict(), "domains": [o.domain for o in every]}
    atomic_write_text(task_dir / CONFIG_FILE, dump_json(summary))


_Tell = Callable[[float, str], None]


def _no_guard(path: Path) -> None:
    return None


def _teller(hook: ProgressHook | None, domain: str, index: int, count: int) -> _Tell:
    def tell(done: float, step: str) -> None:
        if hook is not None:
            hook(Progress(domain, index, count, done, step))

    return tell


def _recorded_files(retriever: Retriever) -> tuple[str, ...]:
    return tuple(getattr(retriever, "recorded_files", ()))


def _domain(
    source: Source,
    retriever: Retriever,
    task_dir: Path,
    domain: str,
    config: RunConfig,
    names: Sequence[str],
    tell: _Tell,
    claim: Callable[[], None],
) -> DomainOutcome:
    # One domain: its stored outputs when they match (retrieval.stored), else a new run;
    # ``claim`` writes the folder's claim, once, when there are results to write.
    outcome = reuse_domain(task_dir, domain, config, names)
    if outcome is not None:
        tell(1.0, "reused from disk")
        return outcome
    tell(0.0, "reading the domain")
    data = source.task(config.task, domain, config.protocol, negatives=config.negatives)
    found = _retrieve_in_batches(retriever, data, source, config.k, tell)
    tell(0.95, "scoring and writing")
    run = _cut(found, data.excluded, config.k)
    claim()
    # The old configuration goes first: outputs written under a new one must never sit
    # beside it if the run stops half-way.
    (task_dir / domain / CONFIG_FILE).unlink(missing_ok=True)
    metrics = official_metrics(data.qrels, run)
    warnings = (*data.report.warnings, *_nothing_ranked(data, run))
    write_domain_outputs(task_dir, domain, run, metrics, warnings)
    records = getattr(retriever, "records", None)
    for name, text in (records(data, source) if callable(records) else {}).items():
        atomic_write_text(task_dir / domain / name, text)
    atomic_write_text(task_dir / domain / CONFIG_FILE, dump_json(domain_config(config, domain)))
    tell(1.0, "done")
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
    # A retriever whose slow part is per query (ocr-*: each query image read) does it first
    # in ``read_ahead``, saying each query, in the first half of the domain's bar.
    queries = data.queries
    start_at, span = 0.05, 0.9
    read_ahead = getattr(retriever, "read_ahead", None)
    if callable(read_ahead) and queries:
        read_ahead(data, source, lambda done, step: tell(0.05 + 0.45 * done, step))
        start_at, span = 0.5, 0.45
    size = max(MIN_BATCH, math.ceil(len(queries) / QUERY_STEPS))
    found: dict[str, dict[str, float]] = {}
    for start in range(0, max(len(queries), 1), size):
        batch = queries[start : start + size]
        done = start / max(len(queries), 1)
        tell(start_at + span * done, _batch_step(start, len(batch), queries))
        found.update(retriever.retrieve(dataclasses.replace(data, queries=batch), source, k))
    return found


def _batch_step(start: int, size: int, queries: Sequence[object]) -> str:
    return f"retrieving queries {start + 1}-{start + size} of {len(queries)}"


def _cut(run: Run, excluded: dict[str, frozenset[str]], k: int) -> dict[str, dict[str, float]]:
    # Every backend cuts already; doing it again here holds any registered retriever to the
    # protocol (exclusions before the top-k cut, docs/protocol.md, Per-task protocol).
    return {q: top_k(docs, k, excluded.get(q, frozenset())) for q, docs in run.items()}

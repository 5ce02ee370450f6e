"""Score runs on a whole MM-BRIGHT task: exclusions, the top-1000 cut, and the macro average.

For each domain, a query's excluded ids are removed from its ranking *before* the ranking is
cut to 1,000 (docs/protocol.md, Per-task protocol), the domain is evaluated against the task's qrels
(queries with no judgment are dropped, docs/protocol.md, Scoring), and the benchmark figure is the
unweighted mean over the domains scored. The result names the task protocol, the policy for
``negative_ids`` and the missing-query rule it used.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mmbright_core.data.ids import PAIR_ID_FORMAT, PAIR_SEPARATOR
from mmbright_core.data.tasks import Negatives, negatives_for
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.runs import RunColumns
from mmbright_core.metrics import evaluate
from mmbright_core.ranking import rank_order, top_k
from mmbright_core.task_table import MAIN_SCORE, RUN_DEPTH
from mmbright_core.types import EvalResult, Missing, Protocol4, Qrels, Run

IMAGE_SUFFIXES = frozenset({"bmp", "gif", "jpeg", "jpg", "png", "svg", "tif", "tiff", "webp"})

# Each shape of doc id: how one reads (singular, plural) and the tasks that rank it
# (docs/protocol.md, The data as published and Per-task protocol).
_SHAPES = {
    "pair": (
        f"a Task 4 pair id {PAIR_ID_FORMAT}",
        "Task 4 pair ids",
        "task 4",
    ),
    "passage": ("a passage id '<domain>/<key>_<n>.txt'", "passage ids", "task 1 or 2"),
    "image": (
        "an image path '<domain>/<domain>_<key>_<n>/image_<k>.<ext>'",
        "image paths",
        "task 3",
    ),
    "other": ("", "ids of no MM-BRIGHT shape", ""),
}
_SAMPLE = 3


@dataclass(frozen=True)
class TaskScores:
    """A task's scores over domains.

    Attributes:
        task: The task number.
        protocol: The Task 4 protocol used (``"paper"`` for tasks 1-3).
        negatives: Whether tasks 1-2 excluded each query's ``negative_ids`` (``"exclude"``,
            the official numbers) or kept them (``"keep"``); ``"exclude"`` for tasks 3-4.
        missing: The rule for judged queries absent from a run (``"skip"`` or ``"zero"``).
        per_domain: domain -> its evaluation.
        query_counts: domain -> number of queries that entered its averages.
        macro: measure name -> unweighted mean over the domains scored (NaN if none was).
        scored_domains: Domains with at least one evaluated query, which enter ``macro``.
    """

    task: int
    protocol: Protocol4
    missing: Missing
    negatives: Negatives
    per_domain: dict[str, EvalResult]
    query_counts: dict[str, int]
    macro: dict[str, float]
    scored_domains: tuple[str, ...]


def apply_protocol(
    run: Run, excluded: Mapping[str, Collection[str]], depth: int = RUN_DEPTH
) -> dict[str, Mapping[str, float]]:
    """Drop each query's excluded ids from its ranking, then cut it to ``depth`` documents.

    Only a ranking longer than ``depth`` is cut (and so ordered), and only one holding an
    excluded id is copied: the others are the run's own mappings, shared and not to be
    modified, since copying a benchmark-sized run costs more than scoring it.

    Args:
        run: query_id -> doc_id -> score.
        excluded: query_id -> doc ids to remove before the cut.
        depth: How many documents to keep per query.
    """
    out: dict[str, Mapping[str, float]] = {}
    for query_id, scores in run.items():
        drop = excluded.get(query_id)
        if drop and any(d in scores for d in drop):
            kept: Mapping[str, float] = {d: s for d, s in scores.items() if d not in drop}
        else:
            kept = scores
        out[query_id] = kept if len(kept) <= depth else top_k(kept, depth)
    return out


def apply_protocol_columns(
    run: RunColumns, excluded: Mapping[str, Collection[str]], depth: int = RUN_DEPTH
) -> RunColumns:
    """:func:`apply_protocol` on a table's columns: the same documents kept, in the same order.

    Excluded rows are found with one look-up over the doc id column; only a query left
    longer than ``depth`` is ranked, and its kept rows are then in ranking order, as
    :func:`~mmbright_core.ranking.top_k` leaves them (the official oracle reads that order).

    Args:
        run: The validated columns (:func:`mmbright_core.io.runs.run_columns`).
        excluded: query_id -> doc ids to remove before the cut.
        depth: How many documents to keep per query.
    """
    keep = np.ones(run.scores.size, bool)
    banned = [(i, d) for i, q in enumerate(run.query_ids) for d in excluded.get(q, ())]
    if banned:
        docs = sorted({d for _, d in banned})
        slot = {d: j for j, d in enumerate(docs)}
        pairs = np.array([i * len(docs) + slot[d] for i, d in banned], np.int64)
        found = pc.index_in(run.doc_ids, value_set=pa.array(docs, run.doc_ids.type))
        at = pc.fill_null(found, -1).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(at >= 0)
        query = np.searchsorted(run.starts, rows, side="right") - 1
        keep[rows[np.isin(query * len(docs) + at[rows], pairs)]] = False
    kept = np.flatnonzero(keep)
    sizes = np.diff(np.searchsorted(kept, run.starts))
    if (sizes <= depth).all():
        return run.take(kept)
    parts = np.split(kept, np.cumsum(sizes)[:-1])
    for i in np.flatnonzero(sizes > depth).tolist():
        rows = parts[i]
        doc_ids = np.array(run.doc_ids.take(pa.array(rows)).to_pylist(), dtype=str)
        parts[i] = rows[rank_order(doc_ids, run.scores[rows])[:depth]]
    return run.take(np.concatenate(parts))


def doc_id_shape(doc_id: str) -> str:
    """Name the kind of item a doc id points at: ``pair``, ``passage``, ``image`` or ``other``.

    Task 4 pair ids hold ``|||``, passage ids end in ``.txt`` and Task 3 ids are image paths
    (docs/protocol.md, The data as published and Per-task protocol); anything else is ``other``.
    """
    if PAIR_SEPARATOR in doc_id:
        return "pair"
    suffix = doc_id.rpartition(".")[2].lower()
    if suffix == "txt":
        return "passage"
    return "image" if suffix in IMAGE_SUFFIXES and "/" in doc_id else "other"


def check_doc_ids(qrels: Qrels, run: Run, *, task: int, domain: str, name: str = "<run>") -> None:
    """Refuse a run none of whose doc ids has the shape of the task's judged doc ids.

    Scoring a Task 4 run (pair ids) against passage qrels, or passage ids against Task 3's
    image paths, silently gives 0 everywhere (the official harness's behaviour); here it is an
    error. A single doc id of the right shape is enough, so a weak but honest run still scores.
    Qrels holding ids of no MM-BRIGHT shape (another dataset's conventions) are not checked.

    Args:
        qrels: The domain's judgments.
        run: The domain's run.
        task: The task number, for the message.
        domain: The domain, for the message.
        name: The run's name, for the message.

    Raises:
        InputError: The run has doc ids, and none of them has an expected shape.
    """
    judged = {doc_id: doc_id_shape(doc_id) for docs in qrels.values() for doc_id in docs}
    expected = set(judged.values())
    if not expected or "other" in expected:
        return
    found: dict[str, list[str]] = {}
    for docs in run.values():
        for doc_id in docs:
            shape = doc_id_shape(doc_id)
            if shape in expected:
                return
            sample = found.setdefault(shape, [])
            if len(sample) < _SAMPLE:
                sample.append(doc_id)
    if not found:
        return  # an empty run: nothing to judge its shape by
    raise InputError(
        f"the run's doc ids do not fit task {task} (domain {domain!r}): "
        f"none is {' or '.join(_SHAPES[s][0] for s in sorted(expected))}",
        source=name,
        expected="doc ids such as " + ", ".join(repr(d) for d in sorted(judged)[:_SAMPLE]),
        found="; ".join(
            f"{_SHAPES[shape][1]} such as {', '.join(repr(d) for d in sample)}"
            for shape, sample in sorted(found.items())
        ),
        hint=_mismatch_hint(found),
    )


def _mismatch_hint(found: Mapping[str, list[str]]) -> str:
    tasks = [_SHAPES[s][2] for s in sorted(found) if _SHAPES[s][2]]
    if not tasks:
        return "Check that the run was made on MM-BRIGHT's ids, for this task and source"
    return f"It looks like a {' or '.join(tasks)} run: choose that task, or check the file"


def score_task(
    view: TaskView,
    runs: Mapping[str, Run],
    *,
    domains: Sequence[str] | None = None,
    measures: Iterable[str] = (MAIN_SCORE,),
    missing: Missing = "skip",
    run_name: str = "<run>",
    negatives: str = "exclude",
) -> TaskScores:
    """Score one run per domain on a task and average over domains.

    Args:
        view: The dataset copy whose judgments define the task, the task (1, 2, 3 or 4)
            and its Task 4 protocol (``"paper"``, ``"legacy"`` or ``"release"``).
        runs: domain -> run (query_id -> doc_id -> score).
        domains: The domains to score (default: those in ``runs``); a domain without a run
            is scored as an empty run, which counts only under ``missing="zero"``.
        measures: Measure names such as ``"nDCG@10"``.
        missing: ``"skip"`` averages over queries in both run and qrels (the official
            harness); ``"zero"`` counts judged queries absent from the run as 0.
        run_name: The run's name, for error messages.
        negatives: ``"exclude"`` (official) or ``"keep"`` each query's ``negative_ids``
            (tasks 1-2; docs/protocol.md, Per-task protocol).

    Raises:
        UnknownNameError: For a domain the source does not hold, or an unknown policy.
        InputError: A domain's run has no doc id of the task's shape (:func:`check_doc_ids`).
    """
    chosen = tuple(domains) if domains is not None else tuple(sorted(runs))
    wanted = tuple(measures)
    source, task = view.source, view.task
    policy = negatives_for(task, negatives)
    per_domain: dict[str, EvalResult] = {}
    used = cast(Protocol4, view.protocol)
    for domain in chosen:
        if domain not in source.domains():
            raise UnknownNameError("domain", domain, source.domains())
        data = view.judgments(domain, policy)
        used = data.protocol
        check_doc_ids(data.qrels, runs.get(domain, {}), task=task, domain=domain, name=run_name)
        run = apply_protocol(runs.get(domain, {}), data.excluded)
        per_domain[domain] = evaluate(data.qrels, run, measures=wanted, missing=missing)
    scored = tuple(d for d, r in per_domain.items() if r.counts.evaluated > 0)
    return TaskScores(
        task=task,
        protocol=used,
        missing=missing,
        negatives=policy,
        per_domain=per_domain,
        query_counts={d: r.counts.evaluated for d, r in per_domain.items()},
        macro=_macro(per_domain, scored),
        scored_domains=scored,
    )


def _macro(per_domain: Mapping[str, EvalResult], scored: Sequence[str]) -> dict[str, float]:
    """Measure name -> the unweighted mean over the domains scored (NaN if none was)."""
    names = next(iter(per_domain.values())).aggregate.keys() if per_domain else ()
    return {
        name: math.fsum(per_domain[d].aggregate[name] for d in scored) / len(scored)
        if scored
        else math.nan
        for name in names
    }

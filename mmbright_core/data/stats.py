"""Per-domain, per-task counts of a dataset copy.

The counts are those of the table in docs/protocol.md, The benchmark.

Counting reads as little as it can: passages are counted from parquet metadata, judgments
come from :meth:`Source.judgments`, and only the image tasks (3-4) decode corpus images. Corpus
images are kept or dropped as the official loader keeps them (docs/protocol.md, Per-task protocol):
a truncated file decodes padded and is kept, counted apart as ``padded_images`` ("truncated,
padded"), while ``undecodable_images`` counts the dropped ones.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import astuple, dataclass, fields
from typing import cast

from mmbright_core.data.choices import TASKS as TASKS
from mmbright_core.data.images import check_image
from mmbright_core.data.pairs import pair_corpus
from mmbright_core.data.sources import Source
from mmbright_core.data.task_inputs import decodable_images, read_passages
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputWarning, MissingFileError
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Protocol4, Task


@dataclass(frozen=True)
class TaskStats:
    """Counts for one task on one domain (or ``"total"`` over domains).

    Attributes:
        domain: The domain, or ``"total"``.
        task: The task number.
        queries: Queries of the task.
        corpus: Retrievable items: passages (tasks 1-2), decodable images (3), pairs (4).
        judgments: Qrels entries with relevance > 0.
        empty_qrels: Queries with no judgment at all (left out of scoring).
        query_images: Image references of the task's queries (none for Task 1).
        corpus_images: Decodable corpus images (tasks 3-4; 0 for text corpora), padded ones
            included.
        undecodable_images: Corpus images dropped as undecodable (tasks 3-4).
        padded_images: Truncated, padded: corpus images kept only because they decode with
            missing rows padded, as the official loader decodes them (tasks 3-4).
    """

    domain: str
    task: int
    queries: int
    corpus: int
    judgments: int
    empty_qrels: int
    query_images: int
    corpus_images: int
    undecodable_images: int
    padded_images: int


STATS_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TaskStats))


def task_stats(
    view: TaskView, domain: str, *, padded: MutableMapping[str, int] | None = None
) -> TaskStats:
    """Count one task on one domain.

    Args:
        view: The dataset copy, the task and its protocol.
        domain: The domain.
        padded: domain -> padded image count, filled and reused across calls (tasks 3 and 4
            share a domain's images, and telling padded ones apart decodes them again).
    """
    source, task = view.source, view.task
    data = view.judgments(domain)
    images: list[str] = []
    problems: dict[str, str] = {}
    info = TASK_TABLE[task]
    if info.corpus_images:
        images, problems = decodable_images(source, domain)
    if info.corpus == "passages":
        corpus = source.num_rows("documents", domain)
    elif info.corpus == "images":
        corpus = len(images)
    else:
        ids, _ = read_passages(source, domain, text=False)
        corpus = len(pair_corpus(ids, images, domain, data.protocol))
        corpus += data.report.added_judged_pairs
    return TaskStats(
        domain=domain,
        task=task,
        queries=len(data.queries),
        corpus=corpus,
        judgments=sum(1 for judged in data.qrels.values() for rel in judged.values() if rel > 0),
        empty_qrels=len(data.report.empty_qrels),
        query_images=sum(len(q.images) for q in data.queries),
        corpus_images=len(images),
        undecodable_images=len(problems),
        padded_images=_padded_count(source, domain, images, padded) if info.corpus_images else 0,
    )


def _padded_count(
    source: Source, domain: str, kept: Sequence[str], memo: MutableMapping[str, int] | None
) -> int:
    if memo is not None and domain in memo:
        return memo[domain]
    count = sum(
        check_image(source.document_image_bytes(domain, path), path).padded for path in kept
    )
    if memo is not None:
        memo[domain] = count
    return count


def collect_stats(
    source: Source,
    tasks: Iterable[int] = TASKS,
    domains: Sequence[str] | None = None,
    protocol: Protocol4 = "paper",
    *,
    held_only: bool = False,
) -> list[TaskStats]:
    """Count every (task, domain), then add one ``"total"`` row per task.

    Args:
        source: The dataset copy.
        tasks: The tasks to count.
        domains: The domains (default: all the source holds).
        protocol: The Task 4 protocol.
        held_only: Leave out, with one :class:`~mmbright_core.errors.InputWarning` each, the
            tasks a local copy lacks a file of (a copy made for some tasks only); the error
            is raised still when it holds none of them.

    Raises:
        MissingFileError: A task's file is missing (with ``held_only``: every task's).
    """
    chosen = tuple(dict.fromkeys(domains)) if domains else source.domains()  # each once
    rows: list[TaskStats] = []
    padded: dict[str, int] = {}
    missing: list[tuple[int, MissingFileError]] = []
    for task in dict.fromkeys(tasks):
        try:
            view = TaskView(source, cast(Task, task), protocol)
            per_domain = [task_stats(view, d, padded=padded) for d in chosen]
        except MissingFileError as err:
            if not held_only:
                raise
            missing.append((task, err))
            continue
        sums = [sum(values) for values in zip(*(astuple(r)[2:] for r in per_domain), strict=True)]
        rows.extend(per_domain)
        rows.append(TaskStats("total", task, *sums))
    if missing and not rows:
        raise missing[0][1]
    for task, absent in missing:
        warnings.warn(
            f"task {task} left out: the copy has no {absent.config}/{absent.domain}.parquet "
            "(give --task to count only the tasks it holds)",
            InputWarning,
            stacklevel=2,
        )
    return rows


# the table in docs/protocol.md, The benchmark: column title -> (task, field).
SPEC_TABLE_COLUMNS: dict[str, tuple[int, str]] = {
    "T1 q": (1, "queries"),
    "passages": (1, "corpus"),
    "T1 qrels": (1, "judgments"),
    "T2-4 q": (2, "queries"),
    "T2 qrels": (2, "judgments"),
    "T3 images": (3, "corpus"),
    "T3 qrels": (3, "judgments"),
}


def spec_table(rows: Iterable[TaskStats]) -> list[dict[str, str | int]]:
    """Lay counts out as docs/protocol.md's table: one row per domain, its columns where counted."""
    by_domain: dict[str, dict[str, str | int]] = {}
    for row in rows:
        line = by_domain.setdefault(row.domain, {"domain": row.domain})
        for title, (task, name) in SPEC_TABLE_COLUMNS.items():
            if row.task == task:
                line[title] = getattr(row, name)
    return list(by_domain.values())

"""The first stage of a two-stage run: any run the package reads, known by its content.

A reranked run's ``config.json`` records its first stage (docs/protocol.md, "Two-stage
runs"): where it was read from, the sha256 of its scores (``fingerprint``: the domains'
runs as ``scores.json`` writes them, so the same run read from a TREC file or an outputs
folder has the same one) and the configuration it recorded, if any.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.runs import run_json
from mmbright_core.retrieval.cache.store import content_key
from mmbright_core.task_runs import Scope, check_task_runs, read_task_file, read_task_outputs

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class FirstStage:
    """A first-stage run, split by domain.

    Attributes:
        path: Where it was read from.
        label: Its short name (the model of an outputs folder, else the file's stem).
        runs: domain -> query_id -> doc_id -> score.
        config: The configuration it recorded (``config.json``), or None.
    """

    path: str
    label: str
    runs: Mapping[str, Mapping[str, Mapping[str, float]]]
    config: Mapping[str, Any] | None = None

    @property
    def fingerprint(self) -> str:
        """The sha256 of the run's scores (:func:`runs_fingerprint`)."""
        return runs_fingerprint(self.runs)

    def record(self) -> dict[str, Any]:
        """Return what a reranked run records of its first stage."""
        return {
            "path": self.path,
            "label": self.label,
            "fingerprint": self.fingerprint,
            "config": None if self.config is None else dict(self.config),
        }


def candidate_order(scores: Mapping[str, float]) -> list[str]:
    """Return one query's first-stage doc ids best first, as the reranker is handed them.

    As xlang-ai/BRIGHT ``rerank.py`` (its ``__main__``) orders them: ``sorted(scores.items(),
    key=lambda x: x[1], reverse=True)`` over the score file's dict, a stable sort, so documents
    whose scores tie keep the run's own order (its ``scores.json``'s, its run file's lines),
    not their doc ids' (docs/protocol.md, "Two-stage runs").
    """
    return [doc_id for doc_id, _ in sorted(scores.items(), key=lambda item: item[1], reverse=True)]


def runs_fingerprint(runs: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """Return the sha256 of per-domain runs: each as ``scores.json`` holds it, by domain name."""
    parts = [f"{d}\n{run_json(runs[d])}" for d in sorted(runs)]
    return content_key("\n".join(parts))


def load_first_stage(
    view: TaskView, path: str | os.PathLike[str], *, domains: Sequence[str] | None = None
) -> FirstStage:
    """Read a first-stage run of the view's task: an outputs folder or any run file.

    Raises:
        InputError: The run is malformed, holds no query of the task (or doc ids of
            another task's shape), or lacks a domain asked for.
    """
    config: Mapping[str, Any] | None = None
    source, task = view.source, view.task
    label = Path(path).name.split(".")[0]
    chosen = set(domains if domains is not None else source.domains())
    if Path(path).is_dir():
        outputs = read_task_outputs(path, task)  # read once: its runs, model and configuration
        runs = {d: r for d, r in outputs.runs.items() if d in chosen}
        label, config = outputs.model, outputs.run_config or None
    else:
        scope = Scope(task, domains, view.checked_protocol)
        runs = read_task_file(source, scope, Path(path), str(path)).runs
    missing = [d for d in domains or () if d not in runs]
    if missing or not runs:
        raise InputError(
            "the first-stage run has no query of " + (", ".join(missing) or "this task"),
            source=str(path),
            expected=f"a run of task {task} covering the domains asked for",
            found=", ".join(sorted(runs)) or "no domain",
        )
    check_task_runs(view, runs, name=str(path))
    return FirstStage(str(path), _UNSAFE.sub("-", label) or "run", runs, config)

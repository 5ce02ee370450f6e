"""A fused run written as the official folders, its inputs recorded as its lineage.

:func:`fuse_task` hands :class:`FusionStage` to
:func:`~mmbright_core.retrieval.runner.task_run.run_task`, so a fused run gets what every run
gets: the official layout, the folder claimed while it is written and never shared with another
configuration, ``config.json``, the metrics and ``run.trec``. Its configuration records the
method, its parameters and, as ``lineage``, each input run (where it was read from, the sha256
of its scores, the retriever and model it recorded and its whole configuration). The scores
are :func:`mmbright_core.fusion.fuse`'s, of each domain's queries, once each input is rid of
the documents the task excludes for a query.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmbright_core.data.view import TaskView
from mmbright_core.fusion import check_fusion, fuse
from mmbright_core.rerank.first_stage import FirstStage
from mmbright_core.rerank.stage import check_judged_alike
from mmbright_core.retrieval.runner.task_run import RunOutcome, run_task
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from mmbright_core.data.images import ImageSource


class FusionStage:
    """Runs of one task fused, as a :class:`~mmbright_core.retrieval.base.Retriever`.

    Args:
        inputs: The runs, in order (``weights`` follow it).
        method, k, norm, weights: As :func:`mmbright_core.fusion.fuse` takes them.
    """

    name = "fusion"
    tasks = frozenset(TASK_TABLE)

    def __init__(
        self,
        inputs: Sequence[FirstStage],
        method: str,
        *,
        k: int,
        norm: str | None,
        weights: Sequence[float] | None,
    ) -> None:
        check_fusion(len(inputs), method, k=k, norm=norm, weights=weights)
        self.inputs, self.method, self.k, self.norm = list(inputs), method, k, norm
        self.weights = None if weights is None else [float(w) for w in weights]

    def label(self) -> str:
        """Return ``<method>_<input>+<input>...``, the fused run's folder name."""
        return f"{self.method}_" + "+".join(i.label for i in self.inputs)

    def settings(self) -> dict[str, Any]:
        """Return the method, the parameters it reads and each input as ``lineage``."""
        parameters: dict[str, Any] = (
            {"rrf_k": self.k} if self.method == "rrf" else {"norm": self.norm}
        )
        if self.weights is not None:
            parameters["weights"] = self.weights
        return {"method": self.method, **parameters, "lineage": [_lineage(i) for i in self.inputs]}

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Fuse the inputs' runs of ``data``'s queries, each cut to its best ``k``."""
        runs = []
        for first in self.inputs:
            domain = first.runs.get(data.domain, {})
            run = {}
            for query in data.queries:
                excluded = data.excluded.get(query.query_id, frozenset())
                scores = domain.get(query.query_id, {})
                run[query.query_id] = {d: s for d, s in scores.items() if d not in excluded}
            runs.append(run)
        fused = fuse(runs, self.method, k=self.k, norm=self.norm, weights=self.weights, depth=k)
        return {query: docs for query, docs in fused.items() if docs}


def _lineage(first: FirstStage) -> dict[str, Any]:
    config = first.config or {}
    return {"retriever": config.get("retriever"), "model": config.get("model"), **first.record()}


def fuse_task(
    view: TaskView,
    inputs: Sequence[FirstStage],
    out_dir: str | os.PathLike[str],
    *,
    method: str = "rrf",
    k: int = 60,
    norm: str | None = "min-max",
    weights: Sequence[float] | None = None,
    domains: Sequence[str] | None = None,
    negatives: str = "exclude",
    **run: Any,
) -> RunOutcome:
    """Fuse runs of the view's task and write the fused run under ``out_dir``.

    Args:
        view: The data source the runs were made on, the task and its Task 4 protocol
            (each input's, where it recorded one).
        inputs: The runs (:func:`~mmbright_core.rerank.first_stage.load_first_stage`).
        out_dir: The output root; ``<subdir>`` is named after the method and the inputs.
        method: The fusion method (:data:`mmbright_core.fusion.METHODS`).
        k: RRF's constant.
        norm: The normalisation of a score-based method, or None.
        weights: One per input (``wsum``).
        domains: The domains (default: those any input covers, in the source's order).
        negatives: The ``negative_ids`` policy; each input's, where it recorded one.
        **run: ``k`` is RRF's here, so the runner's options are ``progress``,
            ``new_folder`` and ``claimant``, as
            :func:`~mmbright_core.retrieval.runner.task_run.run_task` takes them.

    Raises:
        InputError: A method or parameter :func:`~mmbright_core.fusion.fuse` refuses, or a
            protocol or policy that is not an input's.
    """
    stage = FusionStage(inputs, method, k=k, norm=norm, weights=weights)
    for first in inputs:
        check_judged_alike(first, view, negatives)
    covered = {d for first in inputs for d in first.runs}
    chosen = list(domains) if domains else [d for d in view.domains() if d in covered]
    return run_task(view, stage, out_dir, domains=chosen, negatives=negatives, **run)

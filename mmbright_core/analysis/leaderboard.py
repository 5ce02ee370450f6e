"""The leaderboard (task x run x domain) and its check against the published numbers.

Scores are reported as the benchmark does (docs/protocol.md, Scoring): per-domain mean over queries,
then the unweighted mean over domains, x100 with one decimal. Published numbers (docs/protocol.md,
Published numbers) are kept as data (:mod:`~mmbright_core.retrieval.catalogue.reference`) and each
matching run is flagged ``OK`` / ``OKish`` / ``differs``, as pyserini's reproduction pages do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mmbright_core.errors import InputError
from mmbright_core.retrieval.catalogue.reference import ReferenceScore, load_reference
from mmbright_core.task_table import MAIN_SCORE

AVERAGE = "Avg."
OKISH_POINTS = 0.5
"""Largest difference (x100 points) still called ``OKish``."""

_KEYS = ["task", "run"]


def domain_scores(table: pd.DataFrame, measure: str = MAIN_SCORE) -> pd.DataFrame:
    """Mean of a measure per (task, run, domain) over the queries that were scored.

    Args:
        table: A results table (:func:`mmbright_core.analysis.table.results_table`).
        measure: The measure column.

    Returns:
        Columns ``task``, ``run``, ``domain``, ``value`` (a fraction) and ``queries`` (how many
        queries entered the mean); domains where no query was scored are left out.
    """
    if measure not in table.columns:
        raise InputError(
            "the results table has no such measure",
            expected=", ".join(c for c in table.columns if "@" in c or c in ("AP", "RR")),
            found=measure,
        )
    scored = table.dropna(subset=[measure])
    grouped = scored.groupby([*_KEYS, "domain"], sort=True)[measure]
    out = grouped.agg(value="mean", queries="size").reset_index()
    return out


def leaderboard(table: pd.DataFrame, measure: str = MAIN_SCORE) -> pd.DataFrame:
    """One row per (task, run): every domain and the macro average, x100 with one decimal.

    The average is taken over the unrounded domain means, then rounded. A run missing some
    domains is averaged over those it has; ``domains`` says how many that was.

    Args:
        table: A results table.
        measure: The measure column.

    Returns:
        Index (task, run); columns the domains (sorted), ``Avg.`` and ``domains``.
    """
    per_domain = domain_scores(table, measure)
    wide = per_domain.pivot(index=_KEYS, columns="domain", values="value")
    wide.columns.name = None
    board = (wide * 100).round(1)
    board[AVERAGE] = (wide.mean(axis=1, skipna=True) * 100).round(1)
    board["domains"] = wide.notna().sum(axis=1).astype(int)
    return board


def reproduction(
    board: pd.DataFrame,
    models: Mapping[str, str] | None = None,
    reference: Sequence[ReferenceScore] | None = None,
) -> pd.DataFrame:
    """Match runs to published scores and flag how well each is reproduced.

    ``OK``: equal at one decimal; ``OKish``: within ``OKISH_POINTS`` points; else ``differs``.

    Args:
        board: A leaderboard from :func:`leaderboard`.
        models: run name -> model name of the reference; by default the run name itself.
            Names match case-insensitively.
        reference: The published scores; by default :func:`load_reference`.

    Returns:
        One row per (run, matching reference score): ``task``, ``run``, ``model``, ``ours``,
        ``reported``, ``difference`` (ours - reported), ``status``, ``source``, ``citation``.
    """
    refs = load_reference() if reference is None else reference
    by_name: dict[tuple[int, str], list[ReferenceScore]] = {}
    for ref in refs:
        by_name.setdefault((ref.task, ref.model.casefold()), []).append(ref)
    rows = []
    for (task, run), ours in board[AVERAGE].items():
        model = (models or {}).get(run, run)
        for ref in by_name.get((int(task), model.casefold()), []):
            rows.append(_row(int(task), str(run), ref, float(ours)))
    columns = ["task", "run", "model", "ours", "reported", "difference", "status", "source"]
    return pd.DataFrame(rows, columns=[*columns, "citation"])


def status(ours: float, reported: float) -> str:
    """Flag a reproduced score (both x100): ``OK``, ``OKish`` or ``differs``."""
    difference = abs(round(ours, 1) - round(reported, 1))
    if difference < 1e-9:
        return "OK"
    return "OKish" if difference <= OKISH_POINTS + 1e-9 else "differs"


def _row(task: int, run: str, ref: ReferenceScore, ours: float) -> dict[str, object]:
    return {
        "task": task,
        "run": run,
        "model": ref.model,
        "ours": ours,
        "reported": ref.value,
        "difference": round(ours - ref.value, 2),
        "status": status(ours, ref.value),
        "source": ref.source,
        "citation": ref.citation,
    }


def published_table(
    task: int,
    board: pd.DataFrame | None,
    reproducing: Mapping[str, str],
    reference: Sequence[ReferenceScore] | None = None,
) -> pd.DataFrame:
    """The published scores of ``task``, each paper row beside the runs that reproduce it.

    Args:
        task: The task.
        board: A leaderboard (:func:`leaderboard`) of the runs, or None without runs.
        reproducing: run name -> the published model its settings reproduce (a run made
            from the model catalogue's preset of that model); other runs are not shown.
        reference: The published scores; by default :func:`load_reference`.

    Returns:
        One row per published score of ``task`` and reproducing run (one row, its run
        columns empty, where no run reproduces it): ``model``, ``reported``, ``source``,
        ``run``, ``ours``, ``difference`` (ours - reported), ``status``.
    """
    refs = [r for r in (load_reference() if reference is None else reference) if r.task == task]
    averages = _averages(board, task)
    rows: list[dict[str, object]] = []
    for ref in refs:
        runs = [
            run
            for run, model in reproducing.items()
            if ref.source == "paper" and model.casefold() == ref.model.casefold()
        ]
        rows += [_row(task, run, ref, averages[run]) for run in runs if run in averages]
        if not any(run in averages for run in runs):
            rows.append({"model": ref.model, "reported": ref.value, "source": ref.source})
    columns = ["model", "reported", "source", "run", "ours", "difference", "status"]
    return pd.DataFrame(rows, columns=columns)


def _averages(board: pd.DataFrame | None, task: int) -> dict[str, float]:
    if board is None or not len(board):
        return {}
    return {
        str(run): float(value) for (of, run), value in board[AVERAGE].items() if int(of) == task
    }

"""The headline numbers of the runs of a task, counted against the task, and the board's order.

A run over one of four domains covers a quarter of the task, not all of it, so every
number here is counted against the task's queries and domains (docs/protocol.md, Scoring),
and a partial run is never ranked among full ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from mmbright_core.ui.common.queries import TaskCounts


def headlines(table: pd.DataFrame, board: pd.DataFrame, task: TaskCounts) -> pd.DataFrame:
    """The numbers shown per run, counted against the task rather than the run.

    A run over one of four domains covers a quarter of the task, not all of it: coverage
    is the share of the task's judged queries the run ranks (docs/protocol.md, Scoring: always show
    it), and ``domains`` / ``task_domains`` say how many domains its macro average is taken over.

    Args:
        table: The results table of the runs (rows for the domains each run has).
        board: Their leaderboard (for the macro average over domains, x100).
        task: The task's queries and judged queries per domain.

    Returns:
        One row per run: ``run``, ``answered``, ``judged``, ``coverage``, ``missing``,
        ``dropped``, ``macro``, ``domains``, ``task_domains``, ``partial``.
    """
    judged_total = sum(judged for _, judged in task.values())
    answered = (
        table.assign(answered=(table["n_judged"] > 0) & table["covered"])
        .groupby("run", sort=False)["answered"]
        .sum()
    )
    out = answered.to_frame()
    out["judged"] = judged_total
    out["coverage"] = out["answered"] / judged_total if judged_total else math.nan
    out["missing"] = judged_total - out["answered"]
    out["dropped"] = sum(queries - judged for queries, judged in task.values())
    macro = board.reset_index().set_index("run")[["Avg.", "domains"]]
    out = out.join(macro.rename(columns={"Avg.": "macro"}))
    out["task_domains"] = task_domain_count(task)
    out["partial"] = out["domains"] < out["task_domains"]
    return out.reset_index()


HEADLINE = "nDCG@10 ×100"
"""The headline table's score column: the macro average, x100 as the paper reports it."""


def headline_table(lines: pd.DataFrame, negatives: Mapping[str, str]) -> pd.DataFrame:
    """The headline numbers as shown: one row per run, counts against the task.

    Args:
        lines: :func:`headlines`.
        negatives: run -> the policy for ``negative_ids`` it is scored by.

    Returns:
        ``run``, the macro average x100, ``domains`` ("1 of 4", "· partial" when the run
        misses some), ``coverage`` in percent, ``missing`` and ``negatives``. The queries
        without any judgment are the task's, the same for every run: the page says them once.
    """
    domains = [
        f"{int(n)} of {int(total)}" + (" · partial" if partial else "")
        for n, total, partial in zip(
            lines["domains"], lines["task_domains"], lines["partial"], strict=True
        )
    ]
    return pd.DataFrame(
        {
            "run": lines["run"],
            HEADLINE: lines["macro"],
            "domains": domains,
            "coverage": 100 * lines["coverage"],
            "missing": lines["missing"].astype(int),
            "negatives": [negatives.get(str(run), "") for run in lines["run"]],
        }
    )


def task_domain_count(task: TaskCounts) -> int:
    """How many domains of a task have a judged query (the domains a macro average spans)."""
    return sum(judged > 0 for _, judged in task.values())


def rank_board(board: pd.DataFrame, task_domains: Mapping[int, int]) -> pd.DataFrame:
    """Order a leaderboard for display: per task, full runs by Avg. first, partial runs after.

    A partial run's average is over fewer domains, so it is never ranked among full ones.
    """
    totals = [task_domains.get(int(task), 0) for task, _ in board.index]
    keys = pd.DataFrame(
        {
            "task": [task for task, _ in board.index],
            "partial": board["domains"].to_numpy() < np.asarray(totals),
            "avg": -board["Avg."].to_numpy(dtype=float),
            "run": [str(run) for _, run in board.index],
        }
    )
    order = keys.sort_values(["task", "partial", "avg", "run"], kind="stable").index
    return board.iloc[list(order)]

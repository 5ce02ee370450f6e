"""Paired comparison of two runs on the same queries: the statistics of B against A.

Run A is the baseline (e.g. text only) and run B the challenger (e.g. text + image);
``delta = B - A`` per query. Each domain and the pooled set of queries get wins/ties/losses,
a paired randomisation test, a paired t-test, a bootstrap interval of the mean delta and
Cohen's d; the per-domain p-values are Holm-corrected as one family. Where the difference
comes from (the image effect by slice of the queries) is :mod:`mmbright_core.analysis.slices`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mmbright_core.analysis import stats
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.task_table import MAIN_SCORE

POOLED = "(pooled)"
"""The ``scope`` of the summary row over all paired queries together."""

QUERY_FEATURES = ("n_images", "n_decodable_images", "query_chars", "n_judged", "n_relevant")
JUDGED = "Judged@10"
"""Share of a run's top 10 that has a judgment; paired as ``judged_a`` / ``judged_b``."""
_KEYS = ["task", "domain", "query_id"]


@dataclass(frozen=True)
class Comparison:
    """Two runs compared query by query.

    Attributes:
        run_a: The baseline run's name.
        run_b: The other run's name.
        measure: The measure compared (e.g. ``"nDCG@10"``).
        seed: Seed of the resampling tests (results are a function of it).
        n_resamples: Resamples of the randomisation test and the bootstrap.
        per_query: One row per paired query: ``task``, ``domain``, ``query_id``, ``a``,
            ``b``, ``delta``, the query features, ``first_relevant_rank_a`` and ``_b``, and
            ``judged_a`` / ``judged_b`` (Judged@10) when the results table has that measure.
        summary: One row per domain, then the pooled row (``scope`` = ``POOLED``).
        unpaired: Queries scored in only one of the two runs (left out of every statistic).
    """

    run_a: str
    run_b: str
    measure: str
    seed: int
    n_resamples: int
    per_query: pd.DataFrame
    summary: pd.DataFrame
    unpaired: int


def paired_summary(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    seed: int = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> dict[str, float | int | bool]:
    """Every paired statistic of B against A for one set of queries.

    Args:
        a: Per-query values of run A.
        b: Per-query values of run B, in the same query order.
        seed: Seed of the randomisation test and the bootstrap.
        n_resamples: Resamples of both.

    Returns:
        ``queries``, ``mean_a``, ``mean_b``, ``delta``, ``ci_low``, ``ci_high``, ``wins``,
        ``ties``, ``losses``, ``t``, ``p_t``, ``p_perm``, ``perm_exact``, ``cohens_d``.
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    deltas = stats.as_deltas(b_arr - a_arr)
    wins, ties, losses = stats.wins_ties_losses(deltas)
    low, high = stats.bootstrap_ci(deltas, n_resamples=n_resamples, seed=seed)
    t_test = stats.paired_t_test(deltas)
    perm = stats.permutation_test(deltas, n_resamples=n_resamples, seed=seed)
    empty = deltas.size == 0
    return {
        "queries": int(deltas.size),
        "mean_a": np.nan if empty else float(a_arr.mean()),
        "mean_b": np.nan if empty else float(b_arr.mean()),
        "delta": np.nan if empty else float(deltas.mean()),
        "ci_low": low,
        "ci_high": high,
        "wins": wins,
        "ties": ties,
        "losses": losses,
        "t": t_test.statistic,
        "p_t": t_test.p_value,
        "p_perm": np.nan if empty else perm.p_value,
        "perm_exact": perm.exact,
        "cohens_d": stats.cohens_d_paired(deltas),
    }


def compare_runs(
    table: pd.DataFrame,
    run_a: str,
    run_b: str,
    measure: str = MAIN_SCORE,
    *,
    seed: int = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> Comparison:
    """Compare two runs of a results table on the queries both were scored on.

    Each domain is tested on its own and all queries are pooled (a micro average over
    queries; the benchmark's headline number is the macro average over domains, which the
    leaderboard shows). Holm's correction runs over the per-domain family; the pooled test
    is the one pre-planned question and keeps its raw p-value.

    Args:
        table: A results table (:func:`mmbright_core.analysis.table.results_table`).
        run_a: The baseline run.
        run_b: The run compared against it.
        measure: The measure column.
        seed: Seed of the resampling tests.
        n_resamples: Resamples of the randomisation test and the bootstrap.

    Returns:
        The comparison.
    """
    per_query, unpaired = _pair(table, run_a, run_b, measure)
    rows = []
    for domain, group in per_query.groupby("domain", sort=True):
        rows.append({"scope": domain, **_summary(group, seed, n_resamples)})
    family = pd.DataFrame(rows)
    for column in ("p_t", "p_perm"):
        family[f"{column}_holm"] = stats.holm(family[column]) if rows else []
    pooled = {"scope": POOLED, **_summary(per_query, seed, n_resamples)}
    pooled.update(p_t_holm=pooled["p_t"], p_perm_holm=pooled["p_perm"])
    summary = pd.concat([family, pd.DataFrame([pooled])], ignore_index=True)
    return Comparison(run_a, run_b, measure, seed, n_resamples, per_query, summary, unpaired)


def _summary(group: pd.DataFrame, seed: int, n_resamples: int) -> dict[str, float | int | bool]:
    return paired_summary(group["a"], group["b"], seed=seed, n_resamples=n_resamples)


def _pair(table: pd.DataFrame, run_a: str, run_b: str, measure: str) -> tuple[pd.DataFrame, int]:
    known = table["run"].unique().tolist()
    for name in (run_a, run_b):
        if name not in known:
            raise UnknownNameError("run", name, known)
    if measure not in table.columns:
        raise InputError("the results table has no such measure", found=measure)
    if run_a == run_b:
        raise InputError("a run cannot be compared with itself", found=run_a)
    columns = [*_KEYS, measure, "first_relevant_rank"]
    judged = JUDGED in table.columns and measure != JUDGED
    if judged:
        columns.append(JUDGED)
    side_a = table.loc[table["run"] == run_a, [*columns, *QUERY_FEATURES]]
    side_b = table.loc[table["run"] == run_b, columns]
    merged = side_a.merge(side_b, on=_KEYS, how="outer", suffixes=("_a", "_b"))
    merged = merged.rename(columns={f"{measure}_a": "a", f"{measure}_b": "b"})
    both = merged["a"].notna() & merged["b"].notna()
    unpaired = int((merged["a"].notna() | merged["b"].notna()).sum() - both.sum())
    paired = merged.loc[both].copy()
    paired["delta"] = paired["b"] - paired["a"]
    order = [*_KEYS, "a", "b", "delta", *QUERY_FEATURES]
    order += ["first_relevant_rank_a", "first_relevant_rank_b"]
    if judged:
        paired = paired.rename(columns={f"{JUDGED}_a": "judged_a", f"{JUDGED}_b": "judged_b"})
        order += ["judged_a", "judged_b"]
    return paired[order].sort_values(_KEYS, kind="stable").reset_index(drop=True), unpaired


def paired_deltas(
    table: pd.DataFrame, run_a: str, run_b: str, measure: str = MAIN_SCORE
) -> pd.DataFrame:
    """The per-query deltas of two runs alone (``Comparison.per_query``, with no statistics).

    For callers that only order queries by how much B lost, such as the inspector's walk.
    """
    return _pair(table, run_a, run_b, measure)[0]


def most_hurt(comparison: Comparison | pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """The queries where B lost most against A, worst first (ties by domain and query id).

    Args:
        comparison: A comparison, or its per-query deltas (:func:`paired_deltas`).
        top: How many to return; only queries with a negative delta are listed.

    Returns:
        Rows of the per-query deltas.
    """
    if top < 0:
        raise InputError("the number of queries to list must not be negative", found=str(top))
    per_query = comparison.per_query if isinstance(comparison, Comparison) else comparison
    hurt = per_query[per_query["delta"] < 0]
    ordered = hurt.sort_values(["delta", "domain", "query_id"], kind="stable")
    return ordered.head(top).reset_index(drop=True)

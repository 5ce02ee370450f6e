"""The results table: one row per (run, task, domain, query) with measures and query features.

Built once per set of runs (the dashboard caches it) and read by every analysis: the
leaderboard averages it, comparisons pair two of its runs, breakdowns group it by the query
features. Scoring is the benchmark's (SPEC §3-4): each query's excluded ids are removed
before the top-1000 cut (``mmbright_core.benchmark``), then ``evaluate`` scores the run; runs
given as DataFrames or Arrow tables stay columnar all the way (no per-document Python loop).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mmbright_core.benchmark import RUN_DEPTH, apply_protocol
from mmbright_core.data.sources import Source
from mmbright_core.measures import Measure, parse_measures
from mmbright_core.metrics import evaluate
from mmbright_core.ranking import rank_order
from mmbright_core.types import Missing, Protocol4, TaskData

RunLike = Any
"""One domain's run: query_id -> doc_id -> score, or a DataFrame / Arrow table of them."""

ImageProblem = Callable[[str, str], "str | None"]
"""(domain, image path) -> why the query image cannot be decoded, or None if it decodes."""

FEATURES = ("n_images", "n_decodable_images", "query_chars", "n_judged", "n_relevant")
KEYS = ("run", "task", "domain", "query_id")
_FIRST_RELEVANT = "RR"  # 1 / rank of the first relevant item (trec_eval recip_rank)


def source_results_table(
    source: Source,
    task: int,
    runs: Mapping[str, Mapping[str, RunLike]],
    *,
    domains: Sequence[str] | None = None,
    protocol: Protocol4 = "paper",
    measures: Iterable[str] = ("nDCG@10",),
    missing: Missing = "skip",
    check_images: bool = True,
    negatives: str = "exclude",
) -> pd.DataFrame:
    """Build the results table of several runs of one task on a dataset copy.

    Args:
        source: The dataset copy (its judgments define the task).
        task: 1, 2, 3 or 4.
        runs: run name -> domain -> run.
        domains: Domains to include (default: every domain any run has).
        protocol: The Task 4 protocol.
        measures: Measure names.
        missing: ``"skip"`` or ``"zero"`` (SPEC §4).
        check_images: Decode every query image to count the decodable ones (cached by the
            source); when False that column is left empty (<NA>).
        negatives: ``"exclude"`` (official) or ``"keep"`` the queries' ``negative_ids``.

    Returns:
        See :func:`results_table`.
    """
    chosen = sorted({d for run in runs.values() for d in run}) if domains is None else domains
    tasks = [
        source.judgments(task, source.check_domain(d), protocol, negatives=negatives)
        for d in chosen
    ]

    def problem(domain: str, path: str) -> str | None:
        return source.image_problem("examples_images", domain, path)

    return results_table(
        tasks,
        runs,
        measures=measures,
        missing=missing,
        image_problem=problem if check_images else None,
    )


def results_table(
    tasks: Sequence[TaskData],
    runs: Mapping[str, Mapping[str, RunLike]],
    *,
    measures: Iterable[str | Measure] = ("nDCG@10",),
    missing: Missing = "skip",
    image_problem: ImageProblem | None = None,
) -> pd.DataFrame:
    """Score every run on every task domain and join the query features.

    Args:
        tasks: One :class:`TaskData` per domain (queries, qrels, exclusions).
        runs: run name -> domain -> run; a run lacking a domain is scored as empty.
        measures: Measure names (e.g. ``"nDCG@10"``).
        missing: ``"skip"`` or ``"zero"``: how judged queries absent from a run count.
        image_problem: Says whether a query image decodes; None leaves
            ``n_decodable_images`` empty (<NA>).

    Returns:
        One row per (run, task, domain, query) of the tasks, in that order, with columns
        ``run``, ``task``, ``domain``, ``query_id``, one per measure (NaN where the query
        was not scored: no judgment, or absent from the run under ``skip``), the features
        ``n_images``, ``n_decodable_images``, ``query_chars``, ``n_judged``, ``n_relevant``,
        ``first_relevant_rank`` (NaN when no relevant item is in the run's top 1,000) and
        ``covered`` (the run ranks the query).
    """
    wanted = list(dict.fromkeys(str(m) for m in parse_measures(measures)))
    features = query_features(tasks, image_problem)
    names = [*wanted, _FIRST_RELEVANT] if _FIRST_RELEVANT not in wanted else wanted
    scored = [
        _score(data, by_domain.get(data.domain, {}), names, missing)
        for by_domain in runs.values()
        for data in tasks
    ]
    columns = [*KEYS, *wanted, *FEATURES, "first_relevant_rank", "covered"]
    if not scored:
        empty = features.merge(_empty_scores(wanted), on=["task", "domain", "query_id"])
        return empty[columns].reset_index(drop=True)
    # Every run scores every query of the tasks in the features' order, so the table is the
    # features repeated once per run (no join on the string keys).
    table = pd.concat([features] * len(runs), ignore_index=True)
    table.insert(0, "run", np.repeat(list(runs), len(features)))
    values = {n: np.concatenate([part[n] for part in scored]) for n in [*names, "covered"]}
    with np.errstate(divide="ignore"):
        rr = values[_FIRST_RELEVANT]
        values["first_relevant_rank"] = np.where(rr > 0, np.round(1 / rr), np.nan)
    scores = pd.DataFrame({n: values[n] for n in columns if n in values}, index=table.index)
    return pd.concat([table, scores], axis=1)[columns]


def query_features(tasks: Sequence[TaskData], image_problem: ImageProblem | None) -> pd.DataFrame:
    """One row per query of the tasks: its images, length and judgments (no run involved)."""
    rows = []
    for data in tasks:
        for query in data.queries:
            labels = data.qrels.get(query.query_id, {}).values()
            decodable: Any = pd.NA
            if image_problem is not None:
                decodable = sum(image_problem(data.domain, i.path) is None for i in query.images)
            rows.append(
                (data.task, data.domain, query.query_id, len(query.images), decodable,
                 len(query.text), len(labels), sum(label >= 1 for label in labels))
            )  # fmt: skip
    frame = pd.DataFrame(rows, columns=["task", "domain", "query_id", *FEATURES])
    return frame.astype({"n_decodable_images": "Int64"})


def _score(
    data: TaskData, run: RunLike, names: list[str], missing: Missing
) -> dict[str, np.ndarray]:
    """Score one domain's run the benchmark's way: each measure and ``covered``, per query.

    The arrays follow the order of ``data.queries``.
    """
    if isinstance(run, Mapping):
        prepared: Any = apply_protocol(run, data.excluded)
        covered = set(prepared)
    else:
        prepared = apply_protocol_columns(run, data.excluded)
        covered = set(pc.unique(prepared.column("query_id")).to_pylist())
    result = evaluate(data.qrels, prepared, measures=names, missing=missing)
    ids = [q.query_id for q in data.queries]
    out = {
        name: np.array([result.per_query[name].get(q, np.nan) for q in ids], dtype=np.float64)
        for name in names
    }
    out["covered"] = np.array([q in covered for q in ids], dtype=bool)
    return out


def _empty_scores(measures: list[str]) -> pd.DataFrame:
    columns = ["task", "domain", "query_id", *measures, "first_relevant_rank", "covered", "run"]
    return pd.DataFrame(columns=columns)


def apply_protocol_columns(
    run: Any, excluded: Mapping[str, Collection[str]], depth: int = RUN_DEPTH
) -> pa.Table:
    """Columnar twin of :func:`mmbright_core.benchmark.apply_protocol` for a run table.

    Rows whose doc id is excluded for their query are dropped, then each query is cut to its
    best ``depth`` rows under the ranking rule. Only queries longer than ``depth`` are
    ranked, so a benchmark-sized run (1,000 per query) is filtered, never sorted.

    Args:
        run: A DataFrame or Arrow table with ``query_id``, ``doc_id``, ``score``.
        excluded: query_id -> doc ids to remove before the cut.
        depth: How many rows to keep per query.

    Returns:
        An Arrow table with the three columns (other columns dropped).
    """
    table = run if isinstance(run, pa.Table) else pa.Table.from_pandas(run, preserve_index=False)
    table = table.select(["query_id", "doc_id", "score"])
    table = _drop_excluded(table, excluded)
    queries = table.column("query_id")
    counts = pc.value_counts(queries)
    long = counts.field("values").filter(pc.greater(counts.field("counts"), depth))
    if len(long) == 0:
        return table
    is_long = pc.is_in(queries, value_set=long).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(is_long)
    subset = table.take(pa.array(rows))
    order = rank_order(
        subset.column("doc_id").to_numpy(), subset.column("score").to_numpy().astype(np.float64)
    )
    codes = pc.dictionary_encode(subset.column("query_id")).combine_chunks().indices.to_numpy()
    # A stable sort by query keeps each query's rows in ranking order.
    grouped = order[np.argsort(codes[order], kind="stable")]
    sizes = np.bincount(codes[grouped])
    within = np.arange(grouped.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    keep = np.concatenate([np.flatnonzero(~is_long), rows[grouped[within < depth]]])
    return table.take(pa.array(np.sort(keep)))


def _drop_excluded(table: pa.Table, excluded: Mapping[str, Collection[str]]) -> pa.Table:
    banned = {doc for docs in excluded.values() for doc in docs}
    if not banned:
        return table
    candidates = np.flatnonzero(
        pc.is_in(table.column("doc_id"), value_set=pa.array(sorted(banned))).to_numpy(
            zero_copy_only=False
        )
    )
    if candidates.size == 0:
        return table
    picked = table.take(pa.array(candidates))
    pairs = zip(
        picked.column("query_id").to_pylist(), picked.column("doc_id").to_pylist(), strict=True
    )
    drop = candidates[[doc in excluded.get(query, ()) for query, doc in pairs]]
    mask = np.ones(table.num_rows, dtype=bool)
    mask[drop] = False
    return table.filter(pa.array(mask))

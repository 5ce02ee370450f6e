"""Time building the results table for ten benchmark-sized runs.

Ten synthetic runs of 2,803 queries x 1,000 documents over the 29 domains (the size of the
whole benchmark, docs/protocol.md, The benchmark), with three relevant documents and two exclusions
per query, are scored into one results table (each Arrow table turned into a run by
``run_from_frame``, then scored by ``evaluate``).
The baseline is a plain per-query Python loop computing the same nDCG@10 and first relevant
rank from dict runs (exclusions and cut by ``benchmark.apply_protocol``). Both are timed
and the ratio printed. ``--queries`` and ``--runs`` shrink the problem for a quick check.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyarrow as pa
from common import sizes

from mmbright_core.analysis.table import results_table
from mmbright_core.benchmark import apply_protocol
from mmbright_core.data.layout import DOMAINS
from mmbright_core.ranking import ranked
from mmbright_core.types import Query, TaskData

POOL = 50_000  # distinct doc ids per domain


def build_tasks(n_queries: int, rng: np.random.Generator) -> list[TaskData]:
    tasks = []
    for d, domain in enumerate(DOMAINS):
        ids = [f"{domain}-{i}" for i in range(d, n_queries, len(DOMAINS))]
        queries = tuple(Query(q, domain, "x" * int(rng.integers(50, 3000))) for q in ids)
        qrels = {q: {f"doc{j:06d}": 1 for j in rng.choice(2_000, 3, replace=False)} for q in ids}
        excluded = {q: frozenset(f"doc{j:06d}" for j in rng.choice(2_000, 2)) for q in ids}
        tasks.append(TaskData(1, domain, "paper", queries, (), qrels, excluded))
    return tasks


def build_run(tasks: list[TaskData], depth: int, rng: np.random.Generator) -> dict[str, pa.Table]:
    names = np.array([f"doc{j:06d}" for j in range(POOL)])
    out = {}
    for data in tasks:
        n = len(data.queries)
        # Each query ranks a random window of the pool: distinct ids, some judged ones.
        starts = rng.integers(0, POOL, size=n)
        picks = (starts[:, None] + np.arange(depth)[None, :] * 3) % POOL
        out[data.domain] = pa.table(
            {
                "query_id": np.repeat([q.query_id for q in data.queries], depth),
                "doc_id": names[picks.ravel()],
                "score": rng.random(n * depth),
            }
        )
    return out


def baseline(tasks: list[TaskData], run: dict[str, pa.Table]) -> float:
    """Per-query Python loop over a dict run; returns seconds (the dict build is not timed)."""
    elapsed = 0.0
    for data in tasks:
        table = run[data.domain]
        as_dict: dict[str, dict[str, float]] = {}
        rows = zip(
            *(table.column(c).to_pylist() for c in ("query_id", "doc_id", "score")), strict=True
        )
        for query_id, doc_id, score in rows:
            as_dict.setdefault(query_id, {})[doc_id] = score
        start = time.perf_counter()
        cut = apply_protocol(as_dict, data.excluded)
        for query in data.queries:
            labels = data.qrels[query.query_id]
            ranking = ranked(cut.get(query.query_id, {}))
            dcg = sum(labels.get(d, 0) / math.log2(i + 2) for i, (d, _) in enumerate(ranking[:10]))
            ideal = sorted(labels.values(), reverse=True)[:10]
            _ = dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
            _ = next((i + 1 for i, (d, _) in enumerate(ranking) if labels.get(d, 0) > 0), None)
        elapsed += time.perf_counter() - start
    return elapsed


def main() -> None:
    args = sizes(__doc__, queries=2_803, docs=1_000, runs=10)
    rng = np.random.default_rng(0)
    tasks = build_tasks(args.queries, rng)
    runs = {f"run{i}": build_run(tasks, args.docs, rng) for i in range(args.runs)}
    start = time.perf_counter()
    table = results_table(tasks, runs, measures=["nDCG@10"])
    built = time.perf_counter() - start
    loop = sum(baseline(tasks, run) for run in runs.values())
    print(
        f"results table: {args.runs} runs x {args.queries} queries x {args.docs} docs "
        f"({len(table)} rows): {built:.2f} s; per-query Python loop: {loop:.2f} s; "
        f"ratio loop/table: {loop / built:.1f}x"
    )


if __name__ == "__main__":
    main()

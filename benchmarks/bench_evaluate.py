"""Time ``evaluate`` against pytrec_eval and ranx on a benchmark-sized workload.

The workload matches the whole of MM-BRIGHT scored at once: 2,803 queries x 1,000 scored
documents, 1-5 judged documents per query (some graded 2), scores rounded to 2 decimals so
that ties are common, as with fp16-era models. Each tool gets the same input in the same
process; the script checks that the numbers agree and prints medians and ratios. A run
given as a DataFrame or Arrow table is scored on its columns (validated, query ids
factorised, the judged documents looked up in bulk); the rows "DataFrame in, scores out"
and "Arrow table in" time that whole path, pandas' own string columns included. Every
``evaluate`` call checks the run's ids against the qrels' (``result.ids``,
:mod:`mmbright_core.metrics.id_check`), so every row includes that check; the script prints
what it found on each path and what it costs alone from dicts.

Run: ``python benchmarks/bench_evaluate.py [--repeat 5]``. Exits non-zero when the numbers
disagree with pytrec_eval or a speed target (5x from dicts, 3x from a DataFrame) is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from mmbright_core.metrics import evaluate
from mmbright_core.metrics.id_check import MappingIds, check_ids

N_QUERIES = 2_803
DEPTH = 1_000
CORPUS = 300_000
TARGET_DICT = 5.0
TARGET_FRAME = 3.0


def workload(seed: int = 0) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Build qrels and a run shaped like the benchmark (ids as in the published corpus)."""
    rng = np.random.default_rng(seed)
    corpus = np.array([f"physics/{k:08x}_{k % 9973}.txt" for k in range(CORPUS)])
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(N_QUERIES):
        query_id = str(q)
        docs = corpus[rng.choice(CORPUS, DEPTH, replace=False)]
        scores = np.round(rng.normal(50.0, 10.0, DEPTH), 2)
        run[query_id] = dict(zip(docs.tolist(), scores.tolist(), strict=True))
        n_judged = int(rng.integers(1, 6))
        # About 60% of judged documents are retrieved, the others are not.
        judged = [
            str(docs[rng.integers(0, DEPTH)])
            if rng.random() < 0.6
            else str(corpus[rng.integers(0, CORPUS)])
            for _ in range(n_judged)
        ]
        qrels[query_id] = {d: int(rng.choice([1, 1, 2])) for d in judged}
    return qrels, run


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall and CPU time of ``fn`` over ``repeat`` calls, and its last result.

    CPU time is reported beside wall time because it is steadier on a shared machine.
    """
    wall, cpu = [], []
    result = None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ranx-repeat", type=int, default=1, help="ranx takes ~10 s a call")
    args = parser.parse_args()

    import pytrec_eval
    import ranx

    qrels, run = workload()
    frame = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    table = pa.Table.from_pandas(frame, preserve_index=False)
    print(
        f"{len(run)} queries, {len(frame):,} scored rows, "
        f"{sum(map(len, qrels.values())):,} judgments; median of {args.repeat}"
    )

    def with_pytrec() -> dict[str, dict[str, float]]:
        return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)

    def with_ranx() -> Any:
        return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "ndcg@10", return_mean=False)

    with_ranx()  # compile ranx's numba kernels outside the timing
    timings = {
        "pytrec_eval": timed(with_pytrec, args.repeat),
        "ranx": timed(with_ranx, args.ranx_repeat),
        "evaluate (dicts)": timed(lambda: evaluate(qrels, run, "nDCG@10"), args.repeat),
        "DataFrame in, scores out": timed(lambda: evaluate(qrels, frame, "nDCG@10"), args.repeat),
        "Arrow table in": timed(lambda: evaluate(qrels, table, "nDCG@10"), args.repeat),
    }
    base_wall, base_cpu, expected = timings["pytrec_eval"]
    print(f"{'':24s} {'wall ms':>9s} {'cpu ms':>9s}  speed-up vs pytrec_eval (wall, cpu)")
    for name, (wall, cpu, _) in timings.items():
        ratios = f"{base_wall / wall:5.1f}x {base_cpu / cpu:5.1f}x"
        print(f"{name:24s} {wall * 1e3:9.1f} {cpu * 1e3:9.1f}  {ratios}")

    from_dict = timings["evaluate (dicts)"][2]
    from_frame = timings["DataFrame in, scores out"][2]
    ours = from_dict.per_query["nDCG@10"]
    worst = max(abs(expected[q]["ndcg_cut_10"] - ours[q]) for q in expected)
    columnar = from_frame.per_query["nDCG@10"]
    worst_frame = max(abs(expected[q]["ndcg_cut_10"] - columnar[q]) for q in expected)
    same_paths = (
        from_frame.per_query == from_dict.per_query == timings["Arrow table in"][2].per_query
    )
    ranx_values = timings["ranx"][2]
    ranx_gap = [abs(float(v) - ours[q]) for q, v in zip(qrels, ranx_values, strict=True)]
    print(
        f"max |ours - pytrec_eval| = {worst:.2e} (dicts), {worst_frame:.2e} (DataFrame); "
        f"dict, DataFrame and Arrow paths equal: {same_paths}"
    )
    print(
        f"max |ours - ranx| = {max(ranx_gap):.2e} on {sum(g > 1e-9 for g in ranx_gap)} queries "
        "(ranx breaks score ties by insertion order, not by doc id)"
    )
    check_wall, check_cpu, _ = timed(lambda: check_ids(qrels, MappingIds(run), ()), args.repeat)
    same_ids = from_dict.ids == from_frame.ids == timings["Arrow table in"][2].ids
    print(
        f"id check, in every call above: {from_dict.ids}; the same on every path: {same_ids}; "
        f"alone from dicts {check_wall * 1e3:.1f} ms wall, {check_cpu * 1e3:.1f} ms CPU"
    )
    ok = worst <= 1e-9 and worst_frame <= 1e-9 and same_paths and same_ids
    for name, target in (
        ("evaluate (dicts)", TARGET_DICT),
        ("DataFrame in, scores out", TARGET_FRAME),
    ):
        met = base_wall / timings[name][0] >= target
        print(f"target (wall): {target:g}x pytrec_eval, {name}:", "met" if met else "NOT met")
        ok &= met
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

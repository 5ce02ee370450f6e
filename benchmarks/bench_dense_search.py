"""Time the package's exact dense search against a plain numpy matrix product + argpartition.

All sides search the same L2-normalised float32 vectors (a 100,000 x 384 corpus, MiniLM's
width; 200 queries; top 1,000) exactly. Timed in the same run, rounds interleaved so that a
busy machine slows each side alike: the plain numpy path (blocks of 64 queries, a matrix
product, ``argpartition``, a sort of the kept part), the package's exact search
(``VectorIndex(...).search``), and the full path the retrievers use (``dense_top_k``: 20
exclusions per query removed before the cut, ties by doc id, doc_id -> score dicts). The
previous exact search, faiss's ``IndexFlatIP``, is timed once for reference.

Run: ``python benchmarks/bench_dense_search.py [--corpus 100000] [--dim 384] [--repeat 5]``.
Exits non-zero when the package's exact search is slower than numpy, or when its results
differ from numpy's (the same positions and bit-identical scores) or ``dense_top_k``'s differ
from the ranking rule applied to full rows of exact scores (``exact.exact_scores``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_info

from mmbright_core.retrieval.index import VectorIndex, dense_top_k, l2_normalise, top_k_array

# Set on some processors to work around old OpenBLAS builds; they slow a current numpy.
_FORCING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def numpy_search(
    corpus: np.ndarray, queries: np.ndarray, k: int, batch: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """Return the top-``k`` scores and positions per query by a blocked matrix product."""
    scores_out, positions_out = [], []
    for start in range(0, len(queries), batch):
        scores = queries[start : start + batch] @ corpus.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        positions = np.take_along_axis(top, order, axis=1)
        positions_out.append(positions)
        scores_out.append(np.take_along_axis(scores, positions, axis=1))
    return np.vstack(scores_out), np.vstack(positions_out)


def interleaved(
    fns: dict[str, Callable[[], object]], repeat: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU times (all threads) of each function over ``repeat`` rounds, one call of
    each per round."""
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu


def blas_kernels() -> str:
    """Name the BLAS libraries loaded, their kernel and thread count (threadpoolctl)."""
    forced = {name: os.environ[name] for name in _FORCING if name in os.environ}
    return f"{forced or 'no kernel forced'}; " + "; ".join(
        f"{info['internal_api']} {info.get('version')} {info.get('architecture')} "
        f"x{info['num_threads']} ({info['filepath'].rsplit('/', 1)[-1]})"
        for info in threadpool_info()
        if info["user_api"] == "blas"
    )


def reference_runs(
    corpus: np.ndarray, queries: np.ndarray, ids: np.ndarray, k: int, exclude: list[np.ndarray]
) -> list[dict[str, float]]:
    """The ranking rule applied to each query's full row of exact scores (exclusions first).

    An exact score is what ``dense_top_k`` reports: the float32 components' products in
    float64, summed component by component in order, rounded to float32
    (``mmbright_core.retrieval.exact.exact_scores``), computed here for every document.
    """
    columns = np.ascontiguousarray(corpus.T, dtype=np.float64)
    runs = []
    for row_query, excluded in zip(queries.astype(np.float64), exclude, strict=True):
        total = np.zeros(len(corpus), dtype=np.float64)
        for component, weight in zip(columns, row_query, strict=True):
            total += component * weight
        scores = total.astype(np.float32).astype(np.float64) * 100.0
        runs.append(top_k_array(ids, scores, k, excluded))
    return runs


def main() -> int:
    """Run the benchmark; non-zero when the exact search is slower than numpy or differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    corpus = l2_normalise(rng.normal(size=(args.corpus, args.dim)))
    queries = l2_normalise(rng.normal(size=(args.queries, args.dim)))
    ids = np.array([f"d/{i:08x}_1.txt" for i in range(args.corpus)])
    exclude = [np.sort(rng.choice(args.corpus, 20, replace=False)) for _ in range(args.queries)]
    index = VectorIndex(corpus)
    results: dict[str, object] = {}

    def timed(name: str, fn: Callable[[], object]) -> Callable[[], object]:
        return lambda: results.__setitem__(name, fn())

    times, cpu = interleaved(
        {
            "numpy": timed("numpy", lambda: numpy_search(corpus, queries, args.k)),
            "search": timed("search", lambda: index.search(queries, args.k)),
            "dense_top_k": timed(
                "dense_top_k", lambda: dense_top_k(index, queries, ids, args.k, exclude)
            ),
        },
        args.repeat,
    )
    faiss_time, faiss_positions = _faiss_flat(corpus, queries, args.k)
    print(f"corpus {args.corpus:,} x {args.dim}, {args.queries} queries, top {args.k}")
    print(f"BLAS: {blas_kernels()}")
    median = _report(times, cpu, faiss_time)
    return _verdict(args, results, faiss_positions, median, corpus, queries, ids, exclude)


def _report(
    times: dict[str, list[float]], cpu: dict[str, list[float]], faiss_time: float
) -> dict[str, float]:
    # Prints each side's medians and its ratio to numpy; returns the wall medians.
    median = {name: statistics.median(values) for name, values in times.items()}
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    for name, values in times.items():
        rounds = ", ".join(f"{v:.3f}" for v in values)
        ratio = median["numpy"] / median[name]
        ratio_cpu = median_cpu["numpy"] / median_cpu[name]
        print(
            f"{name:12s} median {median[name]:.3f} s wall, {median_cpu[name]:.3f} s CPU   "
            f"numpy/this x{ratio:.2f} wall, x{ratio_cpu:.2f} CPU   (wall: {rounds})"
        )
    ratio = median["numpy"] / faiss_time
    print(f"faiss IndexFlatIP, the previous exact search (once) {faiss_time:.3f} s   x{ratio:.2f}")
    return median


def _canonical(scores: np.ndarray, positions: np.ndarray) -> list[list[tuple[float, int]]]:
    # argpartition leaves equal scores in no particular order: compare (score, position) lists
    # sorted by score descending, then position.
    return [
        sorted(zip((-row).tolist(), pos.tolist(), strict=True))
        for row, pos in zip(scores, positions, strict=True)
    ]


def _faiss_flat(corpus: np.ndarray, queries: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    import faiss

    flat = faiss.IndexFlatIP(corpus.shape[1])
    flat.add(corpus)
    start = time.perf_counter()
    _, positions = flat.search(queries, k)
    return time.perf_counter() - start, positions


def _verdict(
    args: argparse.Namespace,
    results: dict[str, object],
    faiss_positions: np.ndarray,
    median: dict[str, float],
    corpus: np.ndarray,
    queries: np.ndarray,
    ids: np.ndarray,
    exclude: list[np.ndarray],
) -> int:
    expected_scores, expected_positions = results["numpy"]  # type: ignore[misc]
    found_scores, found_positions = results["search"]  # type: ignore[misc]
    same_search = _canonical(found_scores, found_positions) == _canonical(
        expected_scores, expected_positions
    )
    same_runs = results["dense_top_k"] == reference_runs(corpus, queries, ids, args.k, exclude)
    overlap = np.mean(
        [
            len(set(a) & set(b)) / args.k
            for a, b in zip(faiss_positions, found_positions, strict=True)
        ]
    )
    print(f"search == numpy (positions, float32 scores bit for bit, ties aside): {same_search}")
    print(f"dense_top_k == ranking rule on the full rows of exact scores: {same_runs}")
    print(f"top-{args.k} overlap with faiss: {overlap:.4f}")
    if not (same_search and same_runs):
        print("FAIL: the exact search differs from the numpy reference")
        return 1
    if median["search"] > median["numpy"]:
        print("FAIL: the exact search is slower than numpy")
        return 1
    print("OK: the exact search is not slower than numpy and returns the same results")
    return 0


if __name__ == "__main__":
    sys.exit(main())

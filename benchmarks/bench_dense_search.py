"""Time the package's exact dense search against a plain numpy matrix product + argpartition.

All sides search the same L2-normalised float32 vectors (a 100,000 x 384 corpus, MiniLM's
width; 200 queries; top 1,000) exactly. Timed in the same run, rounds interleaved so that a
busy machine slows each side alike: the plain numpy path (blocks of 64 queries, a matrix
product, ``argpartition``, a sort of the kept part), the package's exact search
(``VectorIndex(...).search``), and the full path the retrievers use (``dense_top_k``: 20
exclusions per query removed before the cut, ties by doc id, doc_id -> score dicts). The
previous exact search, faiss's ``IndexFlatIP``, is timed once for reference.

The reference the results must equal is computed here, untimed, on its own: every query's
score of every vector as the package documents it (docs/protocol.md, Dense scores), the exact
inner product rounded to float32, not by the package's code. numpy's float32 scores are not
the reference: BLAS rounds a row by its place in the product and by the product's shape.

Run: ``python benchmarks/bench_dense_search.py [--corpus 100000] [--dim 384] [--repeat 5]``.
Exits non-zero when the package's exact search is slower than numpy, or when its results
differ from the reference (the same positions and bit-identical scores), or ``dense_top_k``'s
from the ranking rule applied to the reference's full score rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from threadpoolctl import threadpool_info

from mmbright_core.retrieval.search.index import VectorIndex, dense_top_k, l2_normalise, top_k_array

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


def exact_rows(corpus: np.ndarray, queries: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Every query's score of every vector: the exact inner product rounded to float32.

    A float64 matrix product lies within ``(dim + 2) * 2**-53`` of the magnitudes' sum of
    the exact value (the float32 components' products are exact in float64); where a float32
    rounding midpoint lies that close, the score is rounded from the exact sum in fractions.
    """
    wide = queries.astype(np.float64)
    slack = (corpus.shape[1] + 2) * 2.0**-53
    rows = np.empty((len(queries), len(corpus)), dtype=np.float32)
    for start in range(0, len(corpus), chunk):
        part = corpus[start : start + chunk].astype(np.float64)
        near = wide @ part.T
        nearest = near.astype(np.float32)
        magnitude = np.abs(wide) @ np.abs(part.T)
        # The nearer midpoint is half a step away, the step below when at a power of two.
        step = np.spacing(np.nextafter(np.abs(nearest), np.float32(0))).astype(np.float64)
        close = np.abs(near - nearest) >= step / 2 - 2 * slack * magnitude
        for query, position in np.argwhere(close).tolist():
            nearest[query, position] = _rounded(part[position], wide[query])
        rows[:, start : start + chunk] = nearest
    return rows


def _rounded(vector: np.ndarray, query: np.ndarray) -> np.float32:
    # The float32 nearest to the exact inner product, ties to the even significand.
    value = sum(
        Fraction(a) * Fraction(b) for a, b in zip(vector.tolist(), query.tolist(), strict=True)
    )
    guess = np.float32(float(value))
    around = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(1))]
    return min(around, key=lambda v: (abs(Fraction(float(v)) - value), int(v.view(np.uint32)) % 2))


def reference_search(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of each reference row and their positions, equal scores by position."""
    positions = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(rows, positions, axis=1), positions


def reference_runs(
    rows: np.ndarray, ids: np.ndarray, k: int, exclude: list[np.ndarray]
) -> list[dict[str, float]]:
    """The ranking rule applied to each query's full reference row (exclusions first)."""
    return [
        top_k_array(ids, row.astype(np.float64) * 100.0, k, excluded)
        for row, excluded in zip(rows, exclude, strict=True)
    ]


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


def _faiss_flat(corpus: np.ndarray, queries: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    import faiss

    flat = faiss.IndexFlatIP(corpus.shape[1])
    flat.add(corpus)
    start = time.perf_counter()
    _, positions = flat.search(queries, k)
    return time.perf_counter() - start, positions


def _overlap(found: np.ndarray, other: np.ndarray, k: int) -> float:
    # The mean share of each query's top-k positions that two searches have in common.
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(found, other, strict=True)]))


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
    start = time.perf_counter()
    rows = exact_rows(corpus, queries)
    print(f"reference: every pair's exact inner product, {time.perf_counter() - start:.1f} s")
    expected_scores, expected_positions = reference_search(rows, args.k)
    found_scores, found_positions = results["search"]  # type: ignore[misc]
    same_search = np.array_equal(found_positions, expected_positions) and np.array_equal(
        found_scores.view(np.uint32), expected_scores.view(np.uint32)
    )
    same_runs = results["dense_top_k"] == reference_runs(rows, ids, args.k, exclude)
    numpy_scores, numpy_positions = results["numpy"]  # type: ignore[misc]
    reference_scores = np.take_along_axis(rows, numpy_positions, axis=1)
    same_bits = np.mean(numpy_scores == reference_scores)
    apart = np.abs(numpy_scores.astype(np.float64) - reference_scores).max()
    print(f"search == reference (positions, float32 scores bit for bit): {same_search}")
    print(f"dense_top_k == ranking rule on the reference's full rows: {same_runs}")
    print(
        f"numpy's top-{args.k}: {same_bits:.1%} of its scores equal the reference bit for bit "
        f"(the rest within {apart:.1e}), "
        f"{_overlap(numpy_positions, expected_positions, args.k):.4f} of its positions shared"
    )
    print(
        f"top-{args.k} overlap with faiss: {_overlap(faiss_positions, found_positions, args.k):.4f}"
    )
    if not (same_search and same_runs):
        print("FAIL: the exact search differs from the reference")
        return 1
    if median["search"] > median["numpy"]:
        print("FAIL: the exact search is slower than numpy")
        return 1
    print("OK: the exact search is not slower than numpy and returns the reference's results")
    return 0


if __name__ == "__main__":
    sys.exit(main())

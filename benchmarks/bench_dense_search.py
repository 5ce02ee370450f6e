"""Time exact dense search with faiss against a plain numpy matrix product + argpartition.

Both search the same L2-normalised float32 vectors (a 100,000 x 384 corpus, MiniLM's width;
200 queries; top 1,000) exactly, so they must return the same documents. The script also
times the full path the retrievers use (``dense_top_k``: faiss, exclusions before the cut,
ties by doc id). faiss must not be slower than numpy.

Run: ``python benchmarks/bench_dense_search.py [--corpus 100000] [--dim 384]``. Exits
non-zero when faiss is slower or the two disagree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from mmbright_core.retrieval.index import VectorIndex, dense_top_k, l2_normalise


def numpy_search(corpus: np.ndarray, queries: np.ndarray, k: int, batch: int = 64) -> np.ndarray:
    """Return the top-``k`` positions per query by a blocked matrix product."""
    out = []
    for start in range(0, len(queries), batch):
        scores = queries[start : start + batch] @ corpus.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        out.append(np.take_along_axis(top, order, axis=1))
    return np.vstack(out)


def median_time(fn, repeat: int) -> tuple[float, object]:
    """Median wall time of ``fn`` over ``repeat`` calls, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    """Run the benchmark; non-zero when faiss is slower than numpy or disagrees with it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    corpus = l2_normalise(rng.normal(size=(args.corpus, args.dim)))
    queries = l2_normalise(rng.normal(size=(args.queries, args.dim)))
    ids = np.array([f"d/{i:08x}_1.txt" for i in range(args.corpus)])

    start = time.perf_counter()
    index = VectorIndex(corpus)
    build = time.perf_counter() - start
    faiss_time, (_, found) = median_time(lambda: index.search(queries, args.k), args.repeat)
    numpy_time, expected = median_time(lambda: numpy_search(corpus, queries, args.k), args.repeat)
    exclude = [rng.choice(args.corpus, 20, replace=False) for _ in range(args.queries)]
    full_time, runs = median_time(
        lambda: dense_top_k(index, queries, ids, args.k, exclude), args.repeat
    )
    agree = np.mean([len(set(a) & set(b)) / args.k for a, b in zip(found, expected, strict=True)])
    print(f"corpus {args.corpus:,} x {args.dim}, {args.queries} queries, top {args.k}")
    print(f"faiss IndexFlatIP  build {build:.2f} s   search {faiss_time:.3f} s")
    print(
        f"numpy matmul+argpartition   search {numpy_time:.3f} s   "
        f"(faiss x{numpy_time / faiss_time:.2f})"
    )
    print(f"dense_top_k (exclusions, ties by id, dicts)   {full_time:.3f} s")
    print(f"top-{args.k} overlap faiss vs numpy: {agree:.4f}")
    if agree < 0.999 or not all(len(r) == args.k for r in runs):
        print("FAIL: faiss and numpy disagree")
        return 1
    if faiss_time > numpy_time:
        print("FAIL: faiss is slower than numpy")
        return 1
    print("OK: faiss is not slower than numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

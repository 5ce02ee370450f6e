"""Time the package's exact MaxSim search against a plain torch einsum-and-max on the same data.

Two synthetic domains of L2-normalised float32 token vectors, 128 wide: Task 2's physics
passages (338,291 passages x 180 tokens, ColBERT's document length) and Task 3's images
(17,673 images x 1,030 patches, ColPali's patch count), with ``--queries`` queries of 32 tokens
each. ``--scale`` shrinks the document counts (the full sizes need 31 GB and 9.3 GB of float32
tokens; a GPU's run of the full benchmark keeps them in host memory, as the cache's memory-mapped
rows are).

Each side runs in its own process, so that its peak memory (resident set above the data, Linux's
``VmHWM`` after a reset, or the GPU's peak allocation) is its own: the plain path scores each
query with one ``einsum`` of its tokens with every document token, the maximum over each
document's tokens, the sum over the query's tokens and ``torch.topk``; the package's path is
:func:`~mmbright_core.retrieval.search.maxsim.maxsim_top_k` (blocks of documents, the float32
pass, the exact re-score of the candidates, the ranking rule). Both must agree on every query's
top ``--k`` set.

Run: ``python benchmarks/bench_maxsim.py [--scale 0.01] [--queries 20] [--k 100] [--device cpu]``.
Exits non-zero when the package's path is slower than the plain one, or their top ``k`` differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import numpy as np

DOMAINS = {"task2-physics": (338_291, 180), "task3-images": (17_673, 1_030)}
DIM, QUERY_TOKENS = 128, 32


def data(domain: str, scale: float, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the domain's ``(docs, tokens, DIM)`` document and ``(queries, 32, DIM)`` query
    tokens, seeded and L2-normalised."""
    count, tokens = DOMAINS[domain]
    rng = np.random.default_rng(0)
    docs = np.empty((max(1, round(count * scale)), tokens, DIM), dtype=np.float32)
    for start in range(0, len(docs), 1024):  # in slices: no float64 copy of the whole
        part = rng.standard_normal((len(docs[start : start + 1024]), tokens, DIM))
        docs[start : start + 1024] = part / np.linalg.norm(part, axis=2, keepdims=True)
    asked = rng.standard_normal((queries, QUERY_TOKENS, DIM))
    asked /= np.linalg.norm(asked, axis=2, keepdims=True)
    return docs, asked.astype(np.float32)


def plain(docs: np.ndarray, queries: np.ndarray, k: int, device: str) -> list[list[int]]:
    """Each query's top ``k`` positions by one einsum with every token, max and sum."""
    import torch

    with torch.inference_mode():
        corpus = torch.from_numpy(docs).to(device)
        found = []
        for query in torch.from_numpy(queries).to(device):
            scores = torch.einsum("td,nsd->nts", query, corpus).amax(dim=2).sum(dim=1)
            found.append(torch.topk(scores, k).indices.cpu().tolist())
    return found


def package(docs: np.ndarray, queries: np.ndarray, k: int, device: str) -> list[list[int]]:
    """Each query's top ``k`` positions by the package's exact MaxSim search."""
    from mmbright_core.retrieval.search.maxsim import maxsim_top_k

    rows = docs.reshape(len(docs), -1)
    ids = np.array([f"{i:08d}" for i in range(len(docs))])
    runs = maxsim_top_k(
        list(queries),
        lambda units: rows[units[0] : units[-1] + 1] if _contiguous(units) else rows[units],
        ids,
        k,
        [np.empty(0, dtype=np.int64)] * len(queries),
        width=docs.shape[1],
        device=device,
    )
    return [[int(doc) for doc in run] for run in runs]


def _contiguous(units: np.ndarray) -> bool:
    # A block of the first pass: a view of the rows, as a memory-mapped shard's read would be.
    return len(units) > 0 and units[-1] - units[0] == len(units) - 1


def side(args: argparse.Namespace) -> dict[str, Any]:
    """Run one side in this process: its seconds, peak memory above the data, and top k."""
    import torch

    import mmbright_core.retrieval.search.maxsim  # noqa: F401  (imported before the clock starts)

    docs, queries = data(args.domain, args.scale, args.queries)
    k = min(args.k, len(docs))
    before = _resident()
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    found = (plain if args.side == "plain" else package)(docs, queries, k, args.device)
    seconds = time.perf_counter() - start
    if args.device.startswith("cuda"):
        peak = torch.cuda.max_memory_allocated()
    else:
        peak = _peak_resident() - before
    return {"seconds": seconds, "peak": peak, "docs": len(docs), "found": found}


def _resident() -> int:
    # The resident set now, in bytes, after resetting the peak (Linux: clear_refs 5).
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return _status("VmRSS")


def _peak_resident() -> int:
    return _status("VmHWM")


def _status(field: str) -> int:
    with open("/proc/self/status") as handle:
        line = next(line for line in handle if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def main() -> int:
    """Run both sides per domain; non-zero when the package is slower or differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--side", choices=("plain", "package"), help=argparse.SUPPRESS)
    parser.add_argument("--domain", choices=tuple(DOMAINS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(side(args)))
        return 0
    failed = False
    for domain, (count, tokens) in DOMAINS.items():
        results = {}
        for name in ("plain", "package"):
            command = [sys.executable, __file__, *sys.argv[1:], "--side", name]
            answer = subprocess.run(
                [*command, "--domain", domain], check=True, capture_output=True, text=True
            )
            results[name] = json.loads(answer.stdout)
        docs = results["plain"]["docs"]
        size = docs * tokens * DIM * 4
        print(
            f"{domain}: {docs:,} of {count:,} documents x {tokens} tokens x {DIM} "
            f"({size / 2**30:.2f} GiB float32), {args.queries} queries x {QUERY_TOKENS} tokens, "
            f"top {args.k}, {args.device}"
        )
        for name, result in results.items():
            print(
                f"  {name:8s} {result['seconds']:8.2f} s   peak {result['peak'] / 2**20:9.1f} MiB"
            )
        ratio = results["plain"]["seconds"] / results["package"]["seconds"]
        same = all(
            set(a) == set(b)
            for a, b in zip(results["plain"]["found"], results["package"]["found"], strict=True)
        )
        print(f"  plain/package x{ratio:.2f}; same top k: {same}")
        failed |= ratio < 1 or not same
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())

"""What checking cache entries against their records costs, against reading them unchecked.

Builds, in a temporary folder, a BM25 index of a synthetic corpus and an embedding cache of
random float32 vectors, then times, from the page cache, (a) opening the entry and reading
every byte of it as a query pass does, with the checks already passed in this process (the
files unchanged since), and (b) the same with the checks done first, once with each
checksum (xxh3-128 where xxhash is installed, SHA-256 otherwise). Prints a JSON summary.

    python benchmarks/bench_cache_verify.py [--passages 100000] [--vectors 100000] [--dim 384]
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from common import best, sizes

from mmbright_core.retrieval.cache import verify
from mmbright_core.retrieval.cache.store import EmbeddingCache
from mmbright_core.retrieval.lexical.bm25_index import BM25Index


def _corpus(passages: int, rng: np.random.Generator) -> list[list[str]]:
    vocabulary = np.array([f"term{i}" for i in range(50_000)])
    return [list(vocabulary[rng.zipf(1.3, size=80) % len(vocabulary)]) for _ in range(passages)]


def _read_index(folder: Path) -> float:
    index = BM25Index.load(folder)
    assert index is not None
    return float(index.postings.data.sum() + index.postings.indices.sum())


def _measure(name: str, build: Callable[[], None], read: Callable[[], object]) -> dict[str, float]:
    out: dict[str, float] = {}
    for algorithm in ("xxh3_128", "sha256"):
        if algorithm not in verify._ALGORITHMS:
            continue
        verify.ALGORITHM = algorithm
        build()
        read()  # warm the page cache and the checks
        unchecked = best(3, read)

        def checked() -> object:
            verify._VERIFIED.clear()
            return read()

        seconds = best(3, checked)
        out[f"{name}_unchecked_{algorithm}_s"] = round(unchecked, 4)
        out[f"{name}_checked_{algorithm}_s"] = round(seconds, 4)
        out[f"{name}_ratio_{algorithm}"] = round(seconds / unchecked, 2)
    return out


def main() -> None:
    """Run the measurements and print them."""
    args = sizes(__doc__, passages=100_000, vectors=100_000, dim=384)
    rng = np.random.default_rng(0)
    root = Path(tempfile.mkdtemp(prefix="bench-cache-verify-"))
    index = BM25Index.build(_corpus(args.passages, rng), 0.9, 0.4)
    folder = root / "bm25" / "index"

    def save_index() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        index.save(folder)

    vectors = rng.standard_normal((args.vectors, args.dim)).astype(np.float32)
    keys = [f"{i:064x}" for i in range(args.vectors)]
    settings = {"model": "bench"}

    def save_vectors() -> None:
        shutil.rmtree(root / "embeddings", ignore_errors=True)
        EmbeddingCache(root, settings).encode(
            list(range(args.vectors)), keys, lambda rows: vectors[rows], batch_size=8192
        )

    result = {
        **_measure("bm25", save_index, lambda: _read_index(folder)),
        **_measure(
            "embeddings", save_vectors, lambda: EmbeddingCache(root, settings).lookup(keys).sum()
        ),
    }
    result["index_bytes"] = sum(p.stat().st_size for p in folder.iterdir())
    result["embedding_bytes"] = sum(p.stat().st_size for p in (root / "embeddings").rglob("*"))
    shutil.rmtree(root)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""Corpus encoding throughput: the local path against Ray with 1 and 2 local workers.

The same synthetic passages (about 2,200 characters, the benchmark's mean, docs/protocol.md, The
benchmark) are encoded with the packaged MiniLM three times, each into a fresh embedding cache: in
process, then on a local Ray instance with one and with two model actors. The script reports
passages per second, the Ray overhead ratio (Ray wall time / local wall time, actor start-up
included) and checks that all three caches hold bit-identical vectors.

Ray gives each actor one CPU and, like torch under Ray, one thread; the local path uses every
core. On a 2-core machine one worker is therefore about half as fast as the local path and
two workers about as fast: the ratio measures Ray's cost, the speed-up comes from GPUs.

Run: ``python benchmarks/bench_ray_encode.py [--scale 0.25]`` (``--scale 1`` encodes 1,000
passages per path, about 4 minutes on 2 free cores). Exits non-zero when vectors differ.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_full_bm25 import CHARS_PER_WORD, MEAN_CHARS, Words

from mmbright_core.retrieval.cache.store import EmbeddingCache, content_key
from mmbright_core.retrieval.registry import get_retriever
from mmbright_core.retrieval.runner.ray_engine import EncoderSpec, RayEngine, encode_items

PASSAGES = 1_000


def passages(n: int) -> list[str]:
    """Return ``n`` synthetic passages of about 2,200 characters."""
    words = Words(1)
    per_doc = MEAN_CHARS / CHARS_PER_WORD
    lengths = np.maximum(5, words.rng.normal(per_doc, per_doc / 3, n)).astype(np.int64)
    return words.texts(lengths)


def stored(spec: EncoderSpec, keys: list[str]) -> np.ndarray:
    """Return the vectors a cache folder holds for ``keys``."""
    cache = spec.build().cache
    return EmbeddingCache(cache.folder.parents[1], cache.settings).lookup(keys)  # type: ignore[union-attr]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 1,000 passages")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray

    texts = passages(max(8, round(PASSAGES * args.scale)))
    keys = [content_key(t) for t in texts]
    options = {"batch_size": args.batch_size, "device": "cpu"}
    with tempfile.TemporaryDirectory() as tmp:
        local = get_retriever("dense", cache_dir=f"{tmp}/local", **options)
        local.encode(texts[:2], "")  # load the model outside the timing
        Path(tmp, "local").rename(Path(tmp, "warm"))
        start = time.perf_counter()
        reference = local.encode(texts, "")
        walls = {"local": time.perf_counter() - start}
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        print(f"ray.init: {time.perf_counter() - start:.1f} s")
        same = True
        for workers in (1, 2):
            spec = EncoderSpec(
                "dense", tuple(sorted({**options, "cache_dir": f"{tmp}/w{workers}"}.items()))
            )
            start = time.perf_counter()
            shards = encode_items(RayEngine(workers=workers, shard_items=256), spec, keys, texts)
            walls[f"ray x{workers}"] = time.perf_counter() - start
            same &= stored(spec, keys).tobytes() == reference.tobytes()
            print(f"ray x{workers}: {shards} shards")
        ray.shutdown()
    for name, wall in walls.items():
        ratio = wall / walls["local"]
        print(
            f"{name:>8}: {len(texts):,} passages in {wall:6.1f} s = {len(texts) / wall:6.1f}/s "
            f"(x{ratio:.2f} the local wall time)"
        )
    print("vectors bit-identical across the three paths:", same)
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

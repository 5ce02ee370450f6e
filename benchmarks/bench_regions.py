"""Measure occlusion over a grid (``explain_regions``) on CPU: load, cold, reopened.

Two open_clip models with random weights (no download; the compute of trained ones): the
tiny config the test suite registers, and ``ViT-B-32``, the architecture of the paper's
smaller CLIP baselines. On the demo's biology Task 2 query ``biology_1`` (a 760x500 image),
for one wrong passage against a relevant one, it times: the model's load (the first
encoding), the grid computed with an empty cache (``grid**2 + 1`` image passes and the
texts), the same query against another item (the masked images' vectors come from the
embedding cache) and the result reopened (one file read). It prints the load average too.

Run: ``python benchmarks/bench_regions.py [--grid 7] [--models tiny ViT-B-32]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from common import TINY_CLIP, tiny_clip_folder, torch_threads

from mmbright_core.data.sources import open_source
from mmbright_core.retrieval.backends.clip import ClipRetriever
from mmbright_core.retrieval.dual.regions import explain_regions
from mmbright_core.retrieval.explanation import RegionAttribution

QUERY = "biology_1"


def measure(model: str, grid: int, folder: Path) -> dict[str, float]:
    """Seconds to load, compute cold, compute for another item, and reopen."""
    source = open_source("demo")
    data = source.task(2, "biology")
    relevant = [d for d, grade in data.qrels[QUERY].items() if grade > 0]
    wrong = [d.doc_id for d in data.corpus if d.doc_id not in relevant][:2]
    cache = folder / model
    start = time.perf_counter()
    clip = ClipRetriever(model=model, pretrained="none", cache_dir=str(cache))
    clip.encode_texts([f"warm-up {model}"])  # loads the model
    load = time.perf_counter() - start

    def once(doc: str) -> float:
        begin = time.perf_counter()
        found = explain_regions(
            clip, data, source, QUERY, doc, versus=relevant[0], grid=grid, cache_dir=cache
        )
        assert isinstance(found, RegionAttribution), found
        return time.perf_counter() - begin

    cold = once(wrong[0])
    other = once(wrong[1])
    reopened = once(wrong[0])
    return {"load": load, "cold": cold, "other item": other, "reopened": reopened}


def main() -> int:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=7)
    parser.add_argument("--models", nargs="+", default=["tiny", "ViT-B-32"])
    args = parser.parse_args()
    with tiny_clip_folder() as folder:
        passes = args.grid**2 + 1
        print(
            f"{torch_threads()}, grid {args.grid} ({passes} image passes), load average "
            + ", ".join(f"{v:.1f}" for v in os.getloadavg())
        )
        print(
            f"{'model':<12}{'load s':>9}{'cold s':>9}{'passes/s':>10}{'other s':>9}{'reopen s':>10}"
        )
        for name in args.models:
            model = TINY_CLIP if name == "tiny" else name
            got = measure(model, args.grid, folder)
            print(
                f"{name:<12}{got['load']:>9.2f}{got['cold']:>9.2f}{passes / got['cold']:>10.1f}"
                f"{got['other item']:>9.2f}{got['reopened']:>10.3f}"
            )
        print("load average after: " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

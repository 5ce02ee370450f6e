"""Measure open_clip encoding throughput on CPU per batch size (random weights, no download).

Two models: a tiny config registered for the test suite (wiring only) and ``ViT-B-32`` (the
architecture of the paper's smaller CLIP baselines) with random weights, which costs the
same compute as the trained model. For each batch size it encodes images (224 px for
ViT-B-32) and 77-token texts through :class:`ClipRetriever` with an in-memory cache miss on
every item, and prints items per second.

Run: ``python benchmarks/bench_encode.py [--batches 1 8 16] [--items 16]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from common import TINY_CLIP, tiny_clip_folder, torch_threads
from PIL import Image

from mmbright_core.retrieval.backends.clip import ClipRetriever
from mmbright_core.retrieval.cache.store import content_key


def throughput(model: str, batch: int, items: int, cache: Path) -> tuple[float, float]:
    """Return (images/s, texts/s) for ``items`` fresh items at batch size ``batch``."""
    clip = ClipRetriever(model=model, pretrained="none", batch_size=batch, cache_dir=str(cache))
    clip._load()
    clip.encode_texts([f"warm-up {model} {batch}"])  # first calls pay one-off setup costs
    tag = f"{model}-{batch}"
    images = [Image.new("RGB", (320, 240), (i % 256, 40, 90)) for i in range(items)]
    keys = [content_key(f"{tag}-image-{i}") for i in range(items)]
    start = time.perf_counter()
    clip.encode_images([lambda im=im: im for im in images], keys)
    image_rate = items / (time.perf_counter() - start)
    texts = [f"{tag} question {i}: " + "why does the sample glow " * 12 for i in range(items)]
    start = time.perf_counter()
    clip.encode_texts(texts)
    return image_rate, items / (time.perf_counter() - start)


def main() -> int:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--models", nargs="+", default=[TINY_CLIP, "ViT-B-32"])
    args = parser.parse_args()
    with tiny_clip_folder() as folder:
        print(f"{torch_threads()}, {args.items} items per measurement")
        print(f"{'model':<22}{'batch':>6}{'images/s':>12}{'texts/s':>12}")
        for model in args.models:
            for batch in args.batches:
                images, texts = throughput(model, batch, args.items, folder / "cache")
                print(f"{model:<22}{batch:>6}{images:>12.1f}{texts:>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Peak memory of Task 3 with CLIP on large images: decoded one at a time against a whole batch.

Builds a one-domain folder of 51 legal 4000x4000 PNGs (a parquet of about 150 KB that
decodes to 64 MB per image in Pillow), then ranks Task 3 with the clip retriever (random
weights) in a child process per mode and prints each child's peak resident memory (VmHWM),
its resident memory once torch and open_clip are imported, and the difference:

- ``lazy``: the package as it is (each image decoded, preprocessed and freed in turn);
- ``eager``: the former path, every batch of 32 decoded before preprocessing.

Run: ``python benchmarks/bench_image_memory.py [--count 51] [--side 4000]
[--models tiny ViT-B-32]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests" / "support")]

from large_images import TASK3_CHILD, build_large_images  # noqa: E402
from tiny_clip import TINY_CLIP_CONFIG  # noqa: E402

MIB = 2**20


def peak(folder: Path, cache: Path, model: str, batch: int, mode: str) -> dict[str, int]:
    """Run the Task 3 child once and return its figures (bytes)."""
    out = subprocess.run(
        [sys.executable, "-c", TASK3_CHILD, str(folder), str(cache), model, str(batch), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    """Build the folder, measure each model and mode, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=51)
    parser.add_argument("--side", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--models", nargs="+", default=["tiny", "ViT-B-32"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = build_large_images(root / "data", args.count, args.side)
        size = sum(f.stat().st_size for f in (folder / "document_images").glob("*.parquet"))
        print(f"{args.count} images of {args.side}x{args.side}, parquet {size / 1024:.0f} KiB")
        tiny = root / "mmbright-bench-tiny.json"
        tiny.write_text(json.dumps(TINY_CLIP_CONFIG))
        print("| model | mode | peak RSS | after imports | images add |")
        print("|---|---|--:|--:|--:|")
        for model in args.models:
            name = str(tiny) if model == "tiny" else model
            for mode in ("lazy", "eager"):
                got = peak(folder, root / f"cache-{model}-{mode}", name, args.batch, mode)
                top, base = got["peak_bytes"] / MIB, got["imports_bytes"] / MIB
                cells = [
                    model,
                    mode,
                    f"{top:,.0f} MiB",
                    f"{base:,.0f} MiB",
                    f"{top - base:,.0f} MiB",
                ]
                print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

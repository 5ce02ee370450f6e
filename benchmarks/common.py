"""What the benchmark scripts share: timing, their size options and the tiny CLIP model.

Each script runs as ``python benchmarks/bench_<name>.py``, so this folder is on its path.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

TINY_CLIP = "mmbright-bench-tiny"
"""The name the test suite's tiny open_clip architecture is registered under here."""


def best(repeat: int, work: Callable[[], object]) -> float:
    """Return the fastest of ``repeat`` timed calls of ``work``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """Return the wall-clock and CPU seconds (this process, all its threads) of one call."""
    start, start_cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - start, time.process_time() - start_cpu


def sizes(description: str, **defaults: float) -> argparse.Namespace:
    """Parse the command line: one ``--NAME`` per keyword (``_`` read as ``-``), typed as its
    default (an ``int`` default takes whole numbers, a ``float`` one any number)."""
    parser = argparse.ArgumentParser(description=description)
    for name, default in defaults.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return parser.parse_args()


@contextmanager
def tiny_clip_folder() -> Iterator[Path]:
    """A temporary folder, with the test suite's tiny open_clip architecture (random weights,
    no download) registered as :data:`TINY_CLIP` from a config written in it."""
    import open_clip

    sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "tests" / "support")]
    from tiny_clip import TINY_CLIP_CONFIG

    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / f"{TINY_CLIP}.json"
        config.write_text(json.dumps(TINY_CLIP_CONFIG))
        open_clip.add_model_config(config)
        yield Path(folder)


def torch_threads() -> str:
    """``torch VERSION, N CPU threads``: what a CPU timing depends on."""
    import torch

    return f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads"

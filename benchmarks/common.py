"""What the benchmark scripts share: timing and their size options.

Each script runs as ``python benchmarks/bench_<name>.py``, so this folder is on its path.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable


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

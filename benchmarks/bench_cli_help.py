"""How long ``mmbright --help`` takes, beside a bare interpreter start in the same run.

Registering the subcommands imports nothing heavy (numpy, pandas, pyarrow, streamlit...), so
the help should cost little more than starting Python. Target: under 0.3 s.

Usage: ``python benchmarks/bench_cli_help.py [--runs 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def median_seconds(command: list[str], runs: int) -> float:
    """Run ``command`` ``runs`` times (after one warm-up) and return the median wall time."""
    subprocess.run(command, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    # The installed entry point where there is one (what a user types), else ``-m``.
    script = Path(sys.executable).with_name("mmbright")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "mmbright_core"]
    bare = median_seconds([sys.executable, "-c", "pass"], args.runs)
    help_ = median_seconds([*command, "--help"], args.runs)
    print(f"python -c pass   median {bare:.3f} s over {args.runs} runs")
    print(f"mmbright --help  median {help_:.3f} s ({' '.join(command)} --help)")
    print(f"ratio {help_ / bare:.1f}x; help minus interpreter start {help_ - bare:.3f} s")


if __name__ == "__main__":
    main()

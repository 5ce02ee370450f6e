"""Options several subcommands share, declared once so that they read and behave alike."""

from __future__ import annotations

import argparse
from typing import Any

from mmbright_core.data.tasks import NEGATIVES

NEGATIVES_HELP = (
    "tasks 1-2: 'exclude' each query's negative_ids from its ranking before the top-1000 cut "
    "(default; the official numbers) or 'keep' them. What the ids are is not documented: by "
    "their naming, hard negatives. Task 4's negative-image pairs are excluded either way"
)


def add_negatives(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--negatives exclude|keep`` to a parser or an argument group."""
    parser.add_argument("--negatives", choices=NEGATIVES, default="exclude", help=NEGATIVES_HELP)

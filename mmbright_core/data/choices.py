"""The values the benchmark's options take, in a module that imports nothing heavy.

The command line offers these as choices when it builds its parsers, and ``mmbright --help``
must not load numpy, pandas or Pillow to do so (the modules that use the values do). Each
owner re-exports its value: :mod:`.ids` the protocols, :mod:`.tasks` the negatives policies,
:mod:`.images` the image policies, :mod:`.stats` the tasks (whose facts live in
:mod:`mmbright_core.task_table`).
"""

from __future__ import annotations

from typing import Literal

from mmbright_core.task_table import TASKS as TASKS
from mmbright_core.types import Protocol4

PROTOCOLS: tuple[Protocol4, ...] = ("paper", "legacy", "release")
"""Task 4's judgment protocols: graded with the paper's passage key or the released code's, or
scored as the released code scores it (docs/protocol.md, Per-task protocol)."""

Negatives = Literal["exclude", "keep"]
"""What tasks 1-2 do with each query's ``negative_ids`` (docs/protocol.md, Per-task protocol)."""

NEGATIVES: tuple[Negatives, ...] = ("exclude", "keep")
"""``exclude`` (the default and the official numbers) or ``keep``."""

ImagePolicy = Literal["first", "concat", "all"]
"""Which of a query's images a multimodal retriever reads."""

POLICIES: tuple[ImagePolicy, ...] = ("first", "concat", "all")

"""mmbright: an evaluation harness for the MM-BRIGHT multimodal retrieval benchmark.

The public core: :func:`evaluate` scores a run against qrels with trec_eval's semantics,
measures are values parsed from names such as ``"nDCG@10"``, and the shapes every layer
shares live in :mod:`mmbright_core.types`.

The names are loaded on first use (PEP 562): importing any module of the package runs this
file first, and ``mmbright --help`` must not pay for numpy to print its options.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmbright_core.measures import Measure, parse_measure
    from mmbright_core.metrics import evaluate
    from mmbright_core.types import EvalCounts, EvalResult, Qrels, Run

_HOMES = {
    "EvalCounts": "mmbright_core.types",
    "EvalResult": "mmbright_core.types",
    "Measure": "mmbright_core.measures",
    "Qrels": "mmbright_core.types",
    "Run": "mmbright_core.types",
    "evaluate": "mmbright_core.metrics",
    "parse_measure": "mmbright_core.measures",
}

__all__ = ["EvalCounts", "EvalResult", "Measure", "Qrels", "Run", "evaluate", "parse_measure"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

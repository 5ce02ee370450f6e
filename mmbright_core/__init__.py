"""mmbright: an evaluation harness for the MM-BRIGHT multimodal retrieval benchmark.

The public core: :func:`evaluate` scores a run against qrels with trec_eval's semantics,
measures are values parsed from names such as ``"nDCG@10"``, and the shapes every layer
shares live in :mod:`mmbright_core.types`.
"""

from mmbright_core.measures import Measure, parse_measure
from mmbright_core.metrics import evaluate
from mmbright_core.types import EvalCounts, EvalResult, Qrels, Run

__all__ = ["EvalCounts", "EvalResult", "Measure", "Qrels", "Run", "evaluate", "parse_measure"]

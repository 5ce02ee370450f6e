"""File formats: runs, qrels, the official harness's outputs, and atomic writes.

This is the only layer that touches files (docs/development.md, the layout). It depends on nothing
else of the package but the shared types, errors and ranking rule; scoring lives in
:mod:`mmbright_core.metrics`.
"""

from __future__ import annotations

from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text
from mmbright_core.io.mteb import (
    MtebPredictions,
    looks_like_mteb,
    read_mteb_predictions,
    write_mteb_predictions,
)
from mmbright_core.io.official import (
    OfficialOutputs,
    official_subdir,
    read_outputs,
    write_domain_outputs,
    write_summary,
)
from mmbright_core.io.qrels import read_qrels, write_qrels
from mmbright_core.io.runs import (
    read_run,
    run_from_frame,
    run_to_frame,
    write_json_run,
    write_parquet_run,
    write_trec_run,
)

__all__ = [
    "MtebPredictions",
    "OfficialOutputs",
    "atomic_write_bytes",
    "atomic_write_text",
    "looks_like_mteb",
    "official_subdir",
    "read_mteb_predictions",
    "read_outputs",
    "read_qrels",
    "read_run",
    "run_from_frame",
    "run_to_frame",
    "write_domain_outputs",
    "write_json_run",
    "write_mteb_predictions",
    "write_parquet_run",
    "write_qrels",
    "write_summary",
    "write_trec_run",
]

"""File formats: runs, qrels, the official harness's outputs, and atomic writes.

This is the only layer that touches files (STYLE.md). Names are loaded on first use, so
importing ``mmbright_core.io.atomic`` stays cheap and ``official`` (which scores through
``mmbright_core.metrics``) is only imported when needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text
    from mmbright_core.io.official import (
        OfficialOutputs,
        official_metrics,
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

_EXPORTS = {
    "atomic_write_bytes": "atomic",
    "atomic_write_text": "atomic",
    "OfficialOutputs": "official",
    "official_metrics": "official",
    "official_subdir": "official",
    "read_outputs": "official",
    "write_domain_outputs": "official",
    "write_summary": "official",
    "read_qrels": "qrels",
    "write_qrels": "qrels",
    "read_run": "runs",
    "run_from_frame": "runs",
    "run_to_frame": "runs",
    "write_json_run": "runs",
    "write_parquet_run": "runs",
    "write_trec_run": "runs",
}

__all__ = [
    "OfficialOutputs",
    "atomic_write_bytes",
    "atomic_write_text",
    "official_metrics",
    "official_subdir",
    "read_outputs",
    "read_qrels",
    "read_run",
    "run_from_frame",
    "run_to_frame",
    "write_domain_outputs",
    "write_json_run",
    "write_parquet_run",
    "write_qrels",
    "write_summary",
    "write_trec_run",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)

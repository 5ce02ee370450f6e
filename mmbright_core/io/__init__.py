"""File formats: runs, qrels, the official harness's outputs, and atomic writes.

It depends on nothing else of the package but the shared types, errors, ranking rule and task
table; scoring lives in :mod:`mmbright_core.metrics`. Its reading API is public and shared with
the layers that read files of their own: :mod:`~mmbright_core.io.reading` (open, bound,
decompress, refuse binary data, decode) and :mod:`~mmbright_core.io.json_shapes` (JSON read with
its shapes checked by path) are what ``task_runs``, ``notes``, ``llm`` and the retrievers'
``config.json`` use, so every file the package reads is bounded and checked the same way. Other
layers open files of their own kinds: ``data`` its parquet files and images, ``notes`` its
SQLite file, the embedding cache its shards.
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

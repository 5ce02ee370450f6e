"""MTEB's prediction files as runs: read them, and write them.

Many MM-BRIGHT results come from MTEB (``embeddings-benchmark/mteb`` PR #5168), which can
save a model's rankings beside its scores: ``<TaskName>_predictions.json`` holds
``{"mteb_model_meta": {...}, "<subset>": {"<split>": {query_id: {doc_id: score}}}}`` with
one subset per domain and the split ``test``. The task is told from MTEB's task name
(from the file name, or given); the subsets must be domains, which the caller knows (this
layer reads files and knows no dataset).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.json_shapes import json_score, object_pairs, parse_json
from mmbright_core.io.reading import Readable, check_id_lengths, decode, load
from mmbright_core.task_table import TASK_TABLE, task_info
from mmbright_core.types import Run

#: MTEB's names of the four MM-BRIGHT tasks (its descriptive statistics carry the same names).
MTEB_TASKS: dict[str, int] = {info.mteb_name: task for task, info in TASK_TABLE.items()}
META_KEY = "mteb_model_meta"
SUFFIX = "_predictions.json"
DEFAULT_SPLIT = "test"


@dataclass(frozen=True)
class MtebPredictions:
    """One MTEB predictions file.

    Attributes:
        task: The MM-BRIGHT task number, or None when neither the name nor the caller said.
        task_name: MTEB's task name, if known.
        split: The split the runs were read from.
        runs: subset (domain) -> run, in file order.
        model: The file's ``mteb_model_meta`` object (empty if it had none).
    """

    task: int | None
    task_name: str | None
    split: str
    runs: dict[str, dict[str, dict[str, float]]]
    model: dict[str, Any] = field(default_factory=dict)


def mteb_task_name(task: int) -> str:
    """Return MTEB's name of an MM-BRIGHT task number."""
    return task_info(task).mteb_name


def mteb_file_name(task: int) -> str:
    """Return the file name MTEB gives a task's predictions."""
    return f"{mteb_task_name(task)}{SUFFIX}"


def task_from_file_name(path: str | os.PathLike[str]) -> str | None:
    """Return the MTEB task name a ``<TaskName>_predictions.json`` file name carries."""
    name = Path(path).name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else None


def looks_like_mteb(path: str | os.PathLike[str], head: bytes | None = None) -> bool:
    """Whether a file is an MTEB predictions file, by its name or the start of its content.

    Args:
        path: The file (or, with ``head`` given, only its name).
        head: The first bytes of the content, if already in memory.
    """
    if task_from_file_name(path) is not None:
        return True
    if head is None:
        try:
            with open(path, "rb") as handle:
                head = handle.read(4096)
        except OSError:
            return False
    head = head[:4096]
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and META_KEY.encode() in head


def read_mteb_predictions(
    src: Readable,
    *,
    task_name: str | None = None,
    split: str | None = None,
    domains: Collection[str] | None = None,
    max_bytes: int | None = None,
) -> MtebPredictions:
    """Read an MTEB predictions file.

    Args:
        src: A path, inline text, bytes or an open file.
        task_name: MTEB's task name, when the file name does not carry it.
        split: The split to read (default: the only one, or ``test``).
        domains: The dataset's domains; a subset that is none of them is an error.
        max_bytes: The most bytes read (see :func:`mmbright_core.io.read_run`).

    Returns:
        The predictions, one run per subset.

    Raises:
        InputError: Malformed JSON or shape, a bad score, an unknown split.
        UnknownNameError: An unknown task name, or a subset that is no domain.
    """
    loaded = load(src, max_bytes)
    name = task_name or task_from_file_name(loaded.name)
    if name is not None and name not in MTEB_TASKS:
        raise UnknownNameError("MTEB task", name, tuple(MTEB_TASKS))
    top = object_pairs(
        parse_json(decode(loaded), loaded.name),
        loaded.name,
        (),
        f'with "{META_KEY}" and one object per subset (domain) of split -> run',
    )
    meta = top.pop(META_KEY, None)
    model = dict(meta) if isinstance(meta, list) else {}
    runs: dict[str, dict[str, dict[str, float]]] = {}
    chosen = split
    for subset, splits in top.items():
        if domains is not None and subset not in domains:
            raise UnknownNameError(f"domain (subset of {loaded.name})", subset, tuple(domains))
        by_split = object_pairs(splits, loaded.name, (subset,), "mapping each split to a run")
        chosen = chosen or _only_split(by_split, loaded.name, subset)
        if chosen not in by_split:
            raise InputError(
                f"subset {subset!r} has no split {chosen!r}",
                source=loaded.name,
                expected=f"a split named {chosen!r}",
                found=", ".join(repr(s) for s in by_split) or "no split",
                hint="Name the split to read",
            )
        runs[subset] = _run(by_split[chosen], loaded.name, (subset, chosen))
    for run in runs.values():
        check_id_lengths(run, loaded.name)
    task = MTEB_TASKS[name] if name is not None else None
    return MtebPredictions(task, name, chosen or DEFAULT_SPLIT, runs, model)


def _only_split(by_split: Mapping[str, Any], name: str, subset: str) -> str:
    if len(by_split) == 1:
        return next(iter(by_split))
    if DEFAULT_SPLIT in by_split:
        return DEFAULT_SPLIT
    raise InputError(
        f"subset {subset!r} holds several splits",
        source=name,
        expected=f"one split, or {DEFAULT_SPLIT!r}",
        found=", ".join(repr(s) for s in by_split),
        hint="Name the split to read",
    )


def _run(value: Any, name: str, keys: tuple[str, ...]) -> dict[str, dict[str, float]]:
    queries = object_pairs(value, name, keys, "mapping each query id to its doc id -> score")
    run: dict[str, dict[str, float]] = {}
    for query_id, docs in queries.items():
        path = (*keys, query_id)
        inner = object_pairs(docs, name, path, "mapping each doc id to its score")
        run[query_id] = {doc: json_score(s, name, (*path, doc)) for doc, s in inner.items()}
    return run


def write_mteb_predictions(
    path: str | os.PathLike[str],
    task: int,
    runs: Mapping[str, Run],
    model: Mapping[str, Any] | None = None,
    split: str = DEFAULT_SPLIT,
) -> Path:
    """Write runs as MTEB writes a task's predictions (atomically).

    Args:
        path: The file, or a folder to hold ``<TaskName>_predictions.json``.
        task: The MM-BRIGHT task number (gives MTEB's task name).
        runs: domain -> run.
        model: What to store as ``mteb_model_meta`` (e.g. the run's configuration).
        split: The split name.

    Returns:
        The file written.
    """
    target = Path(path)
    if target.is_dir():
        target = target / mteb_file_name(task)
    data: dict[str, Any] = {META_KEY: dict(model or {})}
    for domain, run in runs.items():
        data[domain] = {split: {q: dict(docs) for q, docs in run.items()}}
    return atomic_write_text(target, json.dumps(data, ensure_ascii=False) + "\n")

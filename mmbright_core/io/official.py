"""The official harness's output folders, so its results can be loaded and ours compared.

Layout (docs/protocol.md, The official harness's files): ``outputs/<subdir>/<domain>/scores.json``
holds ``{qid: {doc_id: score}}`` (top 1000, exclusions applied) with ``metrics.json`` beside it
(``results.json`` in older runs), and
``outputs/<subdir>/summary.json`` holds ``{"model", "task_type", "domains":
{domain: metrics}, "aggregated": {metric: mean over domains}}``. Metric values are
fractions rounded to 5 decimals; metric names are the official ones (``NDCG@10``...),
computed by :mod:`mmbright_core.metrics.official`. A domain's ``metrics.json`` written here
may also hold ``"warnings"``, a list of sentences saying what in the data or the run made a
score lower than it looks (null texts, every image undecodable, nothing ranked); readers
keep them apart from the metrics (:attr:`OfficialOutputs.warnings`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.ocr_words import OCR_FILE, OcrWords, read_ocr_words
from mmbright_core.io.official_json import WARNINGS, read_metrics, read_run_config, read_summary
from mmbright_core.io.recorded import check_one_configuration, check_summary
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.io.run_rewrites import REWRITES_FILE, read_run_rewrites
from mmbright_core.io.runs import read_run, run_json
from mmbright_core.task_table import TASK_TABLE, task_info
from mmbright_core.types import Run

# The folder prefixes a model name is read after: the ones written here and the official
# harness's (the task table's), and the older ``multimodal_`` of Task 3.
_FOLDER_PREFIXES = frozenset(
    {"multimodal_"}
    | {info.folder_prefix for info in TASK_TABLE.values()}
    | {info.official_prefix for info in TASK_TABLE.values()}
)
_METRICS_FILES = ("metrics.json", "results.json")  # results.json: older runs


@dataclass(frozen=True)
class OfficialOutputs:
    """One ``<subdir>`` of the official harness's outputs, as read back.

    Attributes:
        path: The ``<subdir>`` folder read.
        model: The model name (from summary.json, else from the folder name).
        task_type: The summary's ``task_type`` (``"text_text"``...), if there is a summary.
        runs: domain -> the domain's run (scores.json).
        metrics: domain -> official metric name -> value.
        aggregated: official metric name -> mean over domains, from summary.json.
        run_config: The run configuration this package's runner writes beside the outputs
            (``config.json``'s ``"config"``: settings and their ``options``), or empty where
            there is none.
        domain_configs: domain -> the configuration its own ``config.json`` records, or
            None for a domain whose scores have none (every domain of the official
            harness's outputs).
        ocr_words: The words an OCR run read from its query images (``<domain>/ocr.json``,
            every domain's together), or None where none are recorded.
        warnings: domain -> the warnings its ``metrics.json`` records (domains without any
            are absent).
        rewrites: ``(domain, query_id)`` -> the rewritten query a run on a rewritten set
            ran (``<domain>/rewrites.json``); empty for any other run.
    """

    path: Path
    model: str
    task_type: str | None
    runs: dict[str, dict[str, dict[str, float]]]
    metrics: dict[str, dict[str, float]]
    aggregated: dict[str, float] = field(default_factory=dict)
    run_config: dict[str, Any] = field(default_factory=dict)
    domain_configs: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    ocr_words: OcrWords | None = None
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    rewrites: dict[tuple[str, str], Rewrite] = field(default_factory=dict)


def official_subdir(task: int, model: str) -> str:
    """Return the folder name runs of a task and model are written to.

    ``run_t2t_<model>`` (Task 1), ``run_it2t_<model>`` (Task 2), ``multimodal_it2i_<model>``
    (Task 3) and ``it2it_<model>`` (Task 4): the official names, except that tasks 1 and 2,
    both ``run_<model>`` officially, get a folder each.

    Raises:
        UnknownNameError: ``task`` is not 1-4.
        InputError: ``model`` is empty or contains a path separator.
    """
    prefix = task_info(task).folder_prefix
    check_name(model, "model name")
    return f"{prefix}{model}"


def write_domain_outputs(
    task_dir: str | os.PathLike[str],
    domain: str,
    run: Run,
    metrics: Mapping[str, float],
    warnings: Sequence[str] = (),
) -> Path:
    """Write ``<task_dir>/<domain>/scores.json`` and ``metrics.json``, each atomically.

    Args:
        task_dir: The ``<subdir>`` folder.
        domain: The domain.
        run: The domain's run.
        metrics: Its official metrics.
        warnings: Sentences stored beside the metrics under ``"warnings"`` (none: no key,
            so the file is the official harness's).

    Returns:
        The domain folder.
    """
    check_name(domain, "domain")
    folder = Path(task_dir) / domain
    atomic_write_text(folder / "scores.json", run_json(run, str(folder / "scores.json")))
    stored: dict[str, object] = dict(metrics)
    if warnings:
        stored[WARNINGS] = list(warnings)
    atomic_write_text(folder / "metrics.json", _dump(stored))
    return folder


def write_summary(
    task_dir: str | os.PathLike[str],
    model: str,
    task_type: str,
    domain_metrics: Mapping[str, Mapping[str, float]],
) -> Path:
    """Write ``<task_dir>/summary.json`` with per-domain metrics and their means.

    As the official harness does, each metric is averaged over the domains that report it
    and rounded to 5 decimals.

    Returns:
        The summary file.
    """
    values: dict[str, list[float]] = {}
    for metrics in domain_metrics.values():
        for name, value in metrics.items():
            values.setdefault(name, []).append(value)
    summary = {
        "model": model,
        "task_type": task_type,
        "domains": {domain: dict(m) for domain, m in domain_metrics.items()},
        "aggregated": {name: round(sum(v) / len(v), 5) for name, v in values.items()},
    }
    return atomic_write_text(Path(task_dir) / "summary.json", _dump(summary))


def read_outputs(path: str | os.PathLike[str]) -> OfficialOutputs:
    """Read one ``<subdir>`` of official outputs (or a folder holding exactly one).

    Args:
        path: The ``<subdir>`` folder, or the ``outputs`` folder above a single one.

    Raises:
        InputError: The folder holds no outputs, several candidates, or a malformed file;
            or it mixes runs: domains of different recorded configurations, some with a
            recorded configuration and some without, or a ``summary.json`` whose metrics
            are not its domains' (:mod:`mmbright_core.io.recorded`). The message names
            the path.
    """
    folder = _resolve_subdir(Path(path))
    runs: dict[str, dict[str, dict[str, float]]] = {}
    metrics: dict[str, dict[str, float]] = {}
    configs: dict[str, dict[str, Any] | None] = {}
    warnings: dict[str, tuple[str, ...]] = {}
    for child in sorted(c for c in folder.iterdir() if c.is_dir()):
        if (child / "scores.json").is_file():
            runs[child.name] = read_run(child / "scores.json", format="json")
            configs[child.name] = read_run_config(child / "config.json") or None
        found = [child / n for n in _METRICS_FILES if (child / n).is_file()]
        if found:
            metrics[child.name], said = read_metrics(found[0])
            if said:
                warnings[child.name] = said
    summary = read_summary(folder / "summary.json")
    run_config = read_run_config(folder / "config.json")
    check_one_configuration(folder, run_config, configs)
    check_summary(folder, summary.get("domains", {}), metrics)
    for domain, values in summary.get("domains", {}).items():
        metrics.setdefault(domain, values)
    return OfficialOutputs(
        path=folder,
        model=summary.get("model") or _model_from_folder(folder.name),
        task_type=summary.get("task_type"),
        runs=runs,
        metrics=metrics,
        aggregated=summary.get("aggregated", {}),
        run_config=run_config,
        domain_configs=configs,
        ocr_words=_folder_words(folder),
        warnings=warnings,
        rewrites=_folder_rewrites(folder),
    )


def read_recorded_words(path: str | os.PathLike[str]) -> OcrWords | None:
    """Read only the OCR words a run recorded (``<domain>/ocr.json``), None where there are none.

    Args:
        path: The ``<subdir>`` folder, or the ``outputs`` folder above a single one.

    Raises:
        InputError: As :func:`read_outputs`, for the folder and its ``ocr.json`` files.
    """
    return _folder_words(_resolve_subdir(Path(path)))


def _folder_words(folder: Path) -> OcrWords | None:
    words: OcrWords | None = None
    for child in sorted(c for c in folder.iterdir() if (c / OCR_FILE).is_file()):
        found = read_ocr_words(child / OCR_FILE, child.name)
        words = found if words is None else words.merged(found, str(child))
    return words


def _folder_rewrites(folder: Path) -> dict[tuple[str, str], Rewrite]:
    found: dict[tuple[str, str], Rewrite] = {}
    for child in sorted(c for c in folder.iterdir() if (c / REWRITES_FILE).is_file()):
        found.update(read_run_rewrites(child / REWRITES_FILE, child.name))
    return found


def _resolve_subdir(path: Path) -> Path:
    if not path.is_dir():
        raise InputError(
            "not a folder" if path.exists() else "folder not found",
            source=str(path),
            expected="an official outputs folder such as outputs/run_bm25",
        )
    if holds_outputs(path):
        return path
    candidates = sorted(c for c in path.iterdir() if c.is_dir() and holds_outputs(c))
    if len(candidates) == 1:
        return candidates[0]
    raise InputError(
        "no official outputs here" if not candidates else "several official output folders",
        source=str(path),
        expected="summary.json or <domain>/scores.json in the folder, or exactly one such folder",
        found=", ".join(c.name for c in candidates) or "none",
        hint="Pass one <subdir> folder, e.g. outputs/run_bm25" if candidates else None,
    )


def holds_outputs(folder: Path) -> bool:
    """Whether a folder is one ``<subdir>`` of outputs: a summary, or a domain's scores or metrics.

    The one rule for an official outputs folder: every reader of runs asks it.
    """
    if (folder / "summary.json").is_file():
        return True
    return any(
        (child / name).is_file()
        for child in folder.iterdir()
        if child.is_dir()
        for name in ("scores.json", *_METRICS_FILES)
    )


def _model_from_folder(name: str) -> str:
    for prefix in sorted(_FOLDER_PREFIXES, key=len, reverse=True):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


def check_name(
    value: str, what: str, *, source: str | None = None, hint: str | None = None
) -> None:
    """Refuse a name that is no plain folder name (empty, ``.``, ``..``, a path separator).

    Outputs go to ``<task_dir>/<domain>``: ``..`` would write beside the task folder.

    Raises:
        InputError: ``value`` is not a plain name.
    """
    if not value or value in (".", "..") or "/" in value or "\\" in value:
        raise InputError(
            f"invalid {what}",
            source=source,
            expected="a plain name without path separators",
            found=repr(value),
            hint=hint,
        )


def _dump(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"

"""Turning what the user points at (uploads, folders, the demo's runs) into run entries.

Reading is the core's job (``mmbright_core.io``); this module only names the runs, files
each query under its domain and checks that a run belongs to the chosen task, so that a
wrong file fails with one message instead of scoring zero everywhere.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mmbright_core.analysis.lineage import recorded_config
from mmbright_core.data.matching import MatchCounts, match_counts
from mmbright_core.data.tasks import check_negatives
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.ocr_words import OCR_FILE
from mmbright_core.io.official import read_outputs
from mmbright_core.task_runs import (
    Scope,
    check_task_runs,
    is_official,
    read_task_outputs,
    split_by_task,
)
from mmbright_core.task_runs import read_upload as read_upload_runs
from mmbright_core.task_table import task_of_type
from mmbright_core.types import Task
from mmbright_core.ui.common.confine import Confinement
from mmbright_core.ui.common.state import RunEntry, fingerprint

RUN_SUFFIXES = (".trec", ".run", ".txt", ".json", ".parquet", ".gz", ".tsv")
"""File endings taken as runs when a folder of run files is loaded."""


def entry_from_bytes(
    name: str, data: bytes, view: TaskView, *, max_bytes: int | None = None
) -> RunEntry:
    """Read an uploaded run file (TREC, JSON, parquet or MTEB predictions) for the task.

    Args:
        name: The file's name (it names the run and, by its ending, the format).
        data: The file's bytes.
        view: The data source (to file queries under domains), the current task and its
            protocol.
        max_bytes: The most bytes the content may take once decompressed and decoded (the
            upload limit), counted by the reader as it reads: a small gzip or parquet file
            may otherwise expand a thousandfold.

    Raises:
        InputError: The file is malformed, expands past ``max_bytes``, or answers another
            task (by its query ids or by the shape of its doc ids).
    """
    return read_upload(name, data, view, max_bytes).entry


@dataclasses.dataclass(frozen=True)
class Upload:
    """An uploaded run read for a task, and how many queries its file holds.

    Attributes:
        entry: The run, its queries filed under their domains.
        queries_in_file: Every query of the file, filed or not (a query no domain has is
            left out of ``entry``).
    """

    entry: RunEntry
    queries_in_file: int

    def match(self, view: TaskView) -> MatchCounts:
        """What of the run the task knows, so a page can ask before adding a weak match."""
        return match_counts(view, self.entry.runs, run_queries=self.queries_in_file)


def read_upload(name: str, data: bytes, view: TaskView, max_bytes: int | None) -> Upload:
    """Read an upload for the task as :func:`entry_from_bytes` does (see there).

    What the reader warned about (text after a TREC run's tag...) travels with the run as
    its warnings, which the page shows when it adds the run.
    """
    scope = Scope(view.task, protocol=view.checked_protocol)
    found = read_upload_runs(name, data, view.source, scope, max_bytes)
    stem = Path(name).stem
    entry = RunEntry(
        stem,
        view.source.name,
        view.task,
        found.runs,
        f"upload: {name}",
        fingerprint(name, data),
        warnings=found.warnings,
    )
    return Upload(entry, found.queries_in_file)


@dataclasses.dataclass(frozen=True)
class FolderRuns:
    """The runs read from a folder for a task, and the outputs folders left out.

    Attributes:
        entries: The runs, their queries filed under their domains.
        skipped: One sentence per outputs folder of another task, naming it and its task.
        other_tasks: The tasks those folders answer (where known), to offer switching to.
    """

    entries: list[RunEntry]
    skipped: tuple[str, ...] = ()
    other_tasks: tuple[Task, ...] = ()


def entries_from_folder(folder: str, view: TaskView) -> FolderRuns:
    """Read every run in a folder: official outputs (docs/protocol.md) or run files.

    Args:
        folder: An official ``<subdir>``, an ``outputs`` folder holding several (those of
            other tasks are skipped, as ``mmbright run --out outputs`` leaves one per task),
            or a folder of TREC/JSON/parquet run files.
        view: The data source (to file queries under domains), the current task (a run
            of another task is refused) and its protocol.

    Raises:
        InputError: Nothing readable is there, nothing there answers the task, the folder
            (or an entry of it) lies outside the server's data root, or a run answers
            another task.
    """
    task = view.task
    confinement = Confinement.from_env()
    root = confinement.typed(folder, "runs folder")
    if not root.is_dir():
        raise InputError("no such folder", found=repr(folder))
    # Every entry is checked before anything inside it is looked at, and an outputs folder
    # down to its domains' files before the reader opens them: a symlink deeper in the
    # root leads out as well as the typed folder does.
    entries = [root] if is_official(root) else sorted(root.iterdir())
    checked = [confinement.check(c, "runs folder entry", shown=repr(str(c))) for c in entries]
    official = [c for c in checked if is_official(c)]
    if official:
        for path in official:
            confinement.check_tree(path, "runs folder", depth=2)
        # A <subdir> itself is read (and refused when it answers another task); of several
        # side by side, the task's are read and the others named.
        found = split_by_task(official, task) if official != [root] else None
        if found is not None and not found.folders:
            raise InputError(
                f"no outputs of task {task} in the folder",
                source=str(root),
                found="; ".join(found.skipped),
                hint="Choose that task in the sidebar",
            )
        entries_read = [
            _checked(outputs_entry(path, view.source.name, task), view)
            for path in (found.folders if found is not None else official)
        ]
        if found is None:
            return FolderRuns(entries_read)
        return FolderRuns(entries_read, found.skipped, found.other_tasks)
    files = [p for p in checked if p.is_file() and p.name.endswith(RUN_SUFFIXES)]
    if not files:
        raise InputError(
            "no run in the folder",
            source=str(root),
            expected="official outputs (<domain>/scores.json, summary.json) or run files "
            f"ending in {', '.join(RUN_SUFFIXES)}",
        )
    return FolderRuns([entry_from_bytes(p.name, p.read_bytes(), view) for p in files])


def _checked(entry: RunEntry, view: TaskView) -> RunEntry:
    """``entry`` refused if it answers another task, and with what of its ids matches nothing."""
    found = check_task_runs(view, entry.runs, name=entry.origin)
    return dataclasses.replace(entry, warnings=(*entry.warnings, *found))


def outputs_entry(path: Path, source: str, task: Task) -> RunEntry:
    """The run of an official outputs folder of ``task``, loaded for data source ``source``."""
    outputs = read_task_outputs(path, task)
    config = recorded_config(outputs)  # read here, once: every page asks the typed value
    stamp = "|".join(
        f"{p}:{p.stat().st_mtime_ns}"
        for p in sorted(
            [
                *outputs.path.glob("*/scores.json"),
                *outputs.path.glob(f"*/{OCR_FILE}"),
                *outputs.path.glob("*/rewrites.json"),
            ]
        )
    )
    # A run made by ``mmbright run`` records its negative_ids policy; others used the
    # official rule (an older configuration without the field could only have, too).
    negatives = check_negatives("exclude" if config is None else config.negatives)
    return RunEntry(
        outputs.model,
        source,
        task,
        outputs.runs,
        f"folder: {outputs.path}",
        fingerprint(str(path), stamp),
        negatives,
        config,
        outputs.ocr_words,
        tuple(f"{d}: {w}" for d, said in outputs.warnings.items() for w in said),
        outputs.rewrites,
    )


DEMO_RUNS = Path(__file__).resolve().parents[2] / "data" / "demo" / "runs"
"""Where the demo's runs ship, in the official outputs layout (docs/protocol.md, The official
harness's files)."""


def _demo_outputs() -> list[Path]:
    if not DEMO_RUNS.is_dir():
        return []
    return [c for c in sorted(DEMO_RUNS.iterdir()) if is_official(c)]


def demo_tasks() -> tuple[Task, ...]:
    """The tasks the demo ships runs for, in order."""
    found = {task_of_type(read_outputs(path).task_type or "") for path in _demo_outputs()}
    return tuple(sorted(t for t in found if t is not None))


def demo_entries(task: Task) -> list[RunEntry]:
    """The demo's runs of one task (none when the demo ships none for it)."""
    entries = []
    for path in _demo_outputs():
        if task_of_type(read_outputs(path).task_type or "") == task:
            entries.append(dataclasses.replace(outputs_entry(path, "demo", task), origin="demo"))
    return entries

"""Loading a run for a task: the one home of files, folders, MTEB predictions and uploads.

A run reaches a task as an official outputs folder (docs/protocol.md, The official
harness's files), an MTEB predictions file, or a run file in any format
:func:`mmbright_core.io.runs.read_run` reads, from a path or as uploaded bytes. Each format
has one rule here, and every reader of runs (``mmbright eval``, ``compare``, ``rerank``'s
first stage and the dashboard) calls these functions, so a run is filed under its domains,
and refused when it answers another task, the same way everywhere.
"""

from __future__ import annotations

import io
import os
import threading
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from mmbright_core.benchmark import check_doc_ids
from mmbright_core.data.sources import Source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError, InputTooLargeError, InputWarning, show
from mmbright_core.io.mteb import looks_like_mteb, mteb_task_name, read_mteb_predictions
from mmbright_core.io.official import OfficialOutputs, holds_outputs, read_outputs
from mmbright_core.io.official_json import read_summary
from mmbright_core.io.reading import Readable
from mmbright_core.io.runs import read_run
from mmbright_core.metrics.id_check import (
    EXAMPLES,
    MappingIds,
    check_ids,
    id_warnings,
    normalised,
)
from mmbright_core.task_table import TASK_TABLE, task_of_type
from mmbright_core.types import IdCheck, Protocol4, Qrels, Run, Task

# The reader's warnings about an upload are caught for the page (a server's log is not where
# its user looks). ``catch_warnings`` swaps process-wide state, so uploads are read one at a
# time: another session's upload warning never lands on this page. Reading is bound by the
# interpreter's lock anyway, so little is lost.
_CATCHING = threading.Lock()

DomainRuns = dict[str, dict[str, dict[str, float]]]
"""domain -> query_id -> doc_id -> score."""


@dataclass(frozen=True)
class FileRuns:
    """A run file read for a task.

    Attributes:
        runs: domain -> its part of the run.
        queries_in_file: Every query of the file, filed or not (a query no domain has is
            left out of ``runs``).
        warnings: What the reader warned about (text after a TREC run's tag...), one
            sentence each.
    """

    runs: DomainRuns
    queries_in_file: int
    warnings: tuple[str, ...] = ()


def is_official(path: Path) -> bool:
    """Whether ``path`` is one ``<subdir>`` of official outputs (the reader's own rule)."""
    return path.is_dir() and holds_outputs(path)


@dataclass(frozen=True)
class TaskFolders:
    """Official outputs folders split by the task they answer.

    Attributes:
        folders: The ones that answer the task (by their summary's ``task_type``; one with
            no summary may answer any task, so it is kept).
        skipped: One sentence per folder left out, naming it and the task it answers.
        other_tasks: The tasks those folders answer, where the task table knows them, in
            order and once each.
    """

    folders: tuple[Path, ...]
    skipped: tuple[str, ...]
    other_tasks: tuple[Task, ...] = ()


def split_by_task(folders: Sequence[Path], task: int) -> TaskFolders:
    """Keep the outputs folders that answer ``task``; say of each other one which task it answers.

    ``mmbright run --out outputs`` leaves one folder per task side by side, so a folder of
    outputs is read for one task by taking that task's folders.

    Raises:
        InputError: A folder's ``summary.json`` is malformed.
    """
    kept: list[Path] = []
    skipped: list[str] = []
    others: dict[Task, None] = {}
    expected = TASK_TABLE[task].task_type
    for folder in folders:
        found = read_summary(folder / "summary.json").get("task_type")
        if found is None or found == expected:
            kept.append(folder)
        else:
            known = task_of_type(found)
            if known is not None:
                others[known] = None
            other = known or found
            skipped.append(f"{folder.name}: these outputs answer task {other}, not task {task}")
    return TaskFolders(tuple(kept), tuple(skipped), tuple(others))


def read_task_outputs(path: str | os.PathLike[str], task: int) -> OfficialOutputs:
    """Read an official outputs folder and refuse one whose ``task_type`` is another task's.

    ``path`` may be the ``outputs`` folder above several ``<subdir>`` folders: the one that
    answers the task is read, and each other one is named in an :class:`InputWarning`.

    Raises:
        InputError: As :func:`mmbright_core.io.official.read_outputs`, or the summary's
            ``task_type`` is not the task's, or no folder under ``path`` answers the task.
    """
    folder = Path(path)
    if folder.is_dir() and not holds_outputs(folder):
        found = split_by_task(sorted(c for c in folder.iterdir() if is_official(c)), task)
        if not found.folders and found.skipped:
            raise InputError(
                f"no outputs of task {task} here",
                source=str(folder),
                found="; ".join(found.skipped),
                hint="Choose that task (--task on the command line, the sidebar's task in the "
                "dashboard)",
            )
        if len(found.folders) == 1:
            folder = found.folders[0]
            for sentence in found.skipped:
                warnings.warn(f"skipped {sentence}", InputWarning, stacklevel=2)
    outputs = read_outputs(folder)
    expected = TASK_TABLE[task].task_type
    if outputs.task_type is not None and outputs.task_type != expected:
        other = task_of_type(outputs.task_type) or outputs.task_type
        raise InputError(
            f"these outputs answer task {other}, not task {task}",
            source=str(outputs.path),
            expected=f"task_type {expected!r}",
            found=repr(outputs.task_type),
            hint="Choose that task (--task on the command line, the sidebar's task in the "
            "dashboard)",
        )
    return outputs


def task_query_ids(
    view: TaskView, domains: Sequence[str] | None = None, negatives: str = "exclude"
) -> dict[str, frozenset[str]]:
    """Return domain -> the ids of the task's queries (no corpus is read).

    ``negatives`` is the policy the run will be scored with: the judgments read here are
    the ones scoring reads next (the source keeps them), so they are built once.
    """
    chosen = domains if domains is not None else view.domains()
    return {d: frozenset(q.query_id for q in view.judgments(d, negatives).queries) for d in chosen}


def runs_by_domain(
    run: Run, known: Mapping[str, Collection[str]], name: str = "<run>"
) -> DomainRuns:
    """File each query of a run over several domains under its domain.

    Query ids repeat across domains, so a combined run may write them ``<domain>/<query id>``
    (as ``mmbright run`` does in its ``run.trec``); a bare id goes to the one domain that has
    it. Queries no domain knows are left out (evaluation counts them as extra).

    Args:
        run: query_id -> doc_id -> score.
        known: domain -> the task's query ids (:func:`task_query_ids`).
        name: The run's name, for error messages.

    Returns:
        domain -> its part of the run, for each domain with at least one query in the run.

    Raises:
        InputError: A bare id exists in several domains, or no query of the run is known.
    """
    owners: dict[str, list[str]] = {}
    for domain, ids in known.items():
        for query_id in ids:
            owners.setdefault(query_id, []).append(domain)
    out: DomainRuns = {}
    left_out: list[str] = []
    for query_id, docs in run.items():
        filed = _file_query(query_id, known, owners, name)
        if filed is None:
            left_out.append(query_id)
        else:
            out.setdefault(filed[0], {})[filed[1]] = dict(docs)
    if run and not out:
        raise InputError(
            "no query of the run belongs to this task",
            source=name,
            expected="query ids of the chosen task and domains (or <domain>/<query id>)",
            found=", ".join(repr(q) for q in list(run)[:3]),
            hint="Check the task number, the source and the domains",
        )
    if left_out:
        warnings.warn(_left_out(left_out, known, owners, name), InputWarning, stacklevel=2)
    return out


def _file_query(
    query_id: str, known: Mapping[str, Collection[str]], owners: dict[str, list[str]], name: str
) -> tuple[str, str] | None:
    """The (domain, id in that domain) a run's query id is filed under, None if no domain."""
    domain, _, bare = query_id.partition("/")
    if bare and bare in known.get(domain, ()):
        return domain, bare
    found = owners.get(query_id, [])
    if len(found) > 1:
        raise InputError(
            f"query id {query_id!r} exists in several domains ({', '.join(sorted(found))})",
            source=name,
            hint="Write query ids as <domain>/<query id>, or score one domain with --domain",
        )
    return (found[0], query_id) if found else None


def _left_out(
    left_out: list[str],
    known: Mapping[str, Collection[str]],
    owners: dict[str, list[str]],
    name: str,
) -> str:
    """The warning for query ids no domain knows, naming those that match once normalised."""
    examples = ", ".join(map(show, left_out[:EXAMPLES]))
    text = (
        f"{name}: {len(left_out):,} query id(s) belong to no domain of the task and are left "
        f"out, e.g. {examples}"
    )
    near = [
        (q, n)
        for q in left_out
        if (n := normalised(q)) != q and _file_query(n, known, owners, name) is not None
    ]
    if near:
        pairs = ", ".join(f"{show(q)} ~ {show(n)}" for q, n in near[:EXAMPLES])
        text += (
            f"; {len(near):,} of them match a query only once normalised (NFKC, invisible "
            f"characters removed), e.g. {pairs}: ids are matched exactly"
        )
    return text


def check_task_runs(view: TaskView, runs: Mapping[str, Run], *, name: str) -> tuple[str, ...]:
    """Check every domain's run against the task's judgments, and say what matches nothing.

    A doc id of another task's shape is refused (``check_doc_ids``). Ids are matched
    exactly, as trec_eval matches them, so a query id the qrels do not know, a query that
    retrieves no judged document and an id that would match only once normalised score 0
    with no word: each is one line of the answer (``id_check``), ids escaped. Domains the
    source does not hold are left to the caller (scoring refuses them).

    Returns:
        One line per finding, each starting with its domain.

    Raises:
        InputError: A domain's run has no doc id of the task's shape.
    """
    held = set(view.domains())
    findings: list[str] = []
    for domain, run in runs.items():
        if domain in held:
            qrels = view.qrels(domain)
            check_doc_ids(qrels, run, task=view.task, domain=domain, name=name)
            findings += [f"{domain}: {line}" for line in id_warnings(_id_check(qrels, run))]
    return tuple(findings)


def _id_check(qrels: Qrels, run: Run) -> IdCheck:
    # As evaluate() checks a run it scores; here before it is scored, on the run as read.
    blind = (q for q, docs in run.items() if qrels.get(q) and docs.keys().isdisjoint(qrels[q]))
    return check_ids(qrels, MappingIds(run), blind)


@dataclass(frozen=True)
class Scope:
    """What a run is read for: the task, its domains, the Task 4 protocol and the policy.

    Attributes:
        task: 1, 2, 3 or 4.
        domains: Keep only these domains (None: all the source holds).
        protocol: The Task 4 protocol.
        negatives: The ``negative_ids`` policy the run will be scored with.
    """

    task: int
    domains: Sequence[str] | None = None
    protocol: Protocol4 = "paper"
    negatives: str = "exclude"

    def view(self, source: Source) -> TaskView:
        """The source read as the scope's task under its protocol."""
        return TaskView(source, cast(Task, self.task), self.protocol)


def read_task_file(
    source: Source, scope: Scope, src: Readable, name: str, *, max_bytes: int | None = None
) -> FileRuns:
    """Read a run file (MTEB predictions, or any run format) for a task, filed by domain.

    Args:
        source: The dataset copy whose queries define the domains.
        scope: The task and domains read for.
        src: The file: a path, or an open binary file.
        name: Its name (for messages; its ending may name the format).
        max_bytes: The most bytes read (see :func:`mmbright_core.io.read_run`).
    """
    chosen = scope.domains if scope.domains is not None else source.domains()
    if looks_like_mteb(name, head=_head(src)):
        found = _mteb_runs(source, scope.task, src, max_bytes)
        runs = {d: r for d, r in found.items() if d in chosen}
        return FileRuns(runs, sum(len(run) for run in found.values()))
    run = read_run(src, max_bytes=max_bytes)
    known = task_query_ids(scope.view(source), sorted(chosen), scope.negatives)
    return FileRuns(runs_by_domain(run, known, name), len(run))


def _mteb_runs(source: Source, task: int, src: Readable, max_bytes: int | None) -> DomainRuns:
    """An MTEB predictions file's runs, refused when MTEB's task name is another task's."""
    found = read_mteb_predictions(src, domains=source.domains(), max_bytes=max_bytes)
    if found.task is not None and found.task != task:
        raise InputError(
            f"these predictions answer task {found.task} ({found.task_name}), not task {task}",
            source=str(getattr(src, "name", src)),
            expected=f"{mteb_task_name(task)} predictions",
            found=str(found.task_name),
            hint=f"Score them with --task {found.task}",
        )
    return found.runs


def _head(src: Readable) -> bytes | None:
    # A path is looked into by the MTEB rule itself and an upload's bytes are at hand; any
    # other open file (standard input) is not peeked at, so only its name can say MTEB.
    if not isinstance(src, io.BytesIO):
        return None if isinstance(src, str | os.PathLike) else b""
    return src.getvalue()[:4096]


def load_task_runs(source: Source, scope: Scope, path: str | os.PathLike[str]) -> DomainRuns:
    """Read a run for a task: an official outputs folder, or a run file over any domains.

    Args:
        source: The dataset copy whose queries define the domains.
        scope: The task and domains read for.
        path: A ``<subdir>`` of official outputs (one ``scores.json`` per domain), an MTEB
            predictions file or a run file in any format ``read_run`` reads.

    Raises:
        InputError: The run is malformed, or an outputs folder answers another task.
    """
    if Path(path).is_dir():
        chosen = set(scope.domains if scope.domains is not None else source.domains())
        runs = read_task_outputs(path, scope.task).runs
        return {d: dict(r) for d, r in runs.items() if d in chosen}
    return read_task_file(source, scope, Path(path), str(path)).runs


def read_upload(
    name: str, data: bytes, source: Source, scope: Scope, max_bytes: int | None
) -> FileRuns:
    """Read uploaded bytes as a run of the task, with what the reader warned about.

    Raises:
        InputError: The file is malformed, expands past ``max_bytes``, or answers another
            task (by its query ids or by the shape of its doc ids).
    """
    stream = io.BytesIO(data)
    stream.name = name  # the reader names the file in its errors and detects the format
    try:
        with _CATCHING, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InputWarning)
            found = read_task_file(source, scope, stream, name, max_bytes=max_bytes)
    except InputTooLargeError as err:
        # The reader counts as it reads; the page names the limit the user met.
        raise InputError(
            "the file expands past the upload limit once decompressed",
            source=name,
            expected=f"at most {err.limit / 2**20:.0f} MB of content",
            found=f"more than {err.limit / 2**20:.0f} MB",
            hint="Split the run, or load it from a folder",
        ) from None
    findings = check_task_runs(scope.view(source), found.runs, name=name)
    said = [w for w in caught if issubclass(w.category, InputWarning)]
    for other in caught:  # warnings of any other kind go on to the server's log as before
        if other not in said:
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    return FileRuns(found.runs, found.queries_in_file, (*(str(w.message) for w in said), *findings))

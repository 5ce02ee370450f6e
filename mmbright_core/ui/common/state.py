"""The dashboard's session state: the chosen data, the loaded runs and the inspected query.

Every page reads the same few keys, so they are named once here. Runs live in
``st.session_state`` as :class:`RunEntry` values keyed by name; a failed load never touches
the runs already there (the page shows the error and the user's other runs stay as they were).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import streamlit as st

from mmbright_core.data.view import TaskView
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.types import Run, Task

if TYPE_CHECKING:
    from mmbright_core.analysis.lineage import Lineage
    from mmbright_core.retrieval.base import RunConfig

SOURCE_KEY = "source_spec"
TASK_KEY = "task"
PROTOCOL_KEY = "protocol"
RUNS_KEY = "runs"
INSPECT_KEY = "inspect_query"
FRESH_KEY = "fresh_runs"
UPLOADS_READ_KEY = "uploads_read"
"""The uploads already read, as (file id, source spec, task): a file is read once for them,
so a run removed (or a file refused) does not come back on the next "Add uploaded runs"."""
UPLOADS_PENDING_KEY = "uploads_pending"
"""file id -> an upload matching the task only a little, with its counts, awaiting the
user's word (add it anyway, or discard it)."""
COMPARE_SECTION_KEY = "cmp_section"
COMPARE_SECTIONS = (
    "By domain",
    "Query by query",
    "Where B loses most",
    "Image effect by slice",
    "Export",
)
"""Compare's tabs: only the open one is computed and drawn (the first is open at first)."""
INSPECT_SECTION_KEY = "insp_section"
INSPECT_SECTIONS = ("Relevant items missed", "Score attribution, top 10", "The two runs aligned")
"""The inspector's tabs under the runs' top lists, computed and drawn the same way."""

RUN_A_KEY = "run_a"
RUN_B_KEY = "run_b"
"""Runs A and B, chosen on Per query or Compare: one pair for every page of the session."""
NO_RUN = "(none)"
"""Run B's choice on Per query when no run is compared."""
INSPECT_RUNS_KEY = "insp_runs"
"""The runs the inspector shows side by side (kept across pages and tasks)."""

_KEEP = "keep_"
"""The prefix of the second key under which a sticky widget keeps its value."""

DEFAULT_SOURCE = "demo"
SOURCE_ENV = "MMBRIGHT_SOURCE"
"""The variable naming the source a new session opens on (``mmbright app --source``)."""
DEFAULT_TASK: Task = 1
DEFAULT_PROTOCOL = "paper"


@dataclass(frozen=True)
class RunEntry:
    """One run the dashboard knows about, for one task.

    Attributes:
        name: The name shown everywhere (unique in the session).
        source: The data source spec the run was loaded for (its queries and domains).
        task: The task the run answers.
        runs: domain -> query_id -> doc_id -> score.
        origin: Where it came from, for the user ("demo", "upload: x.trec", ...).
        fingerprint: A digest of the content; caches of scores are keyed on it.
        negatives: The policy for ``negative_ids`` the run is scored by: the one its
            configuration records, else ``"exclude"`` (the official rule, docs/protocol.md, Per-task
            protocol).
        config: The run configuration recorded beside its outputs (``config.json``), read
            once when the folder was loaded (``analysis.lineage.recorded_config``), or None
            for a run without one (a run file, another harness's outputs).
        ocr_words: The words an OCR run recorded from its query images (``ocr.json``), or
            None where there are none.
        warnings: What its outputs record as having lowered its scores, one sentence per
            item, each starting with its domain (``metrics.json``'s ``"warnings"``), or
            what the reader warned about in an uploaded file, each naming the file.
        rewrites: ``(domain, query_id)`` -> the rewritten query a run on rewritten queries
            ran (``rewrites.json``); empty for any other run.
    """

    name: str
    source: str
    task: Task
    runs: Mapping[str, Run]
    origin: str
    fingerprint: str = field(default="")
    negatives: str = field(default="exclude")
    config: RunConfig | None = field(default=None)
    ocr_words: OcrWords | None = field(default=None)
    warnings: tuple[str, ...] = field(default=())
    rewrites: Mapping[tuple[str, str], Rewrite] = field(default_factory=dict)

    @property
    def lineage(self) -> Lineage:
        """What its configuration records of where it came from (nothing, without one)."""
        from mmbright_core.analysis.lineage import Lineage

        return Lineage.of(self.config)

    @property
    def provenance(self) -> str:
        """One line: where the run came from, its ``negative_ids`` policy, its first stage."""
        lineage, stage = self.lineage, ""
        if lineage.reranks is not None:
            stage = f" · reranks the top {lineage.reranks.depth} of {lineage.reranks.label}"
        if lineage.queries is not None:  # a run on rewritten queries (mmbright run --queries)
            queries = lineage.queries
            stage += (
                f" · queries rewritten by {queries.model} "
                f"({queries.prompt}, set {queries.sha256[:8]})"
            )
        return f"{self.origin} · negatives {self.negatives}{stage}"


@dataclass(frozen=True)
class InspectTarget:
    """The query the inspector shows.

    Attributes:
        domain: The query's domain.
        query_id: The query's id.
    """

    domain: str
    query_id: str


@dataclass(frozen=True)
class Compared:
    """Runs A and B of one task, as the Compare page compares them.

    Attributes:
        view: The source, the task and its protocol.
        entries: The task's runs by name (A and B among them).
        run_a: The name of run A.
        run_b: The name of run B.
    """

    view: TaskView
    entries: Mapping[str, RunEntry]
    run_a: str
    run_b: str


def fingerprint(*parts: str | bytes) -> str:
    """Digest some identifying parts (file bytes, a path and mtime, a name) into a cache key."""
    digest = hashlib.blake2b(digest_size=12)
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


def init_state() -> None:
    """Put the defaults into ``st.session_state`` on the first run of a session."""
    defaults: dict[str, object] = {
        SOURCE_KEY: initial_source_spec(),
        RUNS_KEY: {},
        FRESH_KEY: [],
    }
    for key, value in defaults.items():
        st.session_state.setdefault(key, value)


def initial_source_spec() -> str:
    """The source a new session opens on: ``MMBRIGHT_SOURCE`` if set, else the demo."""
    return os.environ.get(SOURCE_ENV, "").strip() or DEFAULT_SOURCE


def source_spec() -> str:
    """The data source spec: ``"demo"``, ``"hf"`` or a folder path."""
    return str(st.session_state.get(SOURCE_KEY, DEFAULT_SOURCE))


def remembered(key: str, default: object = None) -> object:
    """The remembered value of a sticky widget (:mod:`mmbright_core.ui.common.widgets`)."""
    return st.session_state.get(_KEEP + key, default)


def keep(key: str, value: object) -> None:
    """Remember ``value`` for the sticky widget ``key`` (drawn with it next time)."""
    st.session_state[_KEEP + key] = value


def current_task() -> Task:
    """The task chosen in the sidebar."""
    return cast(Task, remembered(TASK_KEY, DEFAULT_TASK))


def current_protocol() -> str:
    """The Task 4 protocol chosen in the sidebar (``paper`` unless changed)."""
    return str(remembered(PROTOCOL_KEY, DEFAULT_PROTOCOL))


def set_task(task: Task) -> None:
    """Choose the task (before the sidebar is drawn)."""
    keep(TASK_KEY, task)


def all_runs() -> dict[tuple[Task, str], RunEntry]:
    """Every run of the session, by (task, name).

    A name is unique within its task only, so that one model's runs of two tasks (``bm25``
    on tasks 2 and 4) live side by side.
    """
    runs: dict[tuple[Task, str], RunEntry] = st.session_state.setdefault(RUNS_KEY, {})
    return runs


def task_runs(task: Task | None = None) -> dict[str, RunEntry]:
    """The runs of one task (the current one by default) on the current source, by name.

    Runs loaded for another source are kept but not offered: their queries and domains
    belong to that source.
    """
    wanted = current_task() if task is None else task
    spec = source_spec()
    return {
        name: entry
        for (task_of, name), entry in all_runs().items()
        if task_of == wanted and entry.source == spec
    }


def add_run(entry: RunEntry) -> None:
    """Add or replace the run of that task and name; the others are left untouched.

    The run is also queued as fresh, so that the sidebar shows it selected on the next
    rerun (a widget's value cannot change once it is drawn in the current one).
    """
    runs = dict(all_runs())
    runs[(entry.task, entry.name)] = entry
    st.session_state[RUNS_KEY] = runs
    st.session_state[FRESH_KEY] = [*st.session_state.get(FRESH_KEY, []), entry.name]


def take_fresh_runs() -> list[str]:
    """Return and forget the names of the runs added since the last call."""
    fresh: list[str] = st.session_state.get(FRESH_KEY, [])
    st.session_state[FRESH_KEY] = []
    return fresh


def remove_run(name: str) -> None:
    """Forget one run of the current task by name (nothing happens if it is unknown)."""
    runs = dict(all_runs())
    runs.pop((current_task(), name), None)
    st.session_state[RUNS_KEY] = runs


def upload_read(file_id: str) -> bool:
    """Whether an uploaded file was read already for the current source and task."""
    done: set[tuple[str, str, Task]] = st.session_state.get(UPLOADS_READ_KEY, set())
    return (file_id, source_spec(), current_task()) in done


def mark_upload_read(file_id: str) -> None:
    """Record that an uploaded file was read for the current source and task."""
    done = set(st.session_state.get(UPLOADS_READ_KEY, set()))
    done.add((file_id, source_spec(), current_task()))
    st.session_state[UPLOADS_READ_KEY] = done


def unique_name(name: str, task: Task) -> str:
    """Return ``name``, or ``name (2)``, ``name (3)``... if the task already has a run so named."""
    taken = {run_name for task_of, run_name in all_runs() if task_of == task}
    if name not in taken:
        return name
    n = 2
    while f"{name} ({n})" in taken:
        n += 1
    return f"{name} ({n})"


def selected_key(task: Task | None = None) -> str:
    """The sidebar's run-selection key for a task (one per task, so each keeps its own)."""
    return f"selected_runs_{current_task() if task is None else task}"


def inspect_target() -> InspectTarget | None:
    """The query the inspector should show, if one was chosen."""
    target = st.session_state.get(INSPECT_KEY)
    return target if isinstance(target, InspectTarget) else None


def set_inspect_target(domain: str, query_id: str) -> None:
    """Choose the query the inspector shows."""
    st.session_state[INSPECT_KEY] = InspectTarget(domain, query_id)

"""Cached access to the core: sources and their indexes as resources, results as data.

Sources (and the per-domain lookups built from them) are shared objects kept with
``st.cache_resource``; computed results go through bounded ``st.cache_data``. Runs are never
hashed by Streamlit (they can hold millions of scores): each cached function takes the runs'
fingerprints, which name their content, and the runs themselves under an ``_``-prefixed
argument that the cache skips.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from mmbright_core.analysis.compare import JUDGED, Comparison, compare_runs, paired_deltas
from mmbright_core.analysis.leaderboard import leaderboard
from mmbright_core.analysis.table import source_results_table
from mmbright_core.data.sources import Source, open_source, parse_source_spec
from mmbright_core.data.view import QueryRef, TaskView
from mmbright_core.task_table import MAIN_SCORE
from mmbright_core.types import Task
from mmbright_core.ui.common import state, workspace
from mmbright_core.ui.common.confine import Confinement
from mmbright_core.ui.common.state import RunEntry

MEASURE = MAIN_SCORE
"""The benchmark's primary measure (docs/protocol.md, The benchmark), shown on every page."""


@st.cache_resource(max_entries=4, show_spinner="Opening the data source…")
def get_source(spec: str) -> Source:
    """Open a data source once per spec and share it across sessions.

    A folder spec is confined to the server's data root, if one is set (:mod:`.confine`):
    the folder and every config folder and file in it, before the source opens any.
    """
    if parse_source_spec(spec).kind != "folder":
        return open_source(spec)
    return open_source(str(dataset_folder(spec)))


def dataset_folder(spec: str) -> Path:
    """The dataset folder a spec names, with every config folder and file in it checked.

    Raises:
        InputError: The folder, or an entry of it, resolves outside the server's data root,
            loops, or holds a NUL character.
    """
    confinement = Confinement.from_env()
    folder = confinement.typed(spec, "dataset folder")
    confinement.check_tree(folder, "dataset folder", depth=2)
    return folder


def current_view(task: Task | None = None) -> TaskView:
    """The view the sidebar chose: its source, its task (or ``task``) and its protocol.

    Raises:
        InputError: The source cannot be opened (:func:`get_source`).
    """
    chosen = state.current_task() if task is None else task
    return TaskView(get_source(state.source_spec()), chosen, state.current_protocol())


VIEWS: dict[str | type[Any], Callable[[Any], Any]] = {
    TaskView: lambda view: view.key,
    QueryRef: lambda ref: ref.key,
}
"""How the caches hash a view and a query: by what names them, never the source's content."""


@st.cache_resource(max_entries=1, show_spinner=False)
def demo_runs() -> dict[Task, tuple[RunEntry, ...]]:
    """The demo's runs by task, read once per server and shared by every session.

    They ship with the package, so their content never changes while the server runs; each
    session adds the same (frozen) entries to its own runs, and a session's later choices
    (removing one, adding others) stay in that session's state.
    """
    return {task: tuple(workspace.demo_entries(task)) for task in workspace.demo_tasks()}


def _key(entries: Mapping[str, RunEntry]) -> tuple[tuple[str, str, str], ...]:
    """What names the runs' scores: each run's name, content and ``negative_ids`` policy."""
    return tuple((name, entry.fingerprint, entry.negatives) for name, entry in entries.items())


def table_for(view: TaskView, entries: Mapping[str, RunEntry]) -> pd.DataFrame:
    """The per-query results table (one row per run and query) of the given runs.

    Each run is scored once and cached on its own (by name, fingerprint and the policy for
    ``negative_ids`` it records), so adding or removing a run never rescores the others.
    """
    frames = []
    for name, entry in entries.items():
        args = (view, entry.negatives, name)
        _tables.setdefault(entry.fingerprint, set()).add(args)
        frames.append(_run_table(*args, entry.fingerprint, entry))
    return pd.concat(frames, ignore_index=True)


_tables: dict[str, set[tuple[TaskView, str, str]]] = {}
"""Run fingerprint -> the arguments its score tables were cached under (to drop them)."""


def forget_tables(fingerprints: Collection[str]) -> None:
    """Drop the cached score tables of runs that no open session holds any more.

    An uploaded run's tables would otherwise stay until the cache evicts them, and with
    them the few memory pages they share with the run's freed scores (docs/safety.md,
    "Bounded memory").
    """
    for key in fingerprints:
        for args in _tables.pop(key, set()):
            _run_table.clear(*args, key, None)


# A resource, not data: the table is shared as is rather than unpickled on every rerun
# (callers get it through ``pd.concat``, a new frame, and pandas copies on write).
@st.cache_resource(max_entries=64, show_spinner="Scoring…", hash_funcs=VIEWS)
def _run_table(
    view: TaskView, negatives: str, name: str, key: str, _entry: RunEntry
) -> pd.DataFrame:
    return source_results_table(
        view,
        {name: _entry.runs},
        measures=(MEASURE, JUDGED),  # Judged@10: how much of the top 10 has a judgment
        negatives=negatives,
    )


def board_for(view: TaskView, entries: Mapping[str, RunEntry]) -> pd.DataFrame:
    """The leaderboard of the given runs (domains, ``Avg.``, x100 with one decimal).

    Computed once per server for the same runs (their names, contents and policies for
    ``negative_ids``): every session that opens Home on the demo's runs shares it.
    """
    return _board(view, _key(entries), entries)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=VIEWS)
def _board(
    view: TaskView, key: tuple[tuple[str, str, str], ...], _entries: Mapping[str, RunEntry]
) -> pd.DataFrame:
    return leaderboard(table_for(view, _entries), MEASURE)


def comparison_for(
    view: TaskView, entries: Mapping[str, RunEntry], run_a: str, run_b: str
) -> Comparison:
    """The paired comparison of two runs (CIs, Holm-corrected p-values).

    Only the two runs are scored, and the result is cached on them alone: the other runs
    of the task neither cost time nor invalidate it.
    """
    pair = _pair(entries, run_a, run_b)
    return _comparison(view, _key(pair), run_a, run_b, pair)


def _pair(entries: Mapping[str, RunEntry], run_a: str, run_b: str) -> dict[str, RunEntry]:
    return {name: entries[name] for name in dict.fromkeys((run_a, run_b)) if name in entries}


@st.cache_data(max_entries=16, show_spinner="Comparing…", hash_funcs=VIEWS)
def _comparison(
    view: TaskView,
    key: tuple[tuple[str, str, str], ...],
    run_a: str,
    run_b: str,
    _entries: Mapping[str, RunEntry],
) -> Comparison:
    table = table_for(view, _entries)
    return compare_runs(table, run_a, run_b, MEASURE)


def deltas_for(
    view: TaskView, entries: Mapping[str, RunEntry], run_a: str, run_b: str
) -> pd.DataFrame:
    """The per-query deltas of two runs, without the statistics of :func:`comparison_for`.

    Each run's scores are cached by :func:`table_for`; pairing them is a cheap join.
    """
    pair = _pair(entries, run_a, run_b)
    return paired_deltas(table_for(view, pair), run_a, run_b, MEASURE)

"""Failure tags as the pages read them: a view's notes key, its queries' tags, the tag picker.

The notes file names a view by the source spec the sidebar shows. Tags are read on every
rerun (an edit in the inspector shows at once; one task's tags are one small SQLite query)
and only when the file exists, so opening a page never creates it.
"""

from __future__ import annotations

from streamlit.delta_generator import DeltaGenerator

from mmbright_core.data.view import TaskView
from mmbright_core.notes import DEFAULT_TAGS, NotesStore, ScopeKey, default_path, scope_tags
from mmbright_core.ui.common import state
from mmbright_core.ui.common.literal import visible
from mmbright_core.ui.common.widgets import Kept


def notes_scope(view: TaskView) -> ScopeKey:
    """The notes key of a view: the notes file names it by the sidebar's source spec."""
    return ScopeKey(state.source_spec(), view.task, view.protocol)


def query_tags(view: TaskView) -> dict[tuple[str, str], list[str]]:
    """(domain, query_id) -> the query's failure tags, from the notes file if there is one."""
    return scope_tags(notes_scope(view))[1]


def tag_names() -> list[str]:
    """The taxonomy's tag names, in its order (the default taxonomy without a notes file)."""
    path = default_path()
    if not path.is_file():
        return [name for name, _ in DEFAULT_TAGS]
    with NotesStore(path) as store:
        return [tag.name for tag in store.tags()]


def tag_choice(where: DeltaGenerator, kept: Kept) -> list[str]:
    """The failure tags multiselect of a page (``kept``: its sticky key, :mod:`widgets`)."""
    chosen: list[str] = where.multiselect(
        "Failure tags (a query with any of them)", tag_names(), **kept, format_func=visible
    )
    return chosen

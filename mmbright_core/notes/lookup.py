"""Reading the failure tags of one task view without ever creating the notes file.

The comparison, its slices and the report take tags as data (``(domain, query_id) -> tags``);
this is where the command line and the dashboard read them from the notes store. A reader
without notes gets none, and no empty database is left behind.
"""

from __future__ import annotations

from pathlib import Path

from mmbright_core.notes.database import default_path
from mmbright_core.notes.store import NotesStore


def scope_tags(
    source: str, task: int, protocol: str
) -> tuple[Path | None, dict[tuple[str, str], list[str]]]:
    """The failure tags of a task's queries, read from the notes file when it exists.

    The file is the notes store's (``MMBRIGHT_NOTES``, else the data folder's); it is never
    created here, so a reader without notes gets ``(None, {})``.

    Args:
        source: The data source as the notes key it (``"demo"``, ``"hf@<revision>"``...).
        task: The task number.
        protocol: The judgment protocol.

    Returns:
        The file read (None when there is none) and (domain, query_id) -> tags.
    """
    path = default_path()
    if not path.is_file():
        return None, {}
    with NotesStore(path) as store:
        found = store.for_scope(source, task, protocol)
    return path, {key: list(notes.tags) for key, notes in found.items()}

"""Failure tags and free notes on queries, kept in one SQLite file several sessions share.

A researcher labels a query with tags from an editable taxonomy and writes a note; both are
keyed by data source, task, protocol, domain and query id, so every view of the dashboard
and the command line finds them. Only the standard library is used here.
"""

from mmbright_core.notes.database import (
    DEFAULT_TAGS,
    DEFAULT_TIMEOUT,
    NOTES_ENV,
    SCHEMA_VERSION,
    data_dir,
    default_path,
)
from mmbright_core.notes.records import Conflict, ImportReport, QueryKey, QueryNotes, Tag
from mmbright_core.notes.store import NotesStore, scope_tags

__all__ = [
    "DEFAULT_TAGS",
    "DEFAULT_TIMEOUT",
    "NOTES_ENV",
    "SCHEMA_VERSION",
    "Conflict",
    "ImportReport",
    "NotesStore",
    "QueryKey",
    "QueryNotes",
    "Tag",
    "data_dir",
    "default_path",
    "scope_tags",
]

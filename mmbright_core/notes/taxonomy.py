"""The taxonomy: the failure tags, in their order, read and changed inside a transaction.

Each function takes the connection of a transaction opened by
:func:`~mmbright_core.notes.database.run`; :class:`~mmbright_core.notes.store.NotesStore`
names the transaction and these say what it does to the ``tags`` table.
"""

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Iterable

from mmbright_core.errors import NotesError, show
from mmbright_core.notes.records import Tag, tag_name_problem, utc_now


def checked_name(name: str) -> str:
    """Return ``name`` if it can name a tag.

    Raises:
        NotesError: The name is empty or holds ``;`` or a line break.
    """
    problem = tag_name_problem(name)
    if problem:
        raise NotesError("invalid tag name", expected=problem, found=show(str(name)))
    return name


def count(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> int:
    """Return the single number the statement answers (a count, a position)."""
    return int(conn.execute(sql, params).fetchone()[0])


def tags(conn: sqlite3.Connection) -> list[Tag]:
    """Return the taxonomy in its order, each tag with the number of queries using it."""
    rows = conn.execute(
        "SELECT t.name, t.description, t.position, count(q.tag) FROM tags t "
        "LEFT JOIN query_tags q ON q.tag = t.name GROUP BY t.name ORDER BY t.position, t.name"
    )
    return [Tag(*row) for row in rows]


def tag(conn: sqlite3.Connection, name: str) -> Tag:
    """Return the tag called ``name`` (which exists)."""
    return next(found for found in tags(conn) if found.name == name)


def exists(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the taxonomy holds a tag called ``name``."""
    return count(conn, "SELECT count(*) FROM tags WHERE name = ?", (name,)) > 0


def insert(conn: sqlite3.Connection, name: str, description: str) -> None:
    """Append a tag at the end of the taxonomy."""
    position = count(conn, "SELECT coalesce(max(position) + 1, 0) FROM tags", ())
    conn.execute(
        "INSERT INTO tags (name, description, position, created_at) VALUES (?, ?, ?, ?)",
        (name, description, position, utc_now()),
    )


def require(conn: sqlite3.Connection, names: Iterable[str]) -> None:
    """Refuse, with the closest names, the first of ``names`` the taxonomy lacks."""
    known = [row[0] for row in conn.execute("SELECT name FROM tags ORDER BY position")]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=2, cutoff=0.5)
            raise NotesError(
                f"unknown tag {name!r}",
                expected=f"one of the {len(known)} tags of the taxonomy",
                found=show(name),
                hint=(f"Did you mean {' or '.join(map(repr, close))}? " if close else "")
                + "Add it first (mmbright notes tags --add NAME)",
            )


def add(conn: sqlite3.Connection, name: str, description: str) -> Tag:
    """Append a new tag and return it; a name already taken is refused."""
    if exists(conn, name):
        raise NotesError(
            f"tag {name!r} is already in the taxonomy",
            expected="a new name",
            hint="Rename the existing tag instead",
        )
    insert(conn, name, description)
    return tag(conn, name)


def rename(conn: sqlite3.Connection, old: str, new: str) -> Tag:
    """Rename a tag (its labels follow) and return it; an unknown or taken name is refused."""
    require(conn, [old])
    if new != old and exists(conn, new):
        raise NotesError(
            f"cannot rename {old!r} to {new!r}: that tag exists",
            expected="a name not in the taxonomy",
            hint="Remove one of the two first (with force to drop its labels)",
        )
    conn.execute("UPDATE tags SET name = ? WHERE name = ?", (new, old))  # cascades
    return tag(conn, new)


def remove(conn: sqlite3.Connection, name: str, force: bool) -> int:
    """Remove a tag and return how many labels went with it; one in use needs ``force``."""
    require(conn, [name])
    uses = count(conn, "SELECT count(*) FROM query_tags WHERE tag = ?", (name,))
    if uses and not force:
        raise NotesError(
            f"tag {name!r} is still in use",
            expected="a tag no query carries",
            found=f"{uses} labelled quer{'y' if uses == 1 else 'ies'}",
            hint="Rename it instead, or remove it with force (--force) to drop its labels too",
        )
    conn.execute("DELETE FROM query_tags WHERE tag = ?", (name,))
    conn.execute("DELETE FROM tags WHERE name = ?", (name,))
    return uses

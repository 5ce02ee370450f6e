"""Keeping the dashboard's folder inputs inside one root folder on a shared server.

When ``MMBRIGHT_DATA_ROOT`` is set, every folder the user types (the local dataset, a runs
folder, a run's output folder) must lie inside that root once symlinks and ``..`` are
resolved; a relative folder is taken inside the root. Without the variable the dashboard
is a local tool and a folder means what it means in a shell.
"""

from __future__ import annotations

import os
from pathlib import Path

from mmbright_core.errors import InputError

ROOT_ENV = "MMBRIGHT_DATA_ROOT"
"""The environment variable naming the folder that every folder input must lie in."""


def data_root() -> Path | None:
    """The configured root folder, resolved, or None when folder inputs are unconfined.

    Raises:
        InputError: The variable names something that is not a folder (the server is
            misconfigured: refuse every folder rather than none).
    """
    value = os.environ.get(ROOT_ENV, "").strip()
    if not value:
        return None
    root = Path(value).expanduser().resolve()
    if not root.is_dir():
        raise InputError(
            f"{ROOT_ENV} does not name a folder",
            found=repr(value),
            hint=f"Set {ROOT_ENV} to an existing folder, or unset it",
        )
    return root


def confine(folder: str | os.PathLike[str], what: str = "folder") -> Path:
    """Return the folder to use for a user's input, refusing one outside the data root.

    Args:
        folder: What the user typed.
        what: What the folder is for (``"dataset folder"``...), for the message.

    Returns:
        The folder, resolved (symlinks and ``..`` followed) when a root is configured,
        else as typed with ``~`` expanded.

    Raises:
        InputError: A root is configured and the folder resolves outside it.
    """
    root = data_root()
    typed = Path(folder).expanduser()
    if root is None:
        return typed
    # strict=False: an output folder may not exist yet; what exists is still resolved.
    resolved = (root / typed).resolve()
    if resolved != root and root not in resolved.parents:
        raise InputError(
            f"the {what} is outside the folder this server may read",
            expected=f"a folder inside {root}",
            found=f"{os.fspath(folder)!r}, which resolves to {resolved}",
            hint=f"This server confines folders to {ROOT_ENV}; give a path inside it",
        )
    return resolved

"""Which folder a run writes to: never one holding outputs of another configuration.

A ``<subdir>`` folder holds one run configuration (docs/commands.md, "Output folders"):
its ``config.json`` claims the folder before any domain is written, and every domain's
``config.json`` records the same settings. A new run may write into a folder only when
everything recorded there equals its own configuration (the package version aside); a
domain whose files lack a ``config.json`` is then the same run stopped mid-domain, and
is run again. A folder holding outputs with no recorded configuration at all (the
official harness's) is never written into.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError
from mmbright_core.io.recorded import config_differences, describe_differences
from mmbright_core.retrieval.base import RunConfig

CONFIG_FILE = "config.json"
OUTPUT_FILES = ("scores.json", "metrics.json", "results.json")
"""Files of a domain folder that make it hold outputs (results.json: older official runs)."""
MAX_SUFFIX = 1000
"""The most ``<subdir>_<n>`` folders tried before giving up."""

Guard = Callable[[Path], None]
"""Called with each folder or file before it is read or written; raises to refuse it."""


class OutputConflictError(InputError):
    """The output folder holds outputs a run must not write beside.

    Attributes:
        folder: The folder refused.
        reason: Why, in a phrase (``holds another configuration (by its config.json):
            k (recorded 1000, now 10)``).
    """

    def __init__(self, folder: Path, reason: str) -> None:
        self.folder = folder
        self.reason = reason
        super().__init__(
            reason,
            source=str(folder),
            hint="Nothing was written. Choose another output root (--out), or delete the folder",
        )


@dataclass(frozen=True)
class FolderChoice:
    """Where a run goes, and the folders it passed over.

    Attributes:
        task_dir: The folder the run writes to.
        avoided: ``(folder, reason)`` for each folder passed over, in order.
    """

    task_dir: Path
    avoided: tuple[tuple[Path, str], ...] = ()


def conflict(task_dir: Path, config: RunConfig, guard: Guard) -> str | None:
    """Why ``task_dir`` cannot take a run of ``config``, or None when it can.

    Args:
        task_dir: The ``<subdir>`` folder.
        config: The new run's configuration.
        guard: Called with each path before it is read.
    """
    guard(task_dir)
    if not task_dir.is_dir():
        return None if not task_dir.exists() else "exists and is not a folder"
    recorded, bare = _recorded(task_dir, guard)
    if not recorded:
        return "holds outputs with no recorded configuration" if bare else None
    now = config.to_dict()
    for where, found in recorded:
        try:  # through RunConfig: a field added since reads back as the default it had
            stored = RunConfig.from_dict(found).to_dict()
        except InputError:
            return f"holds a configuration this version cannot read (its {where})"
        differences = config_differences(stored, now)
        if differences:
            return (
                f"holds another configuration (by its {where}): {describe_differences(differences)}"
            )
    return None


def choose_folder(
    out_dir: Path, subdir: str, config: RunConfig, *, new_folder: bool, guard: Guard
) -> FolderChoice:
    """The folder a run of ``config`` writes to under ``out_dir``.

    Args:
        out_dir: The output root.
        subdir: The folder name of the task and model (``official_subdir``).
        config: The run's configuration.
        new_folder: On a conflict, take the first of ``<subdir>_2``, ``<subdir>_3``... that
            is absent or holds this same configuration (then reused), instead of refusing.
        guard: Called with each path before it is read.

    Raises:
        OutputConflictError: ``<subdir>`` cannot take the run and ``new_folder`` is False,
            or no free name was found.
    """
    avoided: list[tuple[Path, str]] = []
    for name in _names(subdir):
        task_dir = out_dir / name
        reason = conflict(task_dir, config, guard)
        if reason is None:
            return FolderChoice(task_dir, tuple(avoided))
        if not new_folder:
            raise OutputConflictError(task_dir, reason)
        avoided.append((task_dir, reason))
    raise OutputConflictError(out_dir / subdir, f"no free folder up to {subdir}_{MAX_SUFFIX}")


def held_domains(task_dir: Path, guard: Guard) -> list[str]:
    """The domain folders of ``task_dir`` that hold outputs or a configuration, sorted."""
    if not task_dir.is_dir():
        return []
    return [child.name for child in _domain_dirs(task_dir, guard) if _holds_anything(child)]


def _names(subdir: str) -> Iterator[str]:
    yield subdir
    for n in range(2, MAX_SUFFIX + 1):
        yield f"{subdir}_{n}"


def _recorded(task_dir: Path, guard: Guard) -> tuple[list[tuple[str, Any]], bool]:
    """Every configuration recorded in the folder, and whether outputs lie there without one."""
    recorded: list[tuple[str, Any]] = []
    bare = False
    top = task_dir / CONFIG_FILE
    guard(top)
    if top.is_file():
        recorded.append((CONFIG_FILE, _stored_config(top)))
    guard(task_dir / "summary.json")
    bare = (task_dir / "summary.json").is_file()
    for child in _domain_dirs(task_dir, guard):
        path = child / CONFIG_FILE
        if path.is_file():
            recorded.append((f"{child.name}/{CONFIG_FILE}", _stored_config(path)))
        elif any((child / name).is_file() for name in OUTPUT_FILES):
            bare = True
    return recorded, bare


def _domain_dirs(task_dir: Path, guard: Guard) -> list[Path]:
    children = []
    for child in sorted(task_dir.iterdir()):
        guard(child)
        if child.is_dir():
            for name in (CONFIG_FILE, *OUTPUT_FILES):
                guard(child / name)
            children.append(child)
    return children


def _holds_anything(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (CONFIG_FILE, *OUTPUT_FILES))


def _stored_config(path: Path) -> Any:
    # Whatever is not a readable configuration fails RunConfig.from_dict in conflict():
    # a folder whose record cannot be read is never written into.
    try:
        return json.loads(path.read_text(encoding="utf-8"))["config"]
    except (OSError, ValueError, KeyError, TypeError):
        return None

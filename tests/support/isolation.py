"""Keeping the suite off the user's own files: a temporary home for the whole test run.

``conftest.pytest_configure`` calls :func:`redirect` before any test is collected. It points
``HOME``, the XDG folders (the data folder, where the dashboard's outputs go by default) and
the notes and cache locations (``MMBRIGHT_NOTES``, ``MMBRIGHT_CACHE``) at one temporary folder
by writing ``os.environ`` directly, after removing every other ``MMBRIGHT_*`` setting the
user's shell may hold (an outputs folder, a data root, input limits), except the suite's own
knobs (``MMBRIGHT_FUZZ_*``). No ``monkeypatch`` holds these values, so no test undoing its
monkeypatch (nor the end of a fixture) can put the real folders back.
:func:`snapshot` records what the package's folders in the real home hold, so that a test and
the end of the session can check they are untouched.
"""

from __future__ import annotations

import os
import pwd
import tempfile
from pathlib import Path

# The variables the package (and the libraries it drives) read for where to write.
_XDG = ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")
_LOCATIONS = {
    "MMBRIGHT_NOTES": "data/mmbright/notes.sqlite3",
    "MMBRIGHT_CACHE": "cache/mmbright",
}
# MMBRIGHT_OUTPUTS stays unset: it would win over a shared server's MMBRIGHT_DATA_ROOT, whose
# default outputs folder the server tests check; XDG_DATA_HOME already moves the user's one.


def real_home() -> Path:
    """The user's home folder from the password database, whatever ``HOME`` says."""
    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def watched(home: Path) -> tuple[Path, ...]:
    """The folders under ``home`` that the package writes to by default."""
    return (home / ".cache" / "mmbright", home / ".local" / "share" / "mmbright")


def redirect() -> Path:
    """Point ``HOME``, XDG and the package's locations at a new temporary home; return it."""
    for name in [n for n in os.environ if n.startswith("MMBRIGHT_")]:
        if not name.startswith("MMBRIGHT_FUZZ_"):
            del os.environ[name]
    home = Path(tempfile.mkdtemp(prefix="mmbright-test-home-"))
    os.environ["HOME"] = str(home)
    for name in _XDG:
        os.environ[name] = str(home / name.removeprefix("XDG_").removesuffix("_HOME").lower())
    xdg_root = {"data": os.environ["XDG_DATA_HOME"], "cache": os.environ["XDG_CACHE_HOME"]}
    for name, relative in _LOCATIONS.items():
        kind, _, rest = relative.partition("/")
        os.environ[name] = str(Path(xdg_root[kind]) / rest)
    return home

"""The suite runs in a temporary home: nothing a test writes lands in the user's folders."""

from __future__ import annotations

import os
from pathlib import Path

import isolation
import numpy as np
import pytest

from mmbright_core.notes import NotesStore
from mmbright_core.notes.database import default_path
from mmbright_core.retrieval.cache import default_cache_dir
from mmbright_core.ui.running import default_output_folder


def test_every_location_the_package_writes_to_is_inside_the_test_home(test_home: Path):
    assert Path.home() == test_home != isolation.real_home()
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        assert Path(os.environ[name]).is_relative_to(test_home)
    for path in (default_path(), default_cache_dir(), Path(default_output_folder())):
        assert path.is_relative_to(test_home), path


def test_undoing_a_monkeypatch_keeps_the_test_home(test_home: Path):
    # The ``monkeypatch`` fixture is a MonkeyPatch like this one: its undo() restores what the
    # test changed and nothing else, because no MonkeyPatch holds the suite's redirection.
    patch = pytest.MonkeyPatch()
    patch.setenv("MMBRIGHT_NOTES", "/nowhere/notes.sqlite3")
    patch.delenv("MMBRIGHT_CACHE")
    patch.undo()
    assert default_path().is_relative_to(test_home)
    assert default_cache_dir().is_relative_to(test_home)


def test_writes_through_the_default_locations_leave_the_real_home_untouched(
    test_home: Path, real_home_before
):
    home, before = real_home_before
    with NotesStore() as store:
        store.set_note(("demo", 2, "paper", "biology", "q-isolation"), "written by the suite")
    cache = default_cache_dir() / "isolation"
    cache.mkdir(parents=True, exist_ok=True)
    np.save(cache / "probe.npy", np.zeros(3))
    assert default_path().is_file() and default_path().is_relative_to(test_home)
    assert isolation.snapshot(home) == before

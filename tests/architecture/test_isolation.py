"""The suite runs in a temporary home: nothing a test writes lands in the user's folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import isolation
import numpy as np
import pytest
import write_audit

from mmbright_core.notes import NotesStore
from mmbright_core.notes.database import default_path
from mmbright_core.retrieval.cache.store import default_cache_dir
from mmbright_core.ui.run.running import default_output_folder


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
    test_home: Path, real_home_writes: Path
):
    with NotesStore() as store:
        store.set_note(("demo", 2, "paper", "biology", "q-isolation"), "written by the suite")
    cache = default_cache_dir() / "isolation"
    cache.mkdir(parents=True, exist_ok=True)
    np.save(cache / "probe.npy", np.zeros(3))
    assert default_path().is_file() and default_path().is_relative_to(test_home)
    assert write_audit.recorded(real_home_writes) == []


def _write_into(folder: Path, env: dict[str, str]) -> None:
    script = (
        "import pathlib, sqlite3, sys\n"
        "folder = pathlib.Path(sys.argv[1])\n"
        "(folder / 'notes').mkdir(parents=True)\n"
        "(folder / 'notes' / 'a.txt').write_text('x')\n"
        "sqlite3.connect(folder / 'notes.sqlite3').close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(folder)], env=env, check=True)


def test_the_suites_own_writes_are_caught_in_process_and_in_its_subprocesses(tmp_path: Path):
    watched, log = tmp_path / "home" / ".cache" / "mmbright", tmp_path / "writes.log"
    env = {**os.environ, write_audit.WATCHED_ENV: str(watched), write_audit.LOG_ENV: str(log)}
    _write_into(watched / "child", env)  # a child started by the suite: its sitecustomize
    events = {tuple(line.split(" ", 2)[1:]) for line in write_audit.recorded(log)}
    child = watched / "child"
    assert {
        ("os.mkdir", str(child / "notes")),
        ("open", str(child / "notes" / "a.txt")),
        ("sqlite3.connect", str(child / "notes.sqlite3")),
    } <= events
    hook = write_audit._Hook([str(watched)], str(log))  # this process, without installing it
    hook("open", (str(watched / "here.npy"), "wb", 0))
    hook("open", (str(watched / "read.npy"), "rb", 0))
    hook("os.rename", (str(tmp_path / "elsewhere"), str(watched / "moved")))
    mine = [line.split(" ", 2)[2] for line in write_audit.recorded(log)][-2:]
    assert mine == [str(watched / "here.npy"), str(watched / "moved")]


def test_another_processs_writes_into_the_real_folders_are_not_the_suites(tmp_path: Path):
    # The user's own dashboard, started outside the suite, writes while the suite runs.
    watched, log = tmp_path / "home" / ".local" / "share" / "mmbright", tmp_path / "writes.log"
    outside = {
        k: v
        for k, v in os.environ.items()
        if k not in (write_audit.WATCHED_ENV, write_audit.LOG_ENV, "PYTHONPATH")
    }
    write_audit._Hook([str(watched)], str(log))  # what the suite watches: nothing it wrote
    _write_into(watched / "user", outside)
    assert (watched / "user" / "notes" / "a.txt").is_file()
    assert write_audit.recorded(log) == []

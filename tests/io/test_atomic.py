import os
from pathlib import Path

import pytest
from not_files import KINDS, assert_untouched, not_files, refusal

from mmbright_core.errors import InputError
from mmbright_core.io import atomic
from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text


def test_creates_parents_and_writes(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.txt"
    assert atomic_write_text(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    assert os.listdir(target.parent) == ["out.txt"]


def test_replaces_existing_file_with_default_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_failure_leaves_old_content_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_an_unsynced_write_is_as_atomic_and_makes_no_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    target = tmp_path / "cache" / "entry.json"
    atomic_write_text(target, "first\n")
    assert len(synced) == 2  # the file, then its folder
    synced.clear()
    atomic_write_text(target, "second\n", sync=False)
    assert synced == [] and target.read_text() == "second\n"
    assert os.listdir(target.parent) == ["entry.json"]  # no temporary file left


def test_a_link_a_fifo_or_a_device_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    made = not_files(tmp_path)
    for name, path in made.items():
        with pytest.raises(InputError) as caught:
            atomic_write_text(path, "new\n")
        assert str(caught.value) == refusal(path, KINDS[name][1])
    assert_untouched(made)

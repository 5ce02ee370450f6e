"""A write that fails (a full disk, a read-only file system, no permission) is one line.

Each case runs the real ``mmbright run`` against a real fault, made without privileges in a
user namespace (``unshare``): a tmpfs filled to the last byte (ENOSPC), a tmpfs mounted
read-only (EROFS), a folder the process may not write (EACCES: in a user namespace of its
own, the process is not the owner of the folder in the namespace's eyes, so no capability
overrides its ``r-x`` mode). The line names the file being written and what to do; no
temporary file is left behind.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from locations import ROOT

from mmbright_core.errors import WriteError
from mmbright_core.io.atomic import atomic_write_text

SUBDIR = "run_t2t_bm25"
# The first file a run writes: its claim beside the folder (io/claims.py), which a full disk
# still takes (an empty file), then the folder's config.json.
CLAIM, CONFIG = f".{SUBDIR}.lock", f"{SUBDIR}/config.json"
_FAULTS = {
    "full": (
        "mount -t tmpfs -o size=64k tmpfs {mnt}"
        " && (head -c 1M /dev/zero > {mnt}/fill 2>/dev/null; true)",  # filled to the last byte
        "no space left on the device (ENOSPC). Free space on that disk",
        CONFIG,
    ),
    "read-only": (
        "mount -t tmpfs -o ro tmpfs {mnt}",
        "the file system is read-only (EROFS). Mount it writable",
        CLAIM,
    ),
}


def _unshare(*flags: str) -> list[str]:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) to make a real full or read-only disk")
    probe = subprocess.run(["unshare", *flags, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are not permitted here: {probe.stderr.decode().strip()}")
    return ["unshare", *flags]


def _run_command(fixture_dir: Path, out: Path, cache: Path) -> str:
    command = [sys.executable, "-m", "mmbright_core", "run", "--source", str(fixture_dir)]
    command += ["--task", "1", "--retriever", "bm25", "--out", str(out)]
    env = f"env PYTHONPATH={shlex.quote(str(ROOT))} MMBRIGHT_CACHE={shlex.quote(str(cache))}"
    return f"{env} {shlex.join(command)}"


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("mmbright run: error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("fault", _FAULTS)
def test_a_full_or_read_only_disk_is_one_line_naming_the_file(
    fault: str, fixture_dir: Path, tmp_path: Path
):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mount, reason, first = _FAULTS[fault]
    run = _run_command(fixture_dir, mnt / "out", tmp_path / "cache")
    # The disk only exists inside the namespace: look for temporary files there, before exit.
    script = f"{mount.format(mnt=shlex.quote(str(mnt)))} && {{ {run}; rc=$?; "
    script += f"find {shlex.quote(str(mnt))} -name '*.tmp'; exit $rc; }}"
    result = subprocess.run(
        [*_unshare("--user", "--map-root-user", "--mount"), "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = _one_line(result)
    target = mnt / "out" / first  # the first file a run writes
    assert f"error: {target}: cannot write the file: {reason}" in line
    assert "or write elsewhere (mmbright run --out, MMBRIGHT_CACHE for the caches)." in line
    assert result.stdout == ""  # no temporary file left on the disk


def test_a_folder_without_write_permission_is_one_line(fixture_dir: Path, tmp_path: Path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    run = _run_command(fixture_dir, locked / "out", tmp_path / "cache")
    result = subprocess.run(
        [*_unshare("--user"), "sh", "-c", run], capture_output=True, text=True, timeout=300
    )
    line = _one_line(result)
    target = locked / "out" / CLAIM
    assert f"error: {target}: cannot write the file: permission denied (EACCES). " in line
    assert os.listdir(locked) == []


def test_a_write_error_is_an_os_error_naming_the_file(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(WriteError) as caught:
        atomic_write_text(blocker / "out.json", "{}")
    assert isinstance(caught.value, OSError) and caught.value.errno == errno.EEXIST
    assert str(caught.value).startswith(f"{blocker / 'out.json'}: cannot write the file: ")
    assert caught.value.path == str(blocker / "out.json")

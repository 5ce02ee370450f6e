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
from corner_embedder import SPEC, demo_run
from locations import ROOT, SUPPORT

from mmbright_core.errors import WriteError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.official import read_outputs

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


def _on_faulty_disk(
    fault: str, mnt: Path, command: str, look: str
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with the disk of ``fault`` mounted at ``mnt``, then ``look`` at it.

    The disk only exists inside the namespace: what is left on it is looked at there, before
    the namespace ends; the command's exit status is the result's.
    """
    script = f"{_FAULTS[fault][0].format(mnt=shlex.quote(str(mnt)))} && {{ {command}; rc=$?; "
    script += f"{look}; exit $rc; }}"
    return subprocess.run(
        [*_unshare("--user", "--map-root-user", "--mount"), "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_line(result: subprocess.CompletedProcess[str], command: str = "run") -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"mmbright {command}: error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("fault", _FAULTS)
def test_a_full_or_read_only_disk_is_one_line_naming_the_file(
    fault: str, fixture_dir: Path, tmp_path: Path
):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    _, reason, first = _FAULTS[fault]
    run = _run_command(fixture_dir, mnt / "out", tmp_path / "cache")
    result = _on_faulty_disk(fault, mnt, run, f"find {shlex.quote(str(mnt))} -name '*.tmp'")
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


def test_an_explain_png_on_a_full_disk_is_one_line_and_leaves_no_part_of_it(tmp_path: Path):
    run = demo_run(tmp_path / "made")
    doc = next(iter(read_outputs(run).runs["biology"]["biology_1"]))
    mnt = tmp_path / "disk"
    mnt.mkdir()
    out = mnt / "heat.png"
    command = [sys.executable, "-m", "mmbright_core", "explain", "--source", "demo", "--task", "2",
               "--run", str(run), "--query", "biology_1", "--doc", doc, "--allow-import", SPEC,
               "--cache-dir", str(tmp_path / "cache"), "--regions", "--grid", "2",
               "--format", "png", "--out", str(out)]  # fmt: skip
    env = f"env PYTHONPATH={shlex.quote(f'{ROOT}:{SUPPORT}')} HF_HUB_OFFLINE=1"
    explain = f"{env} {shlex.join(command)}"
    result = _on_faulty_disk("full", mnt, explain, f"ls -A {shlex.quote(str(mnt))}")
    line = _one_line(result, "explain")
    assert f"error: {out}: cannot write the file: {_FAULTS['full'][1]}" in line
    assert result.stdout == "fill\n"  # neither a truncated heat.png nor a temporary file

"""Coverage-guided fuzzing (atheris) of the readers finds nothing but InputError."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from locations import IO_SAMPLES, ROOT

SCRIPT = ROOT / "benchmarks" / "fuzz_readers.py"
SEEDS = IO_SAMPLES


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_atheris_finds_no_crash(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    shutil.copytree(SEEDS, corpus)  # libFuzzer writes its new inputs into the corpus
    command = [sys.executable, str(SCRIPT), str(corpus), "-runs=20000"]
    command += [f"-artifact_prefix={tmp_path}/", "-max_total_time=120"]
    # libFuzzer's default 2 GB RSS limit counts memory that is freed but kept: Pillow may
    # allocate up to its pixel limit (89 Mpixel, ~270 MB) for a declared image before the
    # data runs out, and Arrow's default pool keeps what it frees. The system allocator
    # returns it, and the limit leaves room for one such image at a time.
    command += ["-rss_limit_mb=4096"]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "ARROW_DEFAULT_MEMORY_POOL": "system"},
        capture_output=True,
        text=True,
        timeout=280,
    )
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert done.returncode == 0 and not crashes, (crashes, done.stderr[-3000:])
    assert "Done" in done.stderr

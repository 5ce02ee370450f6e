"""Hostile inputs that used to exhaust memory or block: devices, FIFOs, sparse files,
gzip and parquet bombs, ids of 100 MiB. Each is refused with one short line, quickly,
while the reader's memory stays bounded (measured on the command line under a cap)."""

from __future__ import annotations

import gzip
import io
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from locations import IO_SAMPLES

from mmbright_core.errors import InputError, UnknownNameError, show
from mmbright_core.io import read_qrels, read_run
from mmbright_core.io.reading import DEFAULT_MAX_INPUT_BYTES, MAX_ID_CHARS, max_input_bytes

QRELS = str(IO_SAMPLES / "qrels.trec")
CAP = int(1.5 * 2**30)  # address space of the command under test
PEAK = 400 * 2**20  # its resident memory must stay under this (an import alone takes ~150 MB)
BIG = 100 * 2**20


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


# The child reports its own peak (VmHWM): ru_maxrss from wait4 also counts the forked
# parent's memory, which in a long test session says nothing about the command.
_WRAPPER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM"))
    with open(out, "w") as f:
        f.write(kib)
atexit.register(peak)
sys.argv[0] = "mmbright"
runpy.run_module("mmbright_core", run_name="__main__")
"""


def _eval(run: str, tmp_path: Path, *, stdin: int | None = None, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """Run ``mmbright eval --run RUN`` under the memory cap: (status, stderr, peak RSS bytes)."""
    err, hwm = tmp_path / "stderr.txt", tmp_path / "peak.txt"
    command = [sys.executable, "-c", _WRAPPER, str(hwm), "eval", "--qrels", QRELS, "--run", run]
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=_cap,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        )
        try:
            status = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"mmbright eval --run {run} still running after 60 s")
    return status, err.read_text(), int(hwm.read_text()) * 1024


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[:2000]
    return lines[0]


pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="measures memory through /proc (Linux)"
)


def test_device_is_refused_before_it_is_read(tmp_path: Path) -> None:
    status, stderr, peak = _eval("/dev/zero", tmp_path)
    line = _one_line(stderr)
    assert status == 2 and peak < PEAK
    assert "/dev/zero: not a regular file" in line and "found a character device" in line


@pytest.mark.timeout(60)
def test_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "run.trec"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    status, stderr, _ = _eval(str(fifo), tmp_path)
    assert status == 2 and "found a named pipe (FIFO)" in _one_line(stderr)
    with pytest.raises(InputError, match="not a regular file"):
        read_run(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        read_qrels(str(fifo))


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"not a regular file; expected a regular file; found a folder"
    ):
        read_run(tmp_path)


def test_sparse_file_is_refused_at_its_first_chunk(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.trec"
    with sparse.open("wb") as handle:
        handle.truncate(2**30)  # 1 GiB of zeros, taking no disk
    status, stderr, peak = _eval(str(sparse), tmp_path)
    line = _one_line(stderr)
    assert status == 2 and peak < PEAK
    assert f"{sparse}:1: the content is not UTF-8 text" in line and "offset 0 (binary" in line


def test_endless_stream_stops_at_the_limit(tmp_path: Path) -> None:
    # A pipe of valid-looking lines never ends: the limit stops it, naming source and limit.
    yes = subprocess.Popen(["yes", "q1 Q0 d1 1 1.0 t"], stdout=subprocess.PIPE)
    try:
        limit = {"MMBRIGHT_MAX_INPUT_BYTES": str(50 * 2**20)}
        status, stderr, peak = _eval("-", tmp_path, stdin=yes.stdout.fileno(), env=limit)  # type: ignore[union-attr]
    finally:
        yes.kill()
        yes.wait()
    line = _one_line(stderr)
    assert status == 2 and peak < PEAK
    assert "<stdin>: the input is larger than the input size limit" in line
    assert "at most 50 MiB (52,428,800 bytes)" in line and "MMBRIGHT_MAX_INPUT_BYTES" in line


def _gzip_bomb(path: Path, size: int) -> Path:
    member = gzip.compress(b"q1 Q0 d1 1 1.0 t" + b" " * (64 * 2**20 - 16), mtime=0)
    path.write_bytes(member * (size // (64 * 2**20)))  # gzip members concatenated
    return path


def test_gzip_bomb_is_counted_as_it_is_decompressed(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.trec.gz", 2**30)  # 1 GiB from about 1 MB
    assert bomb.stat().st_size < 2**21
    limit = {"MMBRIGHT_MAX_INPUT_BYTES": str(100 * 2**20)}
    status, stderr, peak = _eval(str(bomb), tmp_path, env=limit)
    line = _one_line(stderr)
    assert status == 2 and peak < PEAK
    assert f"{bomb}: the input is larger than the input size limit once decompressed" in line
    with pytest.raises(InputError, match="once decompressed; expected at most 1 MiB"):
        read_run(bomb, max_bytes=2**20)


def test_input_under_the_limit_but_over_the_memory_cap_is_one_line(tmp_path: Path) -> None:
    # 2 GiB decompressed is under the default 4 GiB limit but over the 1.5 GiB cap: the
    # reader runs out of memory, and the command still answers with one line.
    bomb = _gzip_bomb(tmp_path / "big.trec.gz", 2**31)
    status, stderr, _ = _eval(str(bomb), tmp_path)
    line = _one_line(stderr)
    assert status == 2 and "out of memory" in line and "MMBRIGHT_MAX_INPUT_BYTES" in line


def test_limit_from_argument_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert max_input_bytes() == DEFAULT_MAX_INPUT_BYTES == 4 * 2**30
    monkeypatch.setenv("MMBRIGHT_MAX_INPUT_BYTES", "1000")
    assert max_input_bytes() == 1000 and max_input_bytes(5) == 5
    with pytest.raises(InputError, match=r"^<bytes>: the input is larger .* 1,000 bytes"):
        read_run(b"q1 Q0 d1 1 1.0 t\n" * 100)
    monkeypatch.setenv("MMBRIGHT_MAX_INPUT_BYTES", "lots")
    with pytest.raises(InputError, match=r"^MMBRIGHT_MAX_INPUT_BYTES: bad input size limit"):
        read_run(b"q1 Q0 d1 1 1.0 t\n")


def _parquet(query_ids: list[str], doc_ids: list[str]) -> bytes:
    table = pa.table({"query_id": query_ids, "doc_id": doc_ids, "score": [1.0] * len(query_ids)})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


@pytest.mark.parametrize("column", ["query_id", "doc_id"])
def test_parquet_with_a_100_mib_id_is_refused_quickly(column: str) -> None:
    huge = "a" * BIG
    ids = {"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"]}
    ids[column] = [ids[column][0], huge]
    data = _parquet(ids["query_id"], ids["doc_id"])
    assert len(data) < 100_000  # compressible: the file is tiny
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        read_run(data)
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert len(message) < 1000, message[:2000]
    label = column.replace("_", " ")
    assert message.startswith(f"<bytes>: row 2: {label} too long; expected ids of at most 1,024")
    assert "(104,857,600 characters)" in message


def test_parquet_expanding_past_the_limit_once_decoded() -> None:
    data = _parquet([f"q{i}" for i in range(20_000)], [f"d{i}" for i in range(20_000)])
    with pytest.raises(InputError, match="larger than the input size limit once decoded"):
        read_run(data, max_bytes=100_000)


@pytest.mark.parametrize("where", ["query", "doc"])
def test_long_ids_in_text_runs_and_qrels(where: str) -> None:
    long = "x" * (MAX_ID_CHARS + 1)
    query, doc = (long, "d1") if where == "query" else ("q1", long)
    with pytest.raises(InputError, match=rf"^<text>:2: {where} id too long") as caught:
        read_run(f"q0 Q0 d0 1 1.0 t\n{query} Q0 {doc} 1 1.0 t\n")
    assert len(str(caught.value)) < 1000
    with pytest.raises(InputError, match=rf"^<text>:1: {where} id too long"):
        read_qrels(f"{query} 0 {doc} 1\n")
    with pytest.raises(InputError, match=rf"{where} id too long"):
        read_run(f'{{"{query}": {{"{doc}": 1.0}}}}')
    ok = "y" * MAX_ID_CHARS  # the limit itself is taken
    assert read_run(f"q1 Q0 {ok} 1 1.0 t\n") == {"q1": {ok: 1.0}}


def test_messages_cut_what_they_quote() -> None:
    value = "a" * BIG
    assert show(value) == f"{'a' * 60!r}… (104,857,600 characters)"
    err = InputError("bad value", source="x" * 5000, expected="e", found=value, hint="h" * 900)
    assert len(str(err)) < 1500 and "(104,857,600 characters)" in str(err)
    assert "(5,000 characters)" in str(err) and err.found is not None and len(err.found) < 400
    unknown = UnknownNameError("run format", value, ["json", "parquet", "trec"])
    assert len(str(unknown)) < 1000 and "(104,857,600 characters)" in str(unknown)

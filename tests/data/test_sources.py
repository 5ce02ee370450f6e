from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import huggingface_hub
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixture_dataset import AQ2, SCHEMAS, encode
from locations import ROOT

from mmbright_core.data import image_store, sources
from mmbright_core.data.layout import DOMAINS, PINNED_REVISION
from mmbright_core.data.sources import (
    FolderSource,
    HubSource,
    SourceSpec,
    open_source,
    parse_source_spec,
)
from mmbright_core.errors import InputError


def _copy(fixture_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fixture_dir, tmp_path / "copy"))


class FakeHub:
    """Stands in for ``hf_hub_download``: serves the fixture and records each request."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[tuple[str, str, str | None, str | None]] = []

    def __call__(self, repo_id: str, filename: str, *, repo_type=None, revision=None) -> str:
        self.calls.append((repo_id, filename, repo_type, revision))
        path = self.root / filename
        if not path.is_file():
            raise huggingface_hub.utils.EntryNotFoundError(f"{filename} not found")
        return str(path)


@pytest.fixture
def hub(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    fake = FakeHub(fixture_dir)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    return fake


def test_hub_text_tasks_fetch_only_queries_and_documents(hub: FakeHub) -> None:
    source = open_source("hf")
    assert source.name == f"hf@{PINNED_REVISION}" and source.domains() == DOMAINS
    source.task(1, "academia")
    source.task(2, "academia")
    source.task(1, "academia")  # cached: no new request
    assert hub.calls == [
        ("mm-bright/MM-BRIGHT", "examples/academia.parquet", "dataset", PINNED_REVISION),
        ("mm-bright/MM-BRIGHT", "documents/academia.parquet", "dataset", PINNED_REVISION),
        ("mm-bright/MM-BRIGHT", "examples_multimodal/academia.parquet", "dataset", PINNED_REVISION),
    ]


def test_hub_image_task_and_revision_on_request(hub: FakeHub) -> None:
    source = open_source("hf@abc123")
    assert isinstance(source, HubSource) and source.revision == "abc123"
    assert open_source("hf", revision="abc123").name == "hf@abc123"
    source.judgments(3, "biology")  # Task 3 judgments need no corpus image
    assert [c[1] for c in hub.calls] == ["examples_multimodal/biology.parquet"]
    source.task(3, "biology")
    assert [c[1] for c in hub.calls][1:] == ["document_images/biology.parquet"]
    assert {c[3] for c in hub.calls} == {"abc123"}


def test_hub_errors_name_the_file_and_the_fix(hub: FakeHub) -> None:
    with pytest.raises(InputError, match=r"cannot fetch examples/physics.parquet.*local folder"):
        open_source("hf").task(1, "physics")


def test_spec_errors() -> None:
    with pytest.raises(InputError, match="two different revisions"):
        open_source("hf@a", revision="b")
    with pytest.raises(InputError, match="hub source only"):
        open_source("demo", revision="b")
    with pytest.raises(InputError, match=r"no such folder: '/no/such/folder'; expected 'demo'"):
        open_source("/no/such/folder")


@pytest.mark.parametrize(
    ("spec", "revision", "parsed"),
    [
        ("demo", None, SourceSpec("demo")),
        ("hf", None, SourceSpec("hf", revision=PINNED_REVISION)),
        ("hf", "abc123", SourceSpec("hf", revision="abc123")),
        ("hf@abc123", None, SourceSpec("hf", revision="abc123")),
        ("hf@abc123", "abc123", SourceSpec("hf", revision="abc123")),
        ("hf@", None, SourceSpec("hf", revision=PINNED_REVISION)),  # an empty revision
        ("hf@", "abc123", SourceSpec("hf", revision="abc123")),
        ("hf@a@b", None, SourceSpec("hf", revision="a@b")),  # the first "@" splits
        ("/data/mm-bright", None, SourceSpec("folder", folder="/data/mm-bright")),
        ("~/mm-bright", None, SourceSpec("folder", folder="~/mm-bright")),  # as written
        ("./hf@x", None, SourceSpec("folder", folder="./hf@x")),  # a folder named hf@x
        ("./demo", None, SourceSpec("folder", folder="./demo")),
        ("HF", None, SourceSpec("folder", folder="HF")),  # the names are exact
        ("hfx", None, SourceSpec("folder", folder="hfx")),
        ("x@y", None, SourceSpec("folder", folder="x@y")),
    ],
)
def test_a_spec_reads_as_the_demo_the_hub_or_a_folder(
    spec: str, revision: str | None, parsed: SourceSpec
) -> None:
    assert parse_source_spec(spec, revision) == parsed


def test_the_parser_refuses_what_open_source_refuses() -> None:
    with pytest.raises(InputError, match=r"two different revisions.*'hf@a' and revision='b'"):
        parse_source_spec("hf@a", "b")
    for spec in ("demo", "/data/mm-bright", "./hf@x"):
        with pytest.raises(InputError, match="hub source only"):
            parse_source_spec(spec, "b")


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    with pytest.raises(InputError, match=r"not a folder: '.*data.parquet'.*found a file"):
        open_source(str(tmp_path / "data.parquet"))


def test_cli_names_a_missing_and_an_unreadable_folder(tmp_path: Path) -> None:
    # The folder is made unreadable for real; as root, the CLI runs as user nobody, for whom
    # the permission holds (root reads any folder).
    shared = Path(tempfile.mkdtemp())
    try:
        shared.chmod(0o755)
        locked = shared / "locked"
        locked.mkdir(mode=0o000)
        run = shared / "run.trec"
        run.write_text("a1 Q0 academia/a1b2c3d4_101.txt 1 1.0 t\n")
        run.chmod(0o644)
        for folder, said in (
            (shared / "absent", f"no such folder: '{shared / 'absent'}'"),
            (locked, f"cannot read the folder '{locked}' (PermissionError"),
        ):
            argv = ["eval", "--source", str(folder), "--task", "1", "--run", str(run)]
            done = _as_unprivileged([sys.executable, "-m", "mmbright_core", *argv])
            assert done.returncode == 2, done.stderr
            assert said in done.stderr and "Traceback" not in done.stderr
            assert len(done.stderr.strip().splitlines()) == 1
    finally:
        (shared / "locked").chmod(0o700)
        shutil.rmtree(shared)


def _as_unprivileged(argv: list[str]) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("needs setpriv to drop root's right to read any folder")
        drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        probe = [*drop, sys.executable, "-c", "import mmbright_core"]
        if subprocess.run(probe, capture_output=True, env=env, timeout=120).returncode:
            pytest.skip("user nobody cannot read this checkout (it lies in a private folder)")
        argv = [*drop, *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def test_demo_is_a_folder_source(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sources, "_demo_root", lambda: tmp_path / "absent")
    with pytest.raises(InputError, match="demo dataset is missing"):
        open_source("demo")
    monkeypatch.setattr(sources, "_demo_root", lambda: fixture_dir)
    demo = open_source("demo")
    assert demo.name == "demo" and demo.domains() == ("academia", "biology")


def test_empty_folder_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no MM-BRIGHT parquet files.*\{config\}/\{domain\}"):
        open_source(str(tmp_path))


def test_missing_file_names_the_path(fixture_dir: Path, tmp_path: Path) -> None:
    root = _copy(fixture_dir, tmp_path)
    (root / "document_images" / "biology.parquet").unlink()
    source = open_source(str(root))
    assert source.task(1, "biology").qrels  # text tasks do not need it
    with pytest.raises(InputError, match=r"document_images/biology.parquet: missing file"):
        source.task(3, "biology")


def test_missing_column_names_file_expected_and_found(fixture_dir: Path, tmp_path: Path) -> None:
    root = _copy(fixture_dir, tmp_path)
    path = root / "examples" / "biology.parquet"
    pq.write_table(pq.read_table(path).drop_columns(["gold_ids"]), path)
    with pytest.raises(InputError) as err:
        open_source(str(root)).task(1, "biology")
    message = str(err.value)
    assert "examples/biology.parquet" in message and "lacks column(s) gold_ids" in message
    assert "found id, query, negative_ids" in message


def test_text_tasks_never_open_image_configs(fixture_dir: Path, tmp_path: Path) -> None:
    root = _copy(fixture_dir, tmp_path)
    for config in ("examples_images", "document_images"):
        (root / config / "academia.parquet").write_bytes(b"not parquet at all")
    source = open_source(str(root))
    assert len(source.task(1, "academia").corpus) == 7
    assert len(source.task(2, "academia").queries) == 3
    with pytest.raises(InputError, match="not a readable parquet file"):
        source.task(3, "academia")


def test_image_bytes_are_served_lazily_across_row_groups(fixture_dir: Path) -> None:
    source = FolderSource(fixture_dir)
    # AQ2 is stored with backslashes, in the second row group (3 rows per group).
    assert source.query_image_bytes("academia", AQ2) == encode((30, 16), "blue", "JPEG")
    assert source.query_image_bytes("academia", AQ2.replace("/", "\\")) is not None
    assert source.query_image_bytes("academia", "academia/none.png") is None
    img = "biology/biology_abcdef12_0002/image_1.jpg"
    assert source.document_image_bytes("biology", img) == encode((36, 36), "orange", "JPEG")
    assert source.image_paths("examples_images", "biology") == (
        "biology/biology_fec40b40_0000/image_1.png",
        "biology/biology_abcdef12_0000/image_1.jpg",
    )


def test_decodability_is_checked_once_per_path(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = image_store.image_problem

    def counting(data: bytes | None, path: str) -> str | None:
        calls.append(path)
        return real(data, path)

    monkeypatch.setattr(image_store, "image_problem", counting)
    source = FolderSource(fixture_dir)
    source.task(3, "academia")
    source.task(4, "academia")
    source.task(4, "academia", "legacy")
    assert len(calls) == len(set(calls)) == 8


_MEMORY_PROBE = """
import resource, sys
from mmbright_core.data.sources import open_source
source = open_source(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
data = source.task(1, "big")
data = source.task(2, "big")
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024, len(data.queries))
"""


@pytest.mark.slow
def test_text_tasks_stay_small_beside_200_mb_of_images(tmp_path: Path) -> None:
    root = tmp_path / "big"
    (root / "documents").mkdir(parents=True)
    pq.write_table(
        pa.table({"id": ["big/0a0a0a0a_1.txt"], "content": ["text"]}, schema=SCHEMAS["documents"]),
        root / "documents" / "big.parquet",
    )
    row = {
        "id": "q",
        "query": "text",
        "gold_ids": ["big/0a0a0a0a_1.txt"],
        "negative_ids": [],
        "image_paths": ["big/big_0a0a0a0a_0000/image_0.png"],
        "gold_answers": "",
    }
    judged = {"positive_images": [], "negative_images": []}
    for config, extra in (("examples", {}), ("examples_multimodal", judged)):
        (root / config).mkdir()
        table = pa.Table.from_pylist([{**row, **extra}], schema=SCHEMAS[config])
        pq.write_table(table, root / config / "big.parquet")
    rng = np.random.default_rng(0)
    for config in ("examples_images", "document_images"):
        (root / config).mkdir()
        with pq.ParquetWriter(root / config / "big.parquet", SCHEMAS[config]) as writer:
            for i in range(10):  # 10 incompressible MB per row group, written one at a time
                path = f"big/big_0a0a0a0a_{i:04d}/image_0.png"
                blob = encode((8, 8), "red") + rng.bytes(10 * 2**20)
                writer.write_table(pa.table({"path": [path], "bytes": [blob]}, SCHEMAS[config]))
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    assert size > 200 * 10**6
    probe = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_MEMORY_PROBE), str(root)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    growth_mb, queries = map(int, probe.stdout.split())
    assert queries == 1
    assert growth_mb < 30, f"loading tasks 1-2 grew RSS by {growth_mb} MB"


def test_passages_reads_only_the_asked_rows(tmp_path: Path) -> None:
    ids = [f"physics/{n:08x}_{n}.txt" for n in range(50)]
    folder = tmp_path / "copy" / "documents"
    folder.mkdir(parents=True)
    table = pa.table({"id": ids, "content": [f"text {n}" if n % 7 else None for n in range(50)]})
    pq.write_table(table, folder / "physics.parquet", row_group_size=10)
    source = FolderSource(tmp_path / "copy")
    wanted = [ids[3], ids[14], ids[48], "physics/absent_1.txt"]
    assert source.passages("physics", wanted) == {
        ids[3]: "text 3",
        ids[14]: "",  # a null content reads as empty, as the corpus reader does
        ids[48]: "text 48",
    }
    assert source.passages("physics", []) == {}


def test_passages_match_the_task_corpus(fixture_dir: Path) -> None:
    source = FolderSource(fixture_dir)
    corpus = {doc.doc_id: doc.text for doc in source.task(1, "academia").corpus}
    picked = sorted(corpus)[::2]
    assert source.passages("academia", picked) == {d: corpus[d] for d in picked}


def test_passages_refuse_a_corrupt_file(tmp_path: Path) -> None:
    folder = tmp_path / "copy" / "documents"
    folder.mkdir(parents=True)
    (folder / "physics.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    with pytest.raises(InputError, match="not a readable parquet file"):
        FolderSource(tmp_path / "copy").passages("physics", ["physics/x_1.txt"])

"""One domain's corpus at a time: streamed reads and the bounded task cache of a source."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixture_dataset import SCHEMAS

from mmbright_core.data import records, sources
from mmbright_core.data.sources import FolderSource
from mmbright_core.data.task_inputs import read_passages
from mmbright_core.errors import InputError
from mmbright_core.types import TaskData


def _alive(refs: list[weakref.ref[TaskData]]) -> int:
    gc.collect()
    return sum(ref() is not None for ref in refs)


def test_a_source_holds_one_domains_corpus_at_a_time(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = FolderSource(fixture_dir)
    built: list[weakref.ref[TaskData]] = []
    held_at_build: list[int] = []
    real = sources.build_task

    def tracking(*args: object, **kwargs: object) -> TaskData:
        held_at_build.append(_alive(built))
        data = real(*args, **kwargs)  # type: ignore[arg-type]
        if kwargs.get("with_corpus"):
            built.append(weakref.ref(data))
        return data

    monkeypatch.setattr(sources, "build_task", tracking)
    for domain in ("academia", "biology", "academia"):
        assert source.task(1, domain).corpus
    # Each build started with no other corpus alive: the old domain goes before the new one.
    assert held_at_build == [0, 0, 0] and _alive(built) == 1


def test_tasks_of_one_domain_share_its_cache_slot(fixture_dir: Path) -> None:
    source = FolderSource(fixture_dir)
    first = source.task(1, "academia")
    assert source.task(2, "academia") is source.task(2, "academia")
    assert source.task(1, "academia") is first  # task 2 of the same domain evicted nothing
    source.task(1, "biology")
    assert source.task(1, "academia") is not first  # another domain did


def test_judgments_stay_for_every_domain(fixture_dir: Path) -> None:
    source = FolderSource(fixture_dir)
    light = {d: source.judgments(1, d) for d in source.domains()}
    for domain in source.domains():
        source.task(1, domain)
    # academia's corpus was evicted; its judgments were not (and cost no corpus read).
    assert source.judgments(1, "academia") is light["academia"]
    assert all(data.corpus == () for data in light.values())


def test_a_larger_bound_keeps_more_domains(fixture_dir: Path) -> None:
    source = FolderSource(fixture_dir)
    source.corpus_cache_domains = 2
    first = source.task(1, "academia")
    source.task(1, "biology")
    assert source.task(1, "academia") is first


def _documents(root: Path, rows: list[tuple[str, str | None]], row_group: int) -> None:
    (root / "documents").mkdir(parents=True)
    table = pa.table(
        {"id": [r[0] for r in rows], "content": [r[1] for r in rows]}, schema=SCHEMAS["documents"]
    )
    pq.write_table(table, root / "documents" / "big.parquet", row_group_size=row_group)


def test_passages_stream_in_batches_and_keep_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [(f"big/{i:08x}_{i}.txt", None if i % 7 == 0 else f"passage {i}") for i in range(50)]
    _documents(tmp_path, rows, row_group=8)
    source = FolderSource(tmp_path)
    monkeypatch.setattr(records, "BATCH_ROWS", 6)
    sizes = [b.num_rows for b in source.iter_batches("documents", "big", ("id",))]
    assert max(sizes) == 6 and sum(sizes) == 50
    ids, texts = read_passages(source, "big", text=True)
    assert ids == [r[0] for r in rows]
    assert texts == [r[1] or "" for r in rows]  # a null passage reads as empty
    assert read_passages(source, "big", text=False) == (ids, [])


def test_a_25_mb_passage_loads_whole(tmp_path: Path) -> None:
    # BM25 indexes it whole; encoders cap it (see test_scale_textcap).
    huge = "word " * (5 * 2**20)
    _documents(tmp_path, [("big/00000000_0.txt", huge), ("big/00000001_1.txt", "x")], 1)
    _, texts = read_passages(FolderSource(tmp_path), "big", text=True)
    assert len(texts[0]) == 25 * 2**20 and texts[1] == "x"


def test_a_corrupt_file_fails_on_its_first_batch(tmp_path: Path) -> None:
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "big.parquet").write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    with pytest.raises(InputError, match="not a readable parquet file"):
        list(FolderSource(tmp_path).iter_batches("documents", "big", ()))

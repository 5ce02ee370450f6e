"""One cache shard on disk: written, opened once checked, gathered by row, deleted when damaged."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mmbright_core.retrieval.cache.shards import (
    gather,
    open_shard,
    shard_name,
    shard_names,
    vectors_file,
    write_shard,
)

SETTINGS = {"model": "toy", "dtype": "float32"}


def _write(folder: Path, keys: list[str], first: float) -> str:
    vectors = np.arange(first, first + 2 * len(keys), dtype=np.float32).reshape(len(keys), 2)
    name = shard_name(keys)
    write_shard(folder, name, keys, vectors, SETTINGS)
    return name


def test_two_shards_gather_the_rows_asked_for_in_the_order_asked(tmp_path: Path):
    a, b = _write(tmp_path, ["k0", "k1"], 0.0), _write(tmp_path, ["k2", "k3", "k4"], 10.0)
    assert shard_names(tmp_path) == sorted([a, b])
    assert open_shard(tmp_path, a, np.dtype("float32"), None) == (["k0", "k1"], 2)
    shards = [vectors_file(tmp_path, a), vectors_file(tmp_path, b)]
    # Rows are numbered across the shards end to end: k0 k1 | k2 k3 k4.
    rows = gather(shards, [0, 2, 5], np.array([4, 0, 2, 0]))
    assert rows.dtype == np.float32
    assert rows.tolist() == [[14.0, 15.0], [0.0, 1.0], [10.0, 11.0], [0.0, 1.0]]


def test_a_truncated_shard_is_refused_and_its_three_files_deleted(tmp_path: Path):
    name = _write(tmp_path, ["k0", "k1"], 0.0)
    path = vectors_file(tmp_path, name)
    path.write_bytes(path.read_bytes()[:-4])
    assert open_shard(tmp_path, name, np.dtype("float32"), None) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_shard_of_another_width_than_the_folders_is_refused(tmp_path: Path):
    name = _write(tmp_path, ["k0"], 0.0)
    assert open_shard(tmp_path, name, np.dtype("float32"), 3) is None
    assert shard_names(tmp_path) == []

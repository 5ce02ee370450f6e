from __future__ import annotations

import io
import json
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from mmbright_core.cli import main
from mmbright_core.data.sources import FolderSource
from mmbright_core.data.stats import TaskStats, collect_stats, spec_table
from mmbright_core.io.qrels import read_qrels

# Counted by hand, per task and domain: queries, corpus, judgments, empty_qrels,
# query_images, corpus_images, undecodable, padded. A task's "total" row adds its domains up.
COUNTS = {
    1: {"academia": (4, 7, 5, 0, 0, 0, 0, 0), "biology": (2, 4, 2, 0, 0, 0, 0, 0)},
    2: {"academia": (3, 7, 4, 0, 7, 0, 0, 0), "biology": (2, 4, 2, 0, 2, 0, 0, 0)},
    3: {"academia": (3, 6, 6, 1, 7, 6, 2, 0), "biology": (2, 2, 2, 0, 2, 2, 0, 0)},
    4: {"academia": (3, 15, 7, 0, 7, 6, 2, 0), "biology": (2, 7, 4, 0, 2, 2, 0, 0)},
}
TOTALS = {task: [sum(c) for c in zip(*d.values(), strict=True)] for task, d in COUNTS.items()}
EXPECTED = [
    TaskStats(domain, task, *counts)
    for task, domains in COUNTS.items()
    for domain, counts in [*domains.items(), ("total", TOTALS[task])]
]


def test_collect_stats_counts_by_hand(fixture_dir: Path) -> None:
    assert collect_stats(FolderSource(fixture_dir)) == EXPECTED


def test_legacy_stats_and_domain_filter(fixture_dir: Path) -> None:
    rows = collect_stats(
        FolderSource(fixture_dir), tasks=[4], domains=["biology"], protocol="legacy"
    )
    # Legacy: only the 4 text-only pairs; 2 judgments (rel 1), the images orphaned.
    assert rows == [
        TaskStats("biology", 4, 2, 4, 2, 0, 2, 2, 0, 0),
        TaskStats("total", 4, 2, 4, 2, 0, 2, 2, 0, 0),
    ]


def test_spec_table_layout() -> None:
    assert spec_table(EXPECTED)[0] == {
        "domain": "academia",
        "T1 q": 4,
        "passages": 7,
        "T1 qrels": 5,
        "T2-4 q": 3,
        "T2 qrels": 4,
        "T3 images": 6,
        "T3 qrels": 6,
    }


def test_stats_cli_tsv_json_and_table(
    fixture_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--source", str(fixture_dir), "--task", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == [
        "domain", "task", "queries", "corpus", "judgments", "empty_qrels",
        "query_images", "corpus_images", "undecodable_images", "padded_images",
    ]  # fmt: skip
    assert lines[1:] == [
        "academia\t3\t3\t6\t6\t1\t7\t6\t2\t0",
        "biology\t3\t2\t2\t2\t0\t2\t2\t0\t0",
        "total\t3\t5\t8\t8\t1\t9\t8\t2\t0",
    ]
    assert main(["stats", "--source", str(fixture_dir), "--task", "1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[2] == {
        "domain": "total", "task": 1, "queries": 6, "corpus": 11, "judgments": 7,
        "empty_qrels": 0, "query_images": 0, "corpus_images": 0, "undecodable_images": 0,
        "padded_images": 0,
    }  # fmt: skip
    main(["stats", "--source", str(fixture_dir), "--task", "1", "2", "--format", "table"])
    table = capsys.readouterr().out.splitlines()
    assert table == [
        "domain\tT1 q\tpassages\tT1 qrels\tT2-4 q\tT2 qrels",
        "academia\t4\t7\t5\t3\t4",
        "biology\t2\t4\t2\t2\t2",
        "total\t6\t11\t7\t5\t6",
    ]


def _copy_of(fixture_dir: Path, folder: Path, configs: tuple[str, ...]) -> Path:
    for config in configs:
        shutil.copytree(fixture_dir / config, folder / config)
    return folder


def test_a_copy_made_for_some_tasks_is_counted_for_those_and_says_which_are_left_out(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task2 = _copy_of(fixture_dir, tmp_path / "t2", ("documents", "examples_multimodal"))
    assert main(["stats", "--source", str(task2), "--format", "json"]) == 0
    counted = capsys.readouterr()
    assert json.loads(counted.out) == [asdict(r) for r in EXPECTED if r.task == 2]
    assert counted.err.splitlines() == [
        f"mmbright stats: warning: task {task} left out: the copy has no {config}/academia"
        ".parquet (give --task to count only the tasks it holds)"
        for task, config in [(1, "examples"), (3, "document_images"), (4, "document_images")]
    ]
    # A task named is a task asked for: its missing file is the error, as before.
    assert main(["stats", "--source", str(task2), "--task", "1"]) == 2
    err = capsys.readouterr().err
    assert "missing file for config 'examples', domain 'academia'" in err
    assert "Copy examples/academia.parquet of the dataset into" in err
    # A copy holding no task at all: the first missing file, and no warning before it.
    bare = _copy_of(fixture_dir, tmp_path / "bare", ("documents",))
    assert main(["stats", "--source", str(bare)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mmbright stats: error: ") and "warning" not in err
    assert "missing file for config 'examples', domain 'academia'" in err


def test_qrels_cli_writes_trec(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t4.qrels"
    args = ["qrels", "--source", str(fixture_dir), "--task", "4", "--domain", "biology"]
    assert main([*args, "--out", str(out)]) == 0
    assert read_qrels(out) == {
        "biology/b1": {
            "biology/fec40b40_1635_0.txt|||__NO_IMAGE__": 1,
            "biology/fec40b40_1635_0.txt|||biology/biology_fec40b40_0001/image_1.png": 2,
        },
        "biology/b2": {
            "biology/abcdef12_77_0.txt|||__NO_IMAGE__": 1,
            "biology/abcdef12_77_0.txt|||biology/biology_abcdef12_0002/image_1.jpg": 2,
        },
    }
    assert main([*args, "--protocol", "legacy"]) == 0
    assert capsys.readouterr().out == (
        "biology/b1 0 biology/fec40b40_1635_0.txt|||__NO_IMAGE__ 1\n"
        "biology/b2 0 biology/abcdef12_77_0.txt|||__NO_IMAGE__ 1\n"
    )


def test_qrels_cli_reports_empty_queries_and_bad_input(
    fixture_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qrels", "--source", str(fixture_dir), "--task", "3", "--domain", "academia"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 6 and captured.out.startswith("academia/a1 0 academia/")
    assert captured.err == "1 queries have no judgment and are not in the qrels\n"
    assert main(["qrels", "--source", str(fixture_dir), "--task", "1", "--domain", "gis"]) == 2
    assert "unknown domain 'gis'" in capsys.readouterr().err


def test_a_domain_or_task_named_twice_is_counted_once(fixture_dir: Path) -> None:
    once = collect_stats(FolderSource(fixture_dir), tasks=[1], domains=["biology"])
    twice = collect_stats(FolderSource(fixture_dir), tasks=[1, 1], domains=["biology", "biology"])
    assert twice == once == [EXPECTED[1], TaskStats("total", 1, 2, 4, 2, 0, 0, 0, 0, 0)]


def _cut(fmt: str) -> bytes:
    # A noisy image compresses poorly, so half of its file is well past the headers.
    pixels = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()[: buffer.tell() // 2]


def test_truncated_corpus_images_are_kept_and_counted_apart(
    fixture_dir: Path, tmp_path: Path
) -> None:
    # The official loader decodes with LOAD_TRUNCATED_IMAGES (docs/protocol.md, Per-task protocol):
    # a truncated file is kept, padded, and counted in the corpus; the report names it "truncated,
    # padded".
    copy = Path(shutil.copytree(fixture_dir, tmp_path / "copy"))
    target = copy / "document_images" / "academia.parquet"
    table = pq.read_table(target)
    extra = pa.table(
        {
            "path": [
                "academia/academia_a1b2c3d4_0000/image_8.jpg",
                "academia/academia_a1b2c3d4_0000/image_9.png",
            ],
            "bytes": [_cut("JPEG"), _cut("PNG")],
        }
    ).cast(table.schema)
    pq.write_table(pa.concat_tables([table, extra]), target)
    rows = collect_stats(FolderSource(copy), tasks=[3], domains=["academia"])
    # 6 + 2 decodable images, the same 2 undecodable ones (SVG, corrupt), 2 of them padded.
    assert rows[0] == TaskStats("academia", 3, 3, 8, 6, 1, 7, 8, 2, 2)

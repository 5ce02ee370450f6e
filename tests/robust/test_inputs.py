"""Malformed inputs not covered elsewhere: each is refused with an InputError that says why.

docs/safety.md's "Bad input, catalogued" table lists every kind of bad input the readers and
loaders reject and names the test of each; the rows whose test lives here are below.
Three known defects of the dataset reader are pinned as strict expected failures: they pass
(and then fail here, as a reminder to drop the mark) once the reader refuses them.
"""

from __future__ import annotations

import gzip
import io
import shutil
import struct
import zlib
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.official import read_outputs, write_domain_outputs, write_summary
from mmbright_core.ui.common import workspace

A1 = "academia/a1b2c3d4_101.txt"
METRICS = {"NDCG@10": 0.5}


@pytest.fixture
def dataset(fixture_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fixture_dir, tmp_path / "data"))


def _rewrite(path: Path, column: str, values: list, kind: pa.DataType | None = None) -> None:
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    table = table.set_column(
        index, column, pa.array(values, kind or table.schema.field(index).type)
    )
    pq.write_table(table, path)


# --- official outputs folder -------------------------------------------------------------------


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    task_dir = tmp_path / "run_model"
    write_domain_outputs(task_dir, "academia", {"a1": {A1: 1.0}}, METRICS)
    write_summary(task_dir, "model", "text_text", {"academia": METRICS})
    return task_dir


def test_official_truncated_scores_json(outputs: Path) -> None:
    scores = outputs / "academia" / "scores.json"
    scores.write_bytes(scores.read_bytes()[:-5])
    with pytest.raises(InputError, match="invalid JSON at column") as caught:
        read_outputs(outputs)
    assert caught.value.source == str(scores) and caught.value.line is not None


def test_official_scores_json_with_nan(outputs: Path) -> None:
    (outputs / "academia" / "scores.json").write_text('{"a1": {"x": NaN}}')
    with pytest.raises(InputError, match=r'\$\["a1"\]\["x"\].*expected a finite'):
        read_outputs(outputs)


def test_official_summary_that_is_not_an_object(outputs: Path) -> None:
    (outputs / "summary.json").write_text("[1, 2]")
    with pytest.raises(InputError, match=r'summary.json.*expected an object with "model"'):
        read_outputs(outputs)


# --- dataset folder ----------------------------------------------------------------------------


def test_dataset_text_file_that_is_not_parquet(dataset: Path) -> None:
    (dataset / "documents" / "academia.parquet").write_bytes(b"id,content\nx,y\n")
    with pytest.raises(InputError, match=r"documents/academia.parquet: not a readable parquet"):
        open_source(str(dataset)).task(1, "academia")


def test_dataset_truncated_parquet(dataset: Path) -> None:
    path = dataset / "examples" / "academia.parquet"
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(InputError, match=r"examples/academia.parquet: not a readable parquet"):
        open_source(str(dataset)).task(1, "academia")


def test_dataset_list_column_holding_text(dataset: Path) -> None:
    path = dataset / "examples" / "academia.parquet"
    values = [str(v) for v in pq.read_table(path)["gold_ids"].to_pylist()]
    _rewrite(path, "gold_ids", values, pa.string())
    with pytest.raises(InputError, match=r"column 'gold_ids' holds a str; expected a list"):
        open_source(str(dataset)).task(1, "academia")


def test_dataset_image_judgment_without_a_path(dataset: Path) -> None:
    path = dataset / "examples_multimodal" / "academia.parquet"
    values = pq.read_table(path)["positive_images"].to_pylist()
    values[0] = [{"image_path": None, "source_passage_id": A1}]
    _rewrite(path, "positive_images", values)
    with pytest.raises(InputError, match="'positive_images' has an entry without an image path"):
        open_source(str(dataset)).task(3, "academia")


def test_dataset_repeated_query_id(dataset: Path) -> None:
    path = dataset / "examples" / "academia.parquet"
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), path)
    with pytest.raises(InputError, match="query id 'a1' repeats"):
        open_source(str(dataset)).task(1, "academia")


def test_dataset_string_that_is_not_utf8(dataset: Path) -> None:
    path = dataset / "documents" / "academia.parquet"
    table = pq.read_table(path)
    pq.write_table(table, path, compression="none", use_dictionary=False)
    data = path.read_bytes()
    assert b"Poster sizes" in data  # in the page (and its statistics): change them all
    path.write_bytes(data.replace(b"Poster sizes", b"\x80oster sizes"))
    with pytest.raises(InputError, match=r"documents/academia\.parquet"):
        open_source(str(dataset)).task(1, "academia")


def test_dataset_image_bytes_column_of_text(dataset: Path) -> None:
    path = dataset / "document_images" / "academia.parquet"
    _rewrite(path, "bytes", ["x"] * pq.read_metadata(path).num_rows, pa.string())
    with pytest.raises(InputError, match=r"document_images/academia\.parquet"):
        open_source(str(dataset)).task(3, "academia")


def test_dataset_null_ids(dataset: Path) -> None:
    path = dataset / "documents" / "academia.parquet"
    ids = pq.read_table(path)["id"].to_pylist()
    ids[0] = None
    _rewrite(path, "id", ids)
    with pytest.raises(InputError, match=r"documents/academia\.parquet"):
        open_source(str(dataset)).task(1, "academia")


# --- images ------------------------------------------------------------------------------------


def _png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


def test_image_decompression_bomb() -> None:
    # 900 million pixels declared in 45 bytes: refused before any pixel is allocated.
    with pytest.raises(ImageDecodeError, match=r"too large: .*exceeds limit"):
        decode_image(_png_header(30_000, 30_000), "gis/gis_0a0a0a0a_0001/image_1.png")
    # 144 million pixels: Pillow only warns, and decoding would cost gigabytes: refused too.
    with pytest.raises(ImageDecodeError, match=r"too large: .*could be decompression bomb"):
        decode_image(_png_header(12_000, 12_000), "gis/gis_0a0a0a0a_0001/image_1.png")


def test_image_that_is_text() -> None:
    with pytest.raises(ImageDecodeError, match="not an image format Pillow knows"):
        decode_image(b"<html><body>not found</body></html>", "gis/gis_0a0a0a0a_0001/image_1.png")


# --- uploads -----------------------------------------------------------------------------------


def test_upload_empty_file(source) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"^run\.trec: empty input"):
        workspace.entry_from_bytes("run.trec", b"", TaskView(source, 1, "paper"))


def test_upload_binary_file(source) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"^photo\.trec:1: the content is not UTF-8"):
        workspace.entry_from_bytes("photo.trec", _png_header(4, 4), TaskView(source, 1, "paper"))


def test_upload_of_unknown_queries(source) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"^other\.trec: no query of the run belongs to this task"):
        workspace.entry_from_bytes(
            "other.trec", b"q77 Q0 d 1 1.0 t\n", TaskView(source, 1, "paper")
        )


def test_upload_gzip_bomb(source) -> None:  # type: ignore[no-untyped-def]
    line = f"academia/a1 Q0 {A1} 1 1.0 t\n".encode()
    bomb = gzip.compress(line + b" " * 4_000_000, mtime=0)  # 4 MB of blanks in about 4 kB
    assert len(bomb) < 10_000
    with pytest.raises(InputError, match=r"^bomb\.trec\.gz: the file expands past the upload"):
        workspace.entry_from_bytes(
            "bomb.trec.gz", bomb, TaskView(source, 1, "paper"), max_bytes=2**20
        )
    entry = workspace.entry_from_bytes(
        "ok.trec.gz", bomb, TaskView(source, 1, "paper"), max_bytes=2**23
    )
    assert entry.runs == {"academia": {"a1": {A1: 1.0}}}


def test_upload_parquet_bomb(source) -> None:  # type: ignore[no-untyped-def]
    rows = 200_000
    frame = pd.DataFrame(
        {"query_id": ["academia/a1"] * rows, "doc_id": [f"{A1}#{i}" for i in range(rows)]}
    ).assign(score=1.0)
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    with pytest.raises(InputError, match=r"^bomb\.parquet: the file expands past the upload"):
        workspace.entry_from_bytes(
            "bomb.parquet", buffer.getvalue(), TaskView(source, 1, "paper"), max_bytes=2**20
        )

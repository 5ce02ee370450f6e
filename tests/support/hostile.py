"""Hostile data for the dashboard's tests: script, HTML and Markdown where text is shown."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

A1 = "academia/a1b2c3d4_101.txt"
A3 = "academia/e5f6a7b8_201.txt"
SCRIPT = "<script>alert(1)</script>"
HOSTILE_QUERY = f"{SCRIPT} **bold** [link](javascript:alert(2)) <img src=x onerror=alert(3)>"
HOSTILE_PASSAGE = f"# Heading\n{SCRIPT}\n<b>not bold</b> :red[not red] $x^2$"
HOSTILE_NAME = "**x** <img src=x onerror=alert(4)>"


def replace_cell(path: Path, key: str, value: str, column: str, text: str) -> None:
    """Set ``column`` to ``text`` in the rows of a parquet file whose ``key`` is ``value``."""
    table = pq.read_table(path)
    keys = table[key].to_pylist()
    cells = [
        text if k == value else c for k, c in zip(keys, table[column].to_pylist(), strict=True)
    ]
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, pa.array(cells, pa.string())), path)


def hostile_copy(fixture_dir: Path, folder: Path, query: str, passage: str) -> Path:
    """A copy of the fixture dataset in ``folder`` with query a1 and passage A1 replaced."""
    root = Path(shutil.copytree(fixture_dir, folder / "data"))
    for config_name in ("examples", "examples_multimodal"):
        replace_cell(root / config_name / "academia.parquet", "id", "a1", "query", query)
    replace_cell(root / "documents" / "academia.parquet", "id", A1, "content", passage)
    return root

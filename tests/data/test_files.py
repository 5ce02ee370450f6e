"""Reading a parquet file's metadata: a damaged one is one clear error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mmbright_core.data.files import check_decoded_size
from mmbright_core.errors import InputError


@pytest.mark.parametrize("which", [0, 1])
def test_a_column_name_that_is_not_utf8_is_an_input_error(tmp_path: Path, which: int) -> None:
    # A flipped byte in a column's name (in the schema or in a column chunk's path, the two
    # places the footer writes it) leaves pyarrow a metadata whose name it cannot decode.
    path = tmp_path / "examples.parquet"
    pq.write_table(pa.table({"id": ["a1"], "image_paths": [["a/x.png"]]}), path)
    raw = bytearray(path.read_bytes())
    places = [i for i in range(len(raw)) if raw.startswith(b"image_paths", i)]
    raw[places[which]] = 0x80
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="not a readable parquet file") as caught:
        check_decoded_size(path, ["id", "image_paths"])
    assert caught.value.source == str(path)

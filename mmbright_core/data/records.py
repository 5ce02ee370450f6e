"""Streaming records out of a copy's files: projected reads, record batches, passages by id.

Columns are projected, so text-only tasks read no image bytes. Memory stays bounded by the
largest domain: large files are read in record batches (physics alone holds 338,291
passages, docs/protocol.md, The benchmark), and passages wanted by id are found one row group at a
time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mmbright_core.data.files import ParquetFiles, unreadable, validated

#: Rows per record batch when streaming a file (about 18 MB of average passages).
BATCH_ROWS = 8192


class RecordReader(ParquetFiles):
    """Reads checked records of a copy's files: whole projected tables, batches, passages."""

    def read_table(self, config: str, domain: str, columns: Sequence[str]) -> pa.Table:
        """Read only ``columns`` of one config's file for one domain.

        Raises:
            InputTooLargeError: The columns decode past the input size limit.
            InputError: If the file lacks a column or is not a readable parquet file.
        """
        path = self.sized_file(config, domain, columns)
        try:
            return validated(path, pq.read_table(path, columns=list(columns)))
        except (pa.ArrowException, OSError) as err:
            raise unreadable(path, err) from err

    def iter_batches(
        self, config: str, domain: str, columns: Sequence[str], batch_rows: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream ``columns`` of one config's file in record batches (default ``BATCH_ROWS`` rows).

        Only one batch is decoded at a time, so the arrow copy of a large corpus never sits
        beside its Python copy in full.

        Raises:
            InputTooLargeError: The columns decode past the input size limit.
            InputError: If the file lacks a column or is not a readable parquet file.
        """
        path = self.sized_file(config, domain, columns)
        try:
            # Opened inside the generator's try: a corrupt file fails on the first batch.
            batches = pq.ParquetFile(path).iter_batches(
                batch_size=batch_rows or BATCH_ROWS, columns=list(columns)
            )
            for batch in batches:
                yield validated(path, batch)
        except (pa.ArrowException, OSError) as err:
            raise unreadable(path, err) from err

    def passages(self, domain: str, ids: Iterable[str]) -> dict[str, str]:
        """Return the text of the given passages of one domain, reading only their rows.

        The ``id`` column is read one row group at a time and only row groups holding a
        wanted id have their ``content`` decoded; reading stops once every id is found.
        Showing a query's top 10 so never loads a whole corpus (750 MB of text for
        physics, docs/protocol.md, The benchmark). Ids the corpus lacks are left out of the result.

        Raises:
            InputError: If the file lacks a column or is not a readable parquet file.
        """
        wanted = set(ids)
        found: dict[str, str] = {}
        if not wanted:
            return found
        path = self.checked_file("documents", domain, ("id", "content"))
        try:
            parquet = pq.ParquetFile(path)
            for group in range(parquet.num_row_groups):
                keys = parquet.read_row_group(group, columns=["id"]).column(0)
                hits = pc.is_in(keys, value_set=pa.array(sorted(wanted), keys.type))
                if not pc.any(hits).as_py():
                    continue
                rows = parquet.read_row_group(group, columns=["id", "content"]).filter(hits)
                rows = validated(path, rows)
                texts = rows.column(1).to_pylist()
                for key, text in zip(rows.column(0).to_pylist(), texts, strict=True):
                    found[str(key)] = text or ""
                    wanted.discard(str(key))
                if not wanted:
                    break
        except (pa.ArrowException, OSError) as err:
            raise unreadable(path, err) from err
        return found

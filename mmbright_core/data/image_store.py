"""Serving a copy's image bytes lazily: a path -> row-group index per image file.

Only the ``path`` column of an image config (``examples_images``, ``document_images``) is
read up front; a lookup reads the ``bytes`` column of one row group. A bounded number of
indexes is kept, and whether each image decodes is checked once per path.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from mmbright_core.data.files import ParquetFiles, unreadable, validated
from mmbright_core.data.ids import normalise_path
from mmbright_core.data.images import image_problem

#: Image files whose path index a source keeps (a domain's query and corpus images).
IMAGE_INDEX_CACHE = 2


class ImageIndex:
    """Lazy access to one image config file: a path -> (row group, row) index, then bytes.

    Only the ``path`` column is read up front; a lookup reads the ``bytes`` column of one row
    group, and the last row group read is kept so that walking a file in order reads each
    row group once.
    """

    def __init__(self, file: Path) -> None:
        self._path = file
        self._file = pq.ParquetFile(file)
        self._where: dict[str, tuple[int, int]] = {}
        self.paths: list[str] = []
        for group in range(self._file.num_row_groups):
            table = validated(file, self._file.read_row_group(group, columns=["path"]))
            column = table.column("path")
            for row, raw in enumerate(column.to_pylist()):
                path = normalise_path(raw)
                if path not in self._where:  # a repeated path keeps its first bytes
                    self._where[path] = (group, row)
                    self.paths.append(path)
        self._cached: tuple[int, pa.ChunkedArray] | None = None

    def get(self, path: str) -> bytes | None:
        """Return the bytes stored for ``path``, or None if the file has no such path."""
        where = self._where.get(normalise_path(path))
        if where is None:
            return None
        group, row = where
        cached = self._cached  # one local read: callers may share the source across threads
        if cached is None or cached[0] != group:
            try:
                cached = (group, self._file.read_row_group(group, columns=["bytes"])["bytes"])
            except (pa.ArrowException, OSError) as err:
                raise unreadable(self._path, err) from err
            self._cached = cached
        value = cached[1][row].as_py()
        return None if value is None else bytes(value)


class ImageStore(ParquetFiles):
    """Serves image paths, bytes and decodability, keeping ``IMAGE_INDEX_CACHE`` indexes."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._images: OrderedDict[tuple[str, str], ImageIndex] = OrderedDict()
        self._problems: dict[tuple[str, str, str], str | None] = {}

    def _image_index(self, config: str, domain: str) -> ImageIndex:
        key = (config, domain)
        if key not in self._images:
            path = self.checked_file(config, domain, ("path", "bytes"))
            while len(self._images) >= IMAGE_INDEX_CACHE:
                self._images.popitem(last=False)  # each index holds a row group of bytes
            try:
                self._images[key] = ImageIndex(path)
            except (pa.ArrowException, OSError) as err:
                raise unreadable(path, err) from err
        self._images.move_to_end(key)
        return self._images[key]

    def image_paths(self, config: str, domain: str) -> tuple[str, ...]:
        """Return the normalised image paths of an image config, in file order, reading no bytes."""
        return tuple(self._image_index(config, domain).paths)

    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return one query image's bytes (``examples_images``), or None if absent."""
        return self._image_index("examples_images", domain).get(path)

    def document_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return one corpus image's bytes (``document_images``), or None if absent."""
        return self._image_index("document_images", domain).get(path)

    def image_problem(self, config: str, domain: str, path: str) -> str | None:
        """Return why an image of ``config`` cannot be decoded, or None; cached per path."""
        key = (config, domain, normalise_path(path))
        if key not in self._problems:
            data = self._image_index(config, domain).get(key[2])
            self._problems[key] = image_problem(data, key[2])
        return self._problems[key]

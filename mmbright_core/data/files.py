"""Finding and checking MM-BRIGHT's parquet files: one file per config and domain.

The layout is in docs/protocol.md, The data as published.

A copy of the dataset is a set of ``{config}/{domain}.parquet`` files, in a local folder
(:class:`FolderFiles`) or fetched one at a time from the Hugging Face hub (:class:`HubFiles`).
Before a column is read, the file's schema alone tells whether it has that column with a type
the published schema allows; after, :func:`validated` checks every value read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from mmbright_core.data.layout import CONFIGS, DOMAINS, PINNED_REVISION, REPO_ID, parquet_name
from mmbright_core.errors import InputError, MissingFileError, UnknownNameError
from mmbright_core.io.official import check_name
from mmbright_core.io.reading import MAX_INPUT_ENV, max_input_bytes, size_text, too_large

# Scalar columns of the published schema and the Arrow types they may have (docs/protocol.md, The
# data as published); list columns are checked where they are read (``ids.as_str_list``,
# ``ids.image_structs``).
_TEXT_COLUMNS = frozenset({"id", "content", "query", "path"})
_KEY_COLUMNS = frozenset({"id", "path"})
_OFF_SCHEMA = "The file does not follow MM-BRIGHT's published schema"
_NAME_HINT = (
    "Name each file after its domain ({config}/{domain}.parquet, e.g. documents/biology.parquet), "
    "or move it out of the dataset folder"
)

#: What one value costs once read into Python (a short string object and its list slot),
#: counted on top of its decoded bytes: a list column of 10^7 short ids decodes to 300 MB of
#: Arrow data but takes 2.6 GB once its rows are Python lists (docs/safety.md, "Bounded memory").
PY_VALUE_BYTES = 200


class ParquetFiles:
    """Where a copy's files live, and their checks before anything is read.

    Subclasses say where ``{config}/{domain}.parquet`` lives (:meth:`_locate`) and which
    domains exist (:meth:`domains`).

    Args:
        name: What the copy is called (``demo``, ``hf@<revision>``, a folder).
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def domains(self) -> tuple[str, ...]:
        """Return the domains this copy holds, sorted."""
        raise NotImplementedError

    def _locate(self, config: str, domain: str) -> Path:
        """Return the local path of one config's file for one domain."""
        raise NotImplementedError

    def check_domain(self, domain: str) -> str:
        """Return ``domain`` if this copy holds it, else raise UnknownNameError."""
        if domain not in self.domains():
            raise UnknownNameError("domain", domain, self.domains())
        return domain

    def file(self, config: str, domain: str) -> Path:
        """Return the local path of ``{config}/{domain}.parquet``, fetching it if needed."""
        if config not in CONFIGS:
            raise UnknownNameError("config", config, CONFIGS)
        return self._locate(config, self.check_domain(domain))

    def checked_file(self, config: str, domain: str, columns: Sequence[str]) -> Path:
        """Return the file after checking from its schema alone that it has ``columns``.

        Raises:
            InputError: If the file lacks a column, has one of the wrong type, or is not a
                readable parquet file.
        """
        path = self.file(config, domain)
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as err:
            raise unreadable(path, err) from err
        names = schema.names
        missing = [c for c in columns if c not in names]
        if not missing:
            _check_types(path, schema, columns)
            return path
        raise InputError(
            f"the {config!r} file lacks column(s) {', '.join(missing)}",
            source=str(path),
            expected=f"the published columns {', '.join(CONFIGS[config])}",
            found=", ".join(names),
            hint=_OFF_SCHEMA,
        )

    def sized_file(self, config: str, domain: str, columns: Sequence[str]) -> Path:
        """Return :meth:`checked_file` after counting ``columns`` against the input limit.

        For reads that keep every row of the columns (whole tables, streamed corpora).

        Raises:
            InputTooLargeError: The columns decode to more than the input size limit.
            InputError: As :meth:`checked_file`.
        """
        path = self.checked_file(config, domain, columns)
        check_decoded_size(path, columns)
        return path

    def num_rows(self, config: str, domain: str) -> int:
        """Return the number of rows of one config's file from its metadata, reading no data."""
        path = self.checked_file(config, domain, ())
        try:
            return int(pq.read_metadata(path).num_rows)
        except (pa.ArrowException, OSError) as err:
            raise unreadable(path, err) from err


class FolderFiles(ParquetFiles):
    """A local folder with the published layout ``{config}/{domain}.parquet``."""

    def __init__(self, root: Path, name: str | None = None) -> None:
        super().__init__(name or str(root))
        self.root = root
        files = [p for config in CONFIGS for p in sorted((root / config).glob("*.parquet"))]
        for path in files:  # before anything is run: a domain names a folder of the outputs
            check_name(path.stem, "domain name", source=str(path), hint=_NAME_HINT)
        found = {p.stem for p in files}
        if not found:
            raise InputError(
                "no MM-BRIGHT parquet files in the folder",
                source=str(root),
                expected="files laid out as {config}/{domain}.parquet (documents/biology.parquet)",
            )
        self._domains = tuple(sorted(found))

    def domains(self) -> tuple[str, ...]:
        """Return the domains that have at least one file in the folder."""
        return self._domains

    def _locate(self, config: str, domain: str) -> Path:
        path = self.root / parquet_name(config, domain)
        if not path.is_file():
            raise MissingFileError(
                f"missing file for config {config!r}, domain {domain!r}",
                config=config,
                domain=domain,
                source=str(path),
                hint=f"Copy {parquet_name(config, domain)} of the dataset into {self.root}",
            )
        return path


class HubFiles(ParquetFiles):
    """The Hugging Face dataset, fetched one parquet file at a time into the hub cache."""

    def __init__(self, revision: str = PINNED_REVISION, repo_id: str = REPO_ID) -> None:
        super().__init__(f"hf@{revision}")
        self.revision = revision
        self.repo_id = repo_id
        self._paths: dict[tuple[str, str], Path] = {}

    def domains(self) -> tuple[str, ...]:
        """Return the 29 published domains (no network listing needed)."""
        return DOMAINS

    def _locate(self, config: str, domain: str) -> Path:
        key = (config, domain)
        if key not in self._paths:
            self._paths[key] = self._download(parquet_name(config, domain))
        return self._paths[key]

    def _download(self, filename: str) -> Path:
        import huggingface_hub
        from huggingface_hub import constants
        from huggingface_hub.utils import EntryNotFoundError, LocalEntryNotFoundError

        try:
            local = huggingface_hub.hf_hub_download(
                self.repo_id, filename, repo_type="dataset", revision=self.revision
            )
        except LocalEntryNotFoundError as err:
            if not constants.HF_HUB_OFFLINE:
                raise self._unfetched(filename, err) from err
            raise InputError(
                f"{filename} is not in the local Hugging Face cache, and HF_HUB_OFFLINE=1 "
                "allows no download",
                source=f"{self.repo_id}@{self.revision}",
                hint="Fetch the dataset once with the network on and HF_HUB_OFFLINE unset "
                "(mmbright stats --source hf), or pass a local folder with the same layout",
            ) from err
        except (EntryNotFoundError, OSError, ValueError) as err:
            raise self._unfetched(filename, err) from err
        return Path(local)

    def _unfetched(self, filename: str, err: Exception) -> InputError:
        return InputError(
            f"cannot fetch {filename} ({type(err).__name__}: {err})",
            source=f"{self.repo_id}@{self.revision}",
            hint="Check the network (HF_HUB_OFFLINE=1 allows cached files only) and the "
            "revision, or pass a local folder with the same layout",
        )


def _column_name(path: Path, chunk: pq.ColumnChunkMetaData) -> str:
    """The top-level column a chunk holds (a list's values: ``<name>.list.element``).

    Raises:
        InputError: The name in the file's metadata is not UTF-8 (a damaged file).
    """
    try:
        return str(chunk.path_in_schema).split(".")[0]
    except UnicodeDecodeError as err:
        raise unreadable(path, err) from err


def check_decoded_size(path: Path, columns: Sequence[str], limit: int | None = None) -> None:
    """Refuse a file whose ``columns`` decode past the input size limit, before reading them.

    Counted from the metadata of every column chunk: its uncompressed bytes plus
    :data:`PY_VALUE_BYTES` per value, so a list column of millions of entries counts for
    what it takes in memory, not for its compressed size on disk.

    Raises:
        InputTooLargeError: The count passes ``limit`` (default: ``MMBRIGHT_MAX_INPUT_BYTES``).
        InputError: The metadata cannot be read.
    """
    limit = max_input_bytes(limit)
    try:
        metadata = pq.read_metadata(path)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as err:  # a name not UTF-8
        raise unreadable(path, err) from err
    wanted, sizes, values = set(columns), dict.fromkeys(columns, 0), dict.fromkeys(columns, 0)
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            name = _column_name(path, chunk)
            if name in wanted:
                sizes[name] += chunk.total_uncompressed_size + PY_VALUE_BYTES * chunk.num_values
                values[name] += chunk.num_values
    total = sum(sizes.values())
    if total <= limit:
        return
    largest = max(sizes, key=sizes.__getitem__)
    raise too_large(
        "the file is larger than the input size limit once decoded",
        str(path),
        limit,
        found=f"about {size_text(total)}, most of it column {largest!r} "
        f"({values[largest]:,} values)",
        hint=f"Check the file (MM-BRIGHT's columns are far smaller), or raise the limit "
        f"with {MAX_INPUT_ENV}",
    )


def _check_types(path: Path, schema: pa.Schema, columns: Sequence[str]) -> None:
    """Refuse a projected column whose type the published schema does not allow."""
    for name in columns:
        kind = schema.field(name).type
        if name in _TEXT_COLUMNS and not (
            pa.types.is_string(kind) or pa.types.is_large_string(kind)
        ):
            expected = "a string column"
        elif name == "bytes" and not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
            expected = "a binary column (the raw image file)"
        else:
            continue
        raise InputError(
            f"column {name!r} has the wrong type",
            source=str(path),
            expected=expected,
            found=str(kind),
            hint=_OFF_SCHEMA,
        )


_Data = TypeVar("_Data", pa.Table, pa.RecordBatch)


def validated(path: Path, data: _Data) -> _Data:
    """Return ``data`` after checking every value (UTF-8 of strings included) and its keys.

    Raises:
        InputError: A malformed value, or a null ``id`` or ``path``.
    """
    try:
        data.validate(full=True)
    except pa.ArrowInvalid as err:
        raise InputError(
            f"malformed values ({err})",
            source=str(path),
            expected="valid UTF-8 text in every string column",
            hint="Re-download the file or rebuild the folder",
        ) from err
    for name in _KEY_COLUMNS.intersection(data.schema.names):
        column = data.column(name)
        if column.null_count:
            raise InputError(
                f"column {name!r} holds {column.null_count} null value(s)",
                source=str(path),
                expected="an id in every row",
                found="null",
                hint=_OFF_SCHEMA,
            )
    return data


def unreadable(path: Path, err: Exception) -> InputError:
    """Return the error for a file pyarrow cannot read (``err`` is what pyarrow raised)."""
    return InputError(
        f"not a readable parquet file ({type(err).__name__}: {err})",
        source=str(path),
        hint="Re-download it or rebuild the folder",
    )

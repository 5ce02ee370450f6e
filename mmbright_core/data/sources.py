"""Where MM-BRIGHT is read from: the Hugging Face hub, a local folder, or the embedded demo.

Every source reads one parquet file per config and domain (``{config}/{domain}.parquet``, SPEC
§2) with pyarrow, never through ``datasets.load_dataset`` (which fails on
``examples_multimodal`` and leaves ``.incomplete`` caches behind). Columns are projected, so
text-only tasks read no image bytes, and image bytes are fetched one item at a time.

Memory stays bounded by the largest domain, not by the number of domains: large files are
read in record batches, and a source keeps the tasks (with their corpus) of a bounded number
of domains, least recently used first out (physics alone holds 338,291 passages, SPEC §1).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mmbright_core.data.ids import check_protocol, normalise_path
from mmbright_core.data.images import image_problem
from mmbright_core.data.layout import CONFIGS, DOMAINS, PINNED_REVISION, REPO_ID, parquet_name
from mmbright_core.data.tasks import Negatives, build_task, negatives_for
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.types import Protocol4, TaskData

_TASKS = (1, 2, 3, 4)
_TaskKey = tuple[int, Protocol4, Negatives]  # what a task's data depends on, checked

#: Domains whose tasks (with their corpus) a source keeps; 1 = never two corpora at once.
CORPUS_CACHE_DOMAINS = 1
#: Image files whose path index a source keeps (a domain's query and corpus images).
IMAGE_INDEX_CACHE = 2
#: Rows per record batch when streaming a file (about 18 MB of average passages).
BATCH_ROWS = 8192


class _ImageIndex:
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
            table = _validated(file, self._file.read_row_group(group, columns=["path"]))
            column = table.column("path")
            for row, raw in enumerate(column.to_pylist()):
                path = normalise_path(raw)
                if path not in self._where:  # a repeated path keeps its first bytes
                    self._where[path] = (group, row)
                    self.paths.append(path)
        self._cached: tuple[int, pa.ChunkedArray] | None = None

    def get(self, path: str) -> bytes | None:
        where = self._where.get(normalise_path(path))
        if where is None:
            return None
        group, row = where
        cached = self._cached  # one local read: callers may share the source across threads
        if cached is None or cached[0] != group:
            try:
                cached = (group, self._file.read_row_group(group, columns=["bytes"])["bytes"])
            except (pa.ArrowException, OSError) as err:
                raise _unreadable(self._path, err) from err
            self._cached = cached
        value = cached[1][row].as_py()
        return None if value is None else bytes(value)


class Source:
    """A copy of MM-BRIGHT: builds each task's data and serves image bytes lazily.

    Subclasses say where ``{config}/{domain}.parquet`` lives (:meth:`_locate`) and which
    domains exist. Tasks are cached per object, keyed by task, domain and protocol: judgments
    (no corpus) for every domain, tasks with their corpus for the ``corpus_cache_domains``
    most recently used domains only, so a run over all 29 domains holds one corpus at a time.

    Attributes:
        corpus_cache_domains: How many domains' corpus-bearing tasks to keep (at least 1).
    """

    corpus_cache_domains: int = CORPUS_CACHE_DOMAINS

    def __init__(self, name: str) -> None:
        self.name = name
        self._judgments: dict[tuple[str, int, Protocol4, Negatives], TaskData] = {}
        # domain -> its corpus-bearing tasks, least recently used domain first.
        self._tasks: OrderedDict[str, dict[_TaskKey, TaskData]] = OrderedDict()
        self._images: OrderedDict[tuple[str, str], _ImageIndex] = OrderedDict()
        self._problems: dict[tuple[str, str, str], str | None] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def domains(self) -> tuple[str, ...]:
        """Return the domains this source holds, sorted."""
        raise NotImplementedError

    def _locate(self, config: str, domain: str) -> Path:
        """Return the local path of one config's file for one domain."""
        raise NotImplementedError

    def check_domain(self, domain: str) -> str:
        """Return ``domain`` if this source holds it, else raise UnknownNameError."""
        if domain not in self.domains():
            raise UnknownNameError("domain", domain, self.domains())
        return domain

    def file(self, config: str, domain: str) -> Path:
        """Return the local path of ``{config}/{domain}.parquet``, fetching it if needed."""
        if config not in CONFIGS:
            raise UnknownNameError("config", config, CONFIGS)
        return self._locate(config, self.check_domain(domain))

    def read_table(self, config: str, domain: str, columns: Sequence[str]) -> pa.Table:
        """Read only ``columns`` of one config's file for one domain.

        Raises:
            InputError: If the file lacks a column or is not a readable parquet file.
        """
        path = self._checked_file(config, domain, columns)
        try:
            return _validated(path, pq.read_table(path, columns=list(columns)))
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(path, err) from err

    def iter_batches(
        self, config: str, domain: str, columns: Sequence[str], batch_rows: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream ``columns`` of one config's file in record batches (default ``BATCH_ROWS`` rows).

        Only one batch is decoded at a time, so the arrow copy of a large corpus never sits
        beside its Python copy in full.

        Raises:
            InputError: If the file lacks a column or is not a readable parquet file.
        """
        path = self._checked_file(config, domain, columns)
        try:
            # Opened inside the generator's try: a corrupt file fails on the first batch.
            batches = pq.ParquetFile(path).iter_batches(
                batch_size=batch_rows or BATCH_ROWS, columns=list(columns)
            )
            for batch in batches:
                yield _validated(path, batch)
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(path, err) from err

    def _checked_file(self, config: str, domain: str, columns: Sequence[str]) -> Path:
        """Return the file after checking from its schema alone that it has ``columns``."""
        path = self.file(config, domain)
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(path, err) from err
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
            hint="The file does not follow MM-BRIGHT's published schema",
        )

    def num_rows(self, config: str, domain: str) -> int:
        """Return the number of rows of one config's file from its metadata, reading no data."""
        path = self._checked_file(config, domain, ())
        try:
            return int(pq.read_metadata(path).num_rows)
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(path, err) from err

    def passages(self, domain: str, ids: Iterable[str]) -> dict[str, str]:
        """Return the text of the given passages of one domain, reading only their rows.

        The ``id`` column is read one row group at a time and only row groups holding a
        wanted id have their ``content`` decoded; reading stops once every id is found.
        Showing a query's top 10 so never loads a whole corpus (750 MB of text for
        physics, SPEC §1). Ids the corpus lacks are left out of the result.

        Raises:
            InputError: If the file lacks a column or is not a readable parquet file.
        """
        wanted = set(ids)
        found: dict[str, str] = {}
        if not wanted:
            return found
        path = self._checked_file("documents", domain, ("id", "content"))
        try:
            parquet = pq.ParquetFile(path)
            for group in range(parquet.num_row_groups):
                keys = parquet.read_row_group(group, columns=["id"]).column(0)
                hits = pc.is_in(keys, value_set=pa.array(sorted(wanted), keys.type))
                if not pc.any(hits).as_py():
                    continue
                rows = parquet.read_row_group(group, columns=["id", "content"]).filter(hits)
                rows = _validated(path, rows)
                texts = rows.column(1).to_pylist()
                for key, text in zip(rows.column(0).to_pylist(), texts, strict=True):
                    found[str(key)] = text or ""
                    wanted.discard(str(key))
                if not wanted:
                    break
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(path, err) from err
        return found

    def task(
        self, task: int, domain: str, protocol: str = "paper", *, negatives: str = "exclude"
    ) -> TaskData:
        """Return one task's queries, corpus, qrels and exclusions for one domain (SPEC §3).

        Args:
            task: 1, 2, 3 or 4.
            domain: A domain of :meth:`domains`.
            protocol: The Task 4 protocol, ``"paper"`` or ``"legacy"``; ignored by tasks 1-3.
            negatives: ``"exclude"`` (official) or ``"keep"`` each query's ``negative_ids``;
                ignored by tasks 3-4 (:func:`~mmbright_core.data.tasks.negatives_for`).
        """
        return self._cached_task(task, domain, protocol, negatives, with_corpus=True)

    def judgments(
        self, task: int, domain: str, protocol: str = "paper", *, negatives: str = "exclude"
    ) -> TaskData:
        """Return a task's data without reading its corpus (``corpus`` is empty).

        Scoring needs queries, qrels and exclusions only; tasks 1-3 then read no passage
        text and Task 4 reads passage ids alone. ``negatives`` as in :meth:`task`.
        """
        held = self._tasks.get(domain, {}).get(self._task_key(task, protocol, negatives))
        if held is not None:
            return held
        return self._cached_task(task, domain, protocol, negatives, with_corpus=False)

    def _task_key(self, task: int, protocol: str, negatives: str) -> _TaskKey:
        checked = self._check_task(task)
        return checked, _protocol_for(task, protocol), negatives_for(task, negatives)

    def _cached_task(
        self, task: int, domain: str, protocol: str, negatives: str, *, with_corpus: bool
    ) -> TaskData:
        key = self._task_key(task, protocol, negatives)
        self.check_domain(domain)
        if not with_corpus:
            light = (domain, *key)
            if light not in self._judgments:
                self._judgments[light] = build_task(
                    self, task, domain, key[1], with_corpus=False, negatives=key[2]
                )
            return self._judgments[light]
        if domain not in self._tasks:
            # Evict before building: the new corpus must never sit beside one too many.
            while len(self._tasks) >= max(1, self.corpus_cache_domains):
                self._tasks.popitem(last=False)
            self._tasks[domain] = {}
        self._tasks.move_to_end(domain)
        held = self._tasks[domain]
        if key not in held:
            held[key] = build_task(self, task, domain, key[1], with_corpus=True, negatives=key[2])
        return held[key]

    @staticmethod
    def _check_task(task: int) -> int:
        if task not in _TASKS:
            raise InputError("unknown task", expected="1, 2, 3 or 4", found=repr(task))
        return task

    def _image_index(self, config: str, domain: str) -> _ImageIndex:
        key = (config, domain)
        if key not in self._images:
            path = self._checked_file(config, domain, ("path", "bytes"))
            while len(self._images) >= IMAGE_INDEX_CACHE:
                self._images.popitem(last=False)  # each index holds a row group of bytes
            try:
                self._images[key] = _ImageIndex(path)
            except (pa.ArrowException, OSError) as err:
                raise _unreadable(path, err) from err
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


def _protocol_for(task: int, protocol: str) -> Protocol4:
    """Check the protocol name; tasks 1-3 have one protocol, so they share one cache entry."""
    checked = check_protocol(protocol)
    return checked if task == 4 else "paper"


# Scalar columns of the published schema and the Arrow types they may have (SPEC §2);
# list columns are checked where they are read (``ids.as_str_list``, ``ids.image_structs``).
_TEXT_COLUMNS = frozenset({"id", "content", "query", "path"})
_KEY_COLUMNS = frozenset({"id", "path"})


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
            hint="The file does not follow MM-BRIGHT's published schema",
        )


_Data = TypeVar("_Data", pa.Table, pa.RecordBatch)


def _validated(path: Path, data: _Data) -> _Data:
    """Check every value (UTF-8 of strings included) and that no id or path is null."""
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
                hint="The file does not follow MM-BRIGHT's published schema",
            )
    return data


def _unreadable(path: Path, err: Exception) -> InputError:
    return InputError(
        f"not a readable parquet file ({type(err).__name__}: {err})",
        source=str(path),
        hint="Re-download it or rebuild the folder",
    )


class FolderSource(Source):
    """A local folder with the published layout ``{config}/{domain}.parquet``."""

    def __init__(self, root: Path, name: str | None = None) -> None:
        super().__init__(name or str(root))
        self.root = root
        found = {p.stem for config in CONFIGS for p in (root / config).glob("*.parquet")}
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
            raise InputError(
                f"missing file for config {config!r}, domain {domain!r}",
                source=str(path),
                hint=f"Copy {parquet_name(config, domain)} of the dataset into {self.root}",
            )
        return path


class HubSource(Source):
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
        from huggingface_hub.utils import EntryNotFoundError

        try:
            local = huggingface_hub.hf_hub_download(
                self.repo_id, filename, repo_type="dataset", revision=self.revision
            )
        except (EntryNotFoundError, OSError, ValueError) as err:
            raise InputError(
                f"cannot fetch {filename} ({type(err).__name__}: {err})",
                source=f"{self.repo_id}@{self.revision}",
                hint="Check the network (HF_HUB_OFFLINE=1 allows cached files only) and the "
                "revision, or pass a local folder with the same layout",
            ) from err
        return Path(local)


def _demo_root() -> Path:
    return Path(__file__).parent / "demo"


def open_source(spec: str, revision: str | None = None) -> Source:
    """Open a copy of MM-BRIGHT.

    Args:
        spec: ``"demo"`` (the embedded demo dataset), ``"hf"`` or ``"hf@<revision>"`` (the hub
            dataset, pinned to the benchmark's revision unless told otherwise), or a folder.
        revision: A hub revision (``"hf"`` only).

    Raises:
        InputError: For a revision given twice or to a non-hub source, or a missing folder.
    """
    kind, _, at_revision = spec.partition("@") if spec.startswith("hf@") else (spec, "", "")
    if at_revision and revision and at_revision != revision:
        raise InputError("two different revisions", found=f"{spec!r} and revision={revision!r}")
    if kind == "hf":
        return HubSource(at_revision or revision or PINNED_REVISION)
    if revision:
        raise InputError(
            "a revision applies to the hub source only",
            found=f"{spec!r} with revision={revision!r}",
        )
    if kind == "demo":
        root = _demo_root()
        if not any(root.glob("*/*.parquet")):
            raise InputError(
                "the embedded demo dataset is missing",
                source=str(root),
                hint="Build it with the mmbright_core.data.demo_build module",
            )
        return FolderSource(root, name="demo")
    root = Path(spec).expanduser()
    if not root.is_dir():
        raise InputError(
            "unknown source",
            expected="'demo', 'hf', 'hf@<revision>' or a folder with {config}/{domain}.parquet",
            found=repr(spec),
        )
    return FolderSource(root)

"""What building a task reads from a copy of the dataset: its queries, passages and images.

:class:`TaskSource` is the part of a data source the task protocols need; the readers here
project only the columns a task's protocol uses (docs/protocol.md, Per-task protocol), clean
each query's list cells into a :class:`QueryRecord`, and say what they read as empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mmbright_core.data.checks import check_corpus_ids, data_file, null_text_warning
from mmbright_core.data.ids import as_str_list, image_structs, normalise_path, without_none_marker
from mmbright_core.errors import InputError
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import ImageRef, Query

if TYPE_CHECKING:
    import pyarrow as pa

# Per task: the columns of its query config (the task table's) its protocol uses (column
# projection keeps text-only tasks away from anything large).
_QUERY_COLUMNS: dict[int, tuple[str, ...]] = {
    1: ("id", "query", "gold_ids", "negative_ids"),
    2: ("id", "query", "gold_ids", "negative_ids", "image_paths"),
    3: ("id", "query", "image_paths", "positive_images"),
    4: ("id", "query", "gold_ids", "image_paths", "positive_images", "negative_images"),
}


class TaskSource(Protocol):
    """What building a task reads from a copy of the dataset; every data source satisfies it."""

    def read_table(self, config: str, domain: str, columns: Sequence[str]) -> pa.Table:
        """Read only ``columns`` of one config's file for one domain."""
        ...

    def iter_batches(
        self, config: str, domain: str, columns: Sequence[str], batch_rows: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream ``columns`` of one config's file in record batches."""
        ...

    def image_paths(self, config: str, domain: str) -> tuple[str, ...]:
        """Return the normalised image paths of an image config, in file order."""
        ...

    def image_problem(self, config: str, domain: str, path: str) -> str | None:
        """Return why an image of ``config`` cannot be decoded, or None."""
        ...


@dataclass(frozen=True)
class QueryRecord:
    """One query row with its list cells cleaned (strings, normalised paths, no ``"N/A"``)."""

    query: Query
    gold_ids: tuple[str, ...] = ()
    negative_ids: frozenset[str] = frozenset()
    positive_images: tuple[str, ...] = ()
    negative_images: tuple[str, ...] = ()


def read_queries(
    source: TaskSource, task: int, domain: str, warnings: list[str] | None = None
) -> list[QueryRecord]:
    """Read a task's queries for one domain, projecting the columns its protocol needs.

    Args:
        source: The dataset copy.
        task: The task (it chooses the config and columns).
        domain: The domain.
        warnings: Where to say how many query texts were null (read as empty text).

    Raises:
        InputError: If the file holds no query, or a query id repeats within the domain.
    """
    config, columns = TASK_TABLE[task].query_config, _QUERY_COLUMNS[task]
    records: list[QueryRecord] = []
    seen: set[str] = set()
    nulls = 0
    for row in source.read_table(config, domain, columns).to_pylist():
        query_id = str(row["id"])
        if query_id in seen:
            raise InputError(f"query id {query_id!r} repeats", source=data_file(config, domain))
        seen.add(query_id)
        nulls += row["query"] is None
        paths = as_str_list(row.get("image_paths"), "image_paths")
        query = Query(
            query_id,
            domain,
            row["query"] or "",
            tuple(ImageRef(normalise_path(p)) for p in paths),
        )
        records.append(
            QueryRecord(
                query,
                tuple(as_str_list(row.get("gold_ids"), "gold_ids")),
                without_none_marker(as_str_list(row.get("negative_ids"), "negative_ids")),
                _unique(p for p, _ in image_structs(row.get("positive_images"), "positive_images")),
                _unique(p for p, _ in image_structs(row.get("negative_images"), "negative_images")),
            )
        )
    if not records:
        raise InputError(
            "the file holds no query: nothing could be scored",
            source=data_file(config, domain),
            expected="at least one query row",
            found="no rows",
            hint="Re-download the file or rebuild the folder",
        )
    say(warnings, null_text_warning(nulls, len(records), "queries", config, domain))
    return records


def say(warnings: list[str] | None, warning: str | None) -> None:
    """Add ``warning`` to ``warnings`` when both are given (a reader may be asked for none)."""
    if warnings is not None and warning is not None:
        warnings.append(warning)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def read_passages(
    source: TaskSource, domain: str, *, text: bool, warnings: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """Return the domain's passage ids and, when ``text``, their contents (else ``[]``).

    The file is streamed in record batches: a whole-table read would hold the arrow copy of
    the largest corpus (about 750 MB of text for physics) beside its Python copy.

    Args:
        source: The dataset copy.
        domain: The domain.
        text: Read the contents too.
        warnings: Where to say how many passages were null (read as empty text).

    Raises:
        InputError: The file holds no passage, or a passage id repeats.
    """
    ids: list[str] = []
    texts: list[str] = []
    nulls = 0
    for batch in source.iter_batches("documents", domain, ("id", "content") if text else ("id",)):
        ids.extend(str(i) for i in batch.column(0).to_pylist())
        if text:
            nulls += batch.column(1).null_count
            texts.extend(t or "" for t in batch.column(1).to_pylist())
    check_corpus_ids(ids, "documents", domain, "passage")
    say(warnings, null_text_warning(nulls, len(ids), "passages", "documents", domain))
    return ids, texts


def decodable_images(source: TaskSource, domain: str) -> tuple[list[str], dict[str, str]]:
    """Split the domain's corpus images into decodable paths and path -> reason for the rest.

    The official loader drops what Pillow cannot decode from the Task 3 corpus and the Task 4
    pairs (docs/protocol.md, Per-task protocol); the reasons are kept for the report. (A path the
    file repeats is one image, its first bytes: the image store keeps each path once.)
    """
    kept: list[str] = []
    problems: dict[str, str] = {}
    for path in source.image_paths("document_images", domain):
        reason = source.image_problem("document_images", domain, path)
        if reason is None:
            kept.append(path)
        else:
            problems[path] = reason
    return kept, problems

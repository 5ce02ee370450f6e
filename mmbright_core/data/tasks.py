"""The four task protocols of MM-BRIGHT: queries, corpus, qrels and exclusions.

The protocols are in docs/protocol.md, Per-task protocol.

Task 1 pairs ``examples`` with ``documents``; Task 2 ``examples_multimodal`` with
``documents``; Task 3 ``examples_multimodal`` with the decodable ``document_images``; Task 4
``examples_multimodal`` with (passage, image) pairs joined on the source key. Each task reads
only the columns it needs, so tasks 1-2 never open an image config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mmbright_core.data.checks import (
    check_corpus_ids,
    data_file,
    null_text_warning,
    undecodable_warning,
)
from mmbright_core.data.choices import NEGATIVES as NEGATIVES
from mmbright_core.data.choices import Negatives as Negatives
from mmbright_core.data.ids import (
    as_str_list,
    image_key,
    image_structs,
    normalise_path,
    pair_id,
    passage_key,
    without_none_marker,
)
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, ImageRef, Protocol4, ProtocolReport, Query, TaskData

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

NEGATIVE_TASKS = frozenset(number for number, info in TASK_TABLE.items() if info.negatives)
"""The tasks whose exclusions come from ``negative_ids``; Task 3 has none to apply (they are
passage ids) and Task 4 excludes pairs of its negative images, a rule of its own."""


def check_negatives(negatives: str) -> Negatives:
    """Return ``negatives`` if it names a policy for ``negative_ids``, else raise.

    Raises:
        UnknownNameError: Not ``"exclude"`` or ``"keep"``.
    """
    if negatives not in NEGATIVES:
        raise UnknownNameError("negatives policy", str(negatives), NEGATIVES)
    return negatives


def negatives_for(task: int, negatives: str) -> Negatives:
    """Check the policy and return the one ``task`` actually follows.

    The policy only concerns ``negative_ids``, which only tasks 1-2 exclude, so tasks 3-4
    record the default (as they record the ``paper`` protocol): a ``keep`` run of Task 4
    still drops its negative-image pairs, which the authors' Task 4 protocol removes
    "from the ranking rather than scored 0" (``EvaluationRunner._build_task4_qrels`` in
    ``src/eval_runner.py`` of mm-bright/MM-BRIGHT).
    """
    checked = check_negatives(negatives)
    return checked if task in NEGATIVE_TASKS else "exclude"


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


Pair = tuple[str, str | None]
"""A Task 4 item: (passage id, image path or None for the text-only variant)."""


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
    _say(warnings, null_text_warning(nulls, len(records), "queries", config, domain))
    return records


def _say(warnings: list[str] | None, warning: str | None) -> None:
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
    _say(warnings, null_text_warning(nulls, len(ids), "passages", "documents", domain))
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


def build_task(
    source: TaskSource,
    task: int,
    domain: str,
    protocol: Protocol4 = "paper",
    *,
    with_corpus: bool = True,
    negatives: Negatives = "exclude",
) -> TaskData:
    """Build one task's data for one domain under its protocol (docs/protocol.md).

    Args:
        source: The dataset copy to read.
        task: 1, 2, 3 or 4.
        domain: The domain.
        protocol: The Task 4 protocol; tasks 1-3 record ``"paper"``.
        with_corpus: False leaves ``corpus`` empty and reads only what the judgments need.
        negatives: Tasks 1-2: ``"exclude"`` each query's ``negative_ids`` from its ranking
            (the official harness) or ``"keep"`` them; tasks 3-4 ignore it
            (:func:`negatives_for`).
    """
    warnings: list[str] = []
    records = read_queries(source, task, domain, warnings)
    corpus = TASK_TABLE[task].corpus
    if corpus == "passages":
        keep = check_negatives(negatives) == "keep"
        data = _text_task(source, task, domain, records, with_corpus, keep, warnings)
    elif corpus == "images":
        data = _image_task(source, domain, records, with_corpus, warnings)
    else:
        data = _pair_task(source, domain, protocol, records, with_corpus, warnings)
    return dataclasses.replace(
        data, report=dataclasses.replace(data.report, warnings=tuple(warnings))
    )


def _finish(
    task: int,
    domain: str,
    protocol: Protocol4,
    records: Sequence[QueryRecord],
    corpus: tuple[Document, ...],
    qrels: dict[str, dict[str, int]],
    excluded: dict[str, frozenset[str]],
    **report: object,
) -> TaskData:
    empty = tuple(q for q, judged in qrels.items() if not judged)
    return TaskData(
        task,  # type: ignore[arg-type]
        domain,
        protocol,
        tuple(r.query for r in records),
        corpus,
        qrels,
        excluded,
        ProtocolReport(empty_qrels=empty, **report),  # type: ignore[arg-type]
    )


def _text_task(
    source: TaskSource,
    task: int,
    domain: str,
    records: Sequence[QueryRecord],
    with_corpus: bool,
    keep_negatives: bool,
    warnings: list[str],
) -> TaskData:
    # Tasks 1-2: gold_ids -> 1; each query's negative_ids (except "N/A") are excluded, as
    # the official loader's excluded_ids map drives get_scores/retrieval_bm25 in
    # src/retrievers/task1_text.py (BRIGHT's code); "keep" leaves every ranking whole.
    corpus: tuple[Document, ...] = ()
    if with_corpus:
        ids, texts = read_passages(source, domain, text=True, warnings=warnings)
        corpus = tuple(Document(i, t) for i, t in zip(ids, texts, strict=True))
    qrels = {r.query.query_id: dict.fromkeys(r.gold_ids, 1) for r in records}
    none = frozenset[str]()
    excluded = {r.query.query_id: none if keep_negatives else r.negative_ids for r in records}
    return _finish(task, domain, "paper", records, corpus, qrels, excluded)


def _image_task(
    source: TaskSource,
    domain: str,
    records: Sequence[QueryRecord],
    with_corpus: bool,
    warnings: list[str],
) -> TaskData:
    # Task 3: positive image paths -> 1; negative_ids are passage ids, so nothing is excluded.
    # The judgments do not depend on the corpus, so without it no image is read at all.
    corpus: tuple[Document, ...] = ()
    problems: dict[str, str] = {}
    if with_corpus:
        kept, problems = decodable_images(source, domain)
        if not kept and not problems:  # no row at all: nothing to rank
            check_corpus_ids([], "document_images", domain, "image")
        _say(warnings, undecodable_warning(problems, len(kept), 3, domain))
        corpus = tuple(Document(p, image=ImageRef(p)) for p in kept)
    qrels = {r.query.query_id: dict.fromkeys(r.positive_images, 1) for r in records}
    excluded = {r.query.query_id: frozenset[str]() for r in records}
    return _finish(
        3, domain, "paper", records, corpus, qrels, excluded, undecodable_images=problems
    )


def _pair_task(
    source: TaskSource,
    domain: str,
    protocol: Protocol4,
    records: Sequence[QueryRecord],
    with_corpus: bool,
    warnings: list[str],
) -> TaskData:
    ids, texts = read_passages(source, domain, text=with_corpus, warnings=warnings)
    images, problems = decodable_images(source, domain)
    _say(warnings, undecodable_warning(problems, len(images), 4, domain))
    pairs = pair_corpus(ids, images, domain, protocol)
    judged = judge_pairs(records, ids, images, {pair_id(*p) for p in pairs}, domain, protocol)
    corpus: tuple[Document, ...] = ()
    if with_corpus:
        corpus = _pair_documents([*pairs, *judged.added], dict(zip(ids, texts, strict=True)))
    return _finish(
        4,
        domain,
        protocol,
        records,
        corpus,
        judged.qrels,
        judged.excluded,
        orphan_positives=judged.orphan_positives,
        unavailable_positives=judged.unavailable_positives,
        undecodable_images=problems,
        added_judged_pairs=len(judged.added),
    )


def _pair_documents(pairs: Sequence[Pair], text_of: dict[str, str]) -> tuple[Document, ...]:
    refs: dict[str, ImageRef] = {}
    return tuple(
        Document(
            pair_id(pid, image),
            text_of[pid],
            None if image is None else refs.setdefault(image, ImageRef(image)),
        )
        for pid, image in pairs
    )


def pair_corpus(
    passage_ids: Sequence[str], images: Sequence[str], domain: str, protocol: Protocol4
) -> list[Pair]:
    """Return the Task 4 items: each passage text-only, then with each image of its key.

    Args:
        passage_ids: The domain's passages, in published order.
        images: The domain's decodable corpus images (normalised paths).
        domain: The domain (image keys are read from ``{domain}_<key>_<n>``).
        protocol: Which passage-key rule joins passages to images (docs/protocol.md, Per-task
            protocol).
    """
    by_key: dict[str, list[str]] = {}
    for path in images:
        key = image_key(path, domain)
        if key is not None:
            by_key.setdefault(key, []).append(path)
    pairs: list[Pair] = []
    for pid in passage_ids:
        pairs.append((pid, None))
        key = passage_key(pid, protocol)
        if key is not None:
            pairs.extend((pid, image) for image in by_key.get(key, ()))
    return pairs


@dataclass(frozen=True)
class PairJudgments:
    """Task 4 judgments and what building them counted.

    Attributes:
        qrels: query_id -> pair id -> 2 (gold passage with a positive image) or 1 (text-only).
        excluded: query_id -> pair ids made from its negative images, judged ones kept.
        added: Judged pairs that the pair corpus lacked, to append to it before retrieval.
        orphan_positives: Positive images with no gold passage of the same key (skipped).
        unavailable_positives: Positive images with gold passages but no decodable corpus image.
    """

    qrels: dict[str, dict[str, int]]
    excluded: dict[str, frozenset[str]]
    added: tuple[Pair, ...]
    orphan_positives: int
    unavailable_positives: int


def judge_pairs(
    records: Sequence[QueryRecord],
    passage_ids: Sequence[str],
    images: Sequence[str],
    corpus_pairs: set[str],
    domain: str,
    protocol: Protocol4,
) -> PairJudgments:
    """Grade Task 4 pairs and expand negative images into exclusions (docs/protocol.md).

    Args:
        records: The multimodal queries.
        passage_ids: The domain's passages.
        images: The decodable corpus images.
        corpus_pairs: The pair ids the pair corpus already holds.
        domain: The domain.
        protocol: The passage-key rule, ``"paper"`` or ``"legacy"``.
    """
    passages = set(passage_ids)
    available = set(images)
    by_key: dict[str, list[str]] = {}
    for pid in passage_ids:
        key = passage_key(pid, protocol)
        if key is not None:
            by_key.setdefault(key, []).append(pid)
    qrels: dict[str, dict[str, int]] = {}
    excluded: dict[str, frozenset[str]] = {}
    added: dict[Pair, None] = {}
    orphans = unavailable = 0
    for record in records:
        judged: dict[Pair, int] = {(gold, None): 1 for gold in record.gold_ids}
        for image in record.positive_images:
            key = image_key(image, domain)
            golds = [
                g for g in record.gold_ids if key is not None and passage_key(g, protocol) == key
            ]
            if not golds:
                orphans += 1  # its source post gave this query no gold passage
            elif image not in available:
                unavailable += 1  # undecodable or absent from document_images
            else:
                judged.update(((g, image), 2) for g in golds)
        for pair in judged:
            if pair[0] in passages and pair_id(*pair) not in corpus_pairs:
                added[pair] = None
        qid = record.query.query_id
        qrels[qid] = {pair_id(*pair): rel for pair, rel in judged.items()}
        positives = set(record.positive_images)
        # An image both positive and negative counts as positive; judged pairs are never
        # excluded; passage-level negative_ids exclude nothing in Task 4.
        excluded[qid] = frozenset(
            pair_id(pid, image)
            for image in record.negative_images
            if image not in positives
            for pid in by_key.get(image_key(image, domain) or "", ())
        ).difference(qrels[qid])
    return PairJudgments(qrels, excluded, tuple(added), orphans, unavailable)

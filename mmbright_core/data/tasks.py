"""The four task protocols of MM-BRIGHT: queries, corpus, qrels and exclusions.

The protocols are in docs/protocol.md, Per-task protocol. What a task reads is in
:mod:`~mmbright_core.data.task_inputs`, Task 4's pairs and their grades in
:mod:`~mmbright_core.data.pairs`; this module puts each task together.

Task 1 pairs ``examples`` with ``documents``; Task 2 ``examples_multimodal`` with
``documents``; Task 3 ``examples_multimodal`` with the decodable ``document_images``; Task 4
``examples_multimodal`` with (passage, image) pairs joined on the source key. Each task reads
only the columns it needs, so tasks 1-2 never open an image config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mmbright_core.data.checks import check_corpus_ids, check_pair_images, undecodable_warning
from mmbright_core.data.choices import NEGATIVES as NEGATIVES
from mmbright_core.data.choices import Negatives as Negatives
from mmbright_core.data.ids import pair_id
from mmbright_core.data.pairs import Pair, judge_pairs, pair_corpus, release_judgments
from mmbright_core.data.task_inputs import (
    QueryRecord,
    TaskSource,
    decodable_images,
    read_passages,
    read_queries,
    say,
)
from mmbright_core.errors import UnknownNameError
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, ImageRef, Protocol4, ProtocolReport, TaskData

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
        say(warnings, undecodable_warning(problems, len(kept), domain))
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
    check_pair_images(problems, len(images), domain)
    pairs = pair_corpus(ids, images, domain, protocol)
    if protocol == "release":
        judged = release_judgments(records, pairs)
    else:
        judged = judge_pairs(records, ids, images, {pair_id(*p) for p in pairs}, domain, protocol)
    corpus: tuple[Document, ...] = ()
    if with_corpus:
        corpus = _pair_documents([*pairs, *judged.added], dict(zip(ids, texts, strict=True)))
    counted = {
        "orphan_positives": judged.orphan_positives,
        "unavailable_positives": judged.unavailable_positives,
        "undecodable_images": problems,
        "added_judged_pairs": len(judged.added),
    }
    return _finish(4, domain, protocol, records, corpus, judged.qrels, judged.excluded, **counted)


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

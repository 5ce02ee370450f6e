"""Task 4's items: the (passage, image) pairs of a domain and their judgments.

A passage stands alone (its text-only pair) and with each corpus image of its source key;
a query's gold passage with one of its positive images is graded 2, a gold passage alone 1,
and its negative images' pairs are excluded (docs/protocol.md, Per-task protocol). The
``release`` protocol instead judges every pair of a gold passage 1 and excludes nothing, as
the January 2026 release scores Task 4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mmbright_core.data.ids import image_key, pair_id, passage_key
from mmbright_core.data.task_inputs import QueryRecord
from mmbright_core.types import Protocol4

Pair = tuple[str, str | None]
"""A Task 4 item: (passage id, image path or None for the text-only variant)."""


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
        qrels: query_id -> pair id -> 2 (gold passage with a positive image) or 1 (text-only;
            under ``release``, every pair of a gold passage).
        excluded: query_id -> pair ids made from its negative images, judged ones kept.
        added: Judged pairs that the pair corpus lacked, to append to it before retrieval.
        orphan_positives: Positive images with a source key but no gold passage of that key
            (skipped; one whose path holds no key is skipped uncounted).
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
            if key is None:
                continue  # no source key: skipped, uncounted, as _build_task4_qrels does
            golds = [g for g in record.gold_ids if passage_key(g, protocol) == key]
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


def release_judgments(records: Sequence[QueryRecord], pairs: Sequence[Pair]) -> PairJudgments:
    """Judge Task 4 as the January 2026 release scores it: every pair of a gold passage is 1.

    ``EvaluationRunner._evaluate_domain`` in ``src/eval_runner.py`` of mm-bright/MM-BRIGHT
    (2d37a4d) maps each gold id to every doc id of the pair corpus whose passage part is that
    id, with relevance 1: positive images play no part, a gold passage absent from the corpus
    is not judged, and nothing is added to the corpus. Its exclusions are the query's
    ``negative_ids``, passage ids that no pair id equals, so nothing is excluded.

    Args:
        records: The multimodal queries.
        pairs: The pair corpus (:func:`pair_corpus` with the released passage key).
    """
    by_passage: dict[str, list[str]] = {}
    for pid, image in pairs:
        by_passage.setdefault(pid, []).append(pair_id(pid, image))
    qrels = {
        r.query.query_id: {doc: 1 for gold in r.gold_ids for doc in by_passage.get(gold, ())}
        for r in records
    }
    excluded = {r.query.query_id: frozenset[str]() for r in records}
    return PairJudgments(qrels, excluded, (), 0, 0)

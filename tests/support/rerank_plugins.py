"""Rerankers of a researcher's own (``--reranker rerank_plugins:NAME``), for the tests.

``counting`` scores a passage by a digest of its text and logs each query it is asked,
to ``$RERANK_LOG``; with ``$RERANK_HOLD`` set (a FIFO) it writes a line there when asked
its ``$RERANK_HOLD_AFTER + 1``-th query and then blocks for good, so a test can kill the
job at a known point without waiting for time.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from mmbright_core.rerank.base import Candidate, ImageStore, Reranked, RerankQuery


class _Plugin:
    name = "plugin"

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def label(self) -> str:
        return self.kind

    def settings(self) -> dict[str, Any]:
        return {"model": self.kind}


class Reverse(_Plugin):
    """Listwise: the first stage's order turned upside down."""

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        return Reranked.from_order(range(len(candidates) - 1, -1, -1))


class Broken(_Plugin):
    """Listwise, malformed: the first candidate named twice (no permutation)."""

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        return Reranked.from_order([0, 0, *range(2, len(candidates))])


def digest_score(text: str | None) -> float:
    """A deterministic score of a text: its sha256's first four bytes, scaled to [0, 1)."""
    return int.from_bytes(hashlib.sha256((text or "").encode()).digest()[:4], "big") / 2**32


class Counting(_Plugin):
    """Pointwise by :func:`digest_score`; logs every query asked (see the module)."""

    asked = 0

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        Counting.asked += 1
        hold = os.environ.get("RERANK_HOLD")
        if hold and Counting.asked > int(os.environ["RERANK_HOLD_AFTER"]):
            with open(hold, "w") as fifo:  # opens once the test reads: no timing involved
                fifo.write(f"{query.query_id}\n")
            with open(hold + ".never"):  # a FIFO nobody writes: blocks until killed
                pass
        log = os.environ.get("RERANK_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write(f"{query.domain}/{query.query_id}\n")
        return Reranked.from_scores([digest_score(c.text) for c in candidates])


def reverse() -> Reverse:
    """Build :class:`Reverse`."""
    return Reverse("reverse")


def broken() -> Broken:
    """Build :class:`Broken`."""
    return Broken("broken")


def counting() -> Counting:
    """Build :class:`Counting`."""
    return Counting("counting")


def not_a_reranker() -> object:
    """Return something that is no reranker."""
    return object()


class Answering(_Plugin):
    """Answers every query with the same value, whatever it is (for the malformed cases)."""

    def __init__(self, kind: str, answer: object) -> None:
        super().__init__(kind)
        self.answer = answer

    def rerank(self, query: RerankQuery, candidates: Sequence[Candidate], images: Any) -> Any:
        return self.answer


def answers_none() -> Answering:
    """A reranker that forgets to return its answer."""
    return Answering("none", None)


def answers_a_list() -> Answering:
    """A reranker that returns a bare order, not a :class:`Reranked`."""
    return Answering("list", [1, 0])


def answers_text() -> Answering:
    """A reranker that returns the model's text."""
    return Answering("text", "[2] > [1]")


def answers_string_scores() -> Answering:
    """A reranker whose :class:`Reranked` holds strings where scores belong."""
    return Answering("strings", Reranked(scores=("0.5", "high")))


def answers_string_order() -> Answering:
    """A reranker whose :class:`Reranked` holds doc ids where positions belong."""
    return Answering("ids", Reranked(order=("d2", "d1")))


class Exiting(_Plugin):
    """Ends the program when asked a query, as a script's ``sys.exit()`` would."""

    def rerank(self, query: RerankQuery, candidates: Sequence[Candidate], images: Any) -> Any:
        sys.exit(1)


def exits_answering() -> Exiting:
    """A reranker that calls ``sys.exit(1)`` from its answer."""
    return Exiting("exits")


def exits_making() -> Exiting:
    """A factory that calls ``sys.exit(0)`` (exit status 0, nothing written)."""
    sys.exit(0)


def holding_cross_encoder(batch_size: int = 32) -> Any:
    """The package's cross-encoder on the model folder ``$RERANK_MODEL``; with ``$RERANK_HOLD``
    set (a FIFO) it writes a line there before its model's ``$RERANK_HOLD_AFTER + 1``-th
    batch and then blocks for good, as :class:`Counting` does."""
    from mmbright_core.rerank.cross_encoder import CrossEncoderReranker

    reranker = CrossEncoderReranker(os.environ["RERANK_MODEL"], batch_size=batch_size)
    hold = os.environ.get("RERANK_HOLD")
    if hold:
        batches = []

        def before_each_batch(module: Any, args: Any) -> None:
            batches.append(len(args[0]["input_ids"]))
            if len(batches) > int(os.environ["RERANK_HOLD_AFTER"]):
                with open(hold, "w") as fifo:
                    fifo.write(f"{sum(batches[:-1])} pairs scored\n")
                with open(hold + ".never"):
                    pass

        reranker.load().register_forward_pre_hook(before_each_batch)
    return reranker

"""``cross-encoder:NAME``: a sentence-transformers ``CrossEncoder`` scores (query, passage).

Any hub name already in the local cache, or a local folder (known then by the sha256 of its
files, not by where it lies). Passages are capped before tokenising to what the model's
truncation can reach (:func:`~mmbright_core.retrieval.dual.textcap.cap_text`), so a 25 MB
passage costs what its first tokens cost. The reranker reads text only: Task 3, whose
documents are images, is refused; a Task 4 pair is scored by its passage's text.

The queries of a job are scored together (:class:`~mmbright_core.rerank.base.BatchReranker`):
their pairs, in query order, go to the model in slices of :data:`SLICE_BATCHES` full
batches, one ``predict`` call each, and every query whose pairs are all scored is answered
before the next slice. A slice is scored whenever it holds a pair of a query not answered
yet, whole: its scores depend on its pairs alone, so a resumed job scores every query as an
uninterrupted one did (the model's last float bits depend on how its inputs are batched).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, require
from mmbright_core.rerank.base import Asked, Candidate, ImageStore, Reranked, RerankQuery
from mmbright_core.retrieval.backends.code_gate import gate, load_keyword, no_prompt
from mmbright_core.retrieval.backends.sentence_models import cannot_load, model_identity
from mmbright_core.retrieval.base import model_label
from mmbright_core.retrieval.dual.textcap import DEFAULT_TOKEN_BOUND, cap_text
from mmbright_core.task_table import TEXT_CORPUS_TASKS

_WHAT = "the cross-encoder reranker"
#: Model batches per ``predict`` call: a killed job loses at most this many batches' work.
SLICE_BATCHES = 16


class CrossEncoderReranker:
    """Pointwise scores of a sentence-transformers cross-encoder.

    Args:
        model: A hub name (in the local cache) or a local folder.
        revision: The hub revision, if pinned.
        max_length: Token truncation of each (query, passage) input (default: the model's).
        batch_size: Pairs per forward pass.
        device: Torch device (default: what sentence-transformers picks).
        trust_remote_code: The opt-in to the model's hub code (``--trust-remote-code``).

    Raises:
        InputError: The model runs hub code without the opt-in or where the operator
            forbids it (:func:`~mmbright_core.retrieval.backends.code_gate.gate`).
    """

    tasks = TEXT_CORPUS_TASKS

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        max_length: int | None = None,
        batch_size: int = 32,
        device: str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self.model, self.revision = model, revision
        self.trust = gate(model, revision, trust_remote_code)  # refused before any pair
        self.local = Path(model).expanduser().exists()
        self.name = f"cross-encoder:{model}"
        self.max_length, self.batch_size, self.device = max_length, batch_size, device
        self._encoder: Any = None

    def label(self) -> str:
        """Return the model's last path component."""
        return model_label(self.model, self.local)

    def settings(self) -> dict[str, Any]:
        """Return the model's identity (checkpoint hash for a local folder) and truncation."""
        identity = model_identity(self.model, self.revision, self.local, self.max_length)
        return {**identity, "backend": "sentence-transformers"}

    def load(self) -> Any:
        """Return the loaded ``CrossEncoder`` (loaded once).

        Raises:
            InputError: The model cannot be loaded (not a folder, not in the local cache).
        """
        if self._encoder is None:
            st = require("sentence_transformers", _WHAT, "text")
            trust = load_keyword(gate(self.model, self.revision, bool(self.trust)))
            try:
                with no_prompt(self.model):
                    self._encoder = st.CrossEncoder(
                        self.model,
                        revision=self.revision,
                        max_length=self.max_length,
                        device=self.device,
                        **trust,
                    )
            except OSError as err:
                raise cannot_load("the cross-encoder", self.model, err) from err
        return self._encoder

    def pairs(
        self,
        query: RerankQuery,
        candidates: Sequence[Candidate],
        capped: dict[str, str] | None = None,
    ) -> list[list[str]]:
        """Return the (query, passage) inputs, each passage capped to the truncation's reach.

        Args:
            query: The query.
            candidates: Its candidates.
            capped: Passage -> its capped start, kept across calls (a passage is a candidate
                of many queries: it is capped once).
        """
        tokens, known = self.token_bound(), {} if capped is None else capped
        texts = [c.text or "" for c in candidates]
        for text in texts:
            if text not in known:
                known[text] = cap_text(text, tokens)
        return [[query.text, known[text]] for text in texts]

    def token_bound(self) -> int:
        """Return the truncation, in tokens: the one asked for, else the loaded model's.

        A pair longer than that is cut by the tokenizer (longest first) to the same tokens
        whether its passage was capped or not; a tokenizer that sets no truncation reports
        a huge number, bounded here by :data:`DEFAULT_TOKEN_BOUND`.
        """
        bound = self.max_length or getattr(self.load(), "max_seq_length", None)
        if isinstance(bound, int) and 0 < bound < DEFAULT_TOKEN_BOUND:
            return bound
        return DEFAULT_TOKEN_BOUND

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        """Score every candidate's passage against the query text."""
        return next(self.rerank_many([(query, candidates)], images))[1]

    def rerank_many(
        self, asked: Asked, images: ImageStore | None, known: Collection[int] = ()
    ) -> Iterator[tuple[int, Reranked]]:
        """Score the pairs of every query of ``asked`` together (see the module).

        Yields:
            ``(position, answer)`` for each query not in ``known``, once its pairs are scored.
        """
        spans, total = [], 0
        for _, candidates in asked:
            spans.append((total, total + len(candidates)))
            total += len(candidates)
        size = self.batch_size * SLICE_BATCHES
        slices = [range(start // size, math.ceil(end / size)) for start, end in spans]
        finishing: dict[int, list[int]] = {}  # slice -> the queries its end completes
        for position, (start, end) in enumerate(spans):
            if position in known:
                continue
            if start == end:
                yield position, Reranked.from_scores(())
                continue
            for part in slices[position]:
                finishing.setdefault(part, [])
            finishing[slices[position][-1]].append(position)
        pairs: list[list[str]] = [[]] * total  # built only where a slice is scored
        capped: dict[str, str] = {}
        for position, (query, candidates) in enumerate(asked):
            if any(part in finishing for part in slices[position]):
                pairs[spans[position][0] : spans[position][1]] = self.pairs(
                    query, candidates, capped
                )
        scores: list[float] = [0.0] * total
        for part in sorted(finishing):
            start = part * size
            scores[start : start + size] = self._scores(pairs[start : start + size])
            for position in finishing[part]:
                low, high = spans[position]
                yield position, Reranked.from_scores(scores[low:high])

    def _scores(self, pairs: list[list[str]]) -> list[float]:
        scores = self.load().predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        values = scores.reshape(len(pairs), -1)
        if values.shape[1] != 1:
            raise InputError(
                f"cross-encoder {self.model!r} gives {values.shape[1]} scores per pair",
                expected="a relevance model with one output (num_labels=1)",
                found=f"{values.shape[1]} labels",
            )
        return list(values[:, 0].tolist())

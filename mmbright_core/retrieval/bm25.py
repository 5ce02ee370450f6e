"""BM25 over passage text with ``bm25s``: the paper's lexical baseline (SPEC §6).

The published baseline is Lucene's BM25 (pyserini) with k1=0.9, b=0.4 and an English
analyzer; ``bm25s``'s ``lucene`` method computes the same formula. Like Lucene, a query
returns only documents sharing at least one term with it. Task 4 pairs are ranked by their
passage's text alone: pairs of one passage share its score and the ranking rule's doc id
order breaks their ties.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from mmbright_core.errors import InputError
from mmbright_core.retrieval.base import ImageSource, check_k, check_task, passage_id
from mmbright_core.retrieval.index import Groups, doc_positions, excluded_indices, top_k_array
from mmbright_core.types import TaskData

#: The token pattern of bm25s and scikit-learn: runs of two or more word characters.
TOKEN_PATTERN = r"(?u)\b\w\w+\b"


class BM25Retriever:
    """Lexical retrieval over passage text (tasks 1, 2 and 4).

    Args:
        k1: Term frequency saturation (Lucene default in the paper: 0.9).
        b: Length normalisation (0.4).
        stemmer: A PyStemmer language (``english``), or ``none`` for no stemming.
        stopwords: A stop word list known to bm25s (``english``), or ``none``.
        lowercase: Whether to lowercase before tokenising.
    """

    name = "bm25"
    tasks = frozenset({1, 2, 4})

    def __init__(
        self,
        k1: float = 0.9,
        b: float = 0.4,
        stemmer: str = "english",
        stopwords: str = "english",
        lowercase: bool = True,
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise InputError(
                "invalid BM25 parameters",
                expected="k1 >= 0 and 0 <= b <= 1",
                found=f"k1={k1}, b={b}",
            )
        self.k1, self.b = float(k1), float(b)
        self.stemmer, self.stopwords, self.lowercase = stemmer, stopwords, bool(lowercase)

    def label(self) -> str:
        """Return ``bm25`` (the official output folder name is ``run_bm25``)."""
        return "bm25"

    def settings(self) -> dict[str, Any]:
        """Return the BM25 parameters and analyzer settings."""
        return {
            "model": "bm25s-lucene",
            "k1": self.k1,
            "b": self.b,
            "stemmer": self.stemmer,
            "stopwords": self.stopwords,
            "lowercase": self.lowercase,
            "token_pattern": TOKEN_PATTERN,
        }

    def _tokenizer(self) -> Any:
        from bm25s.tokenization import Tokenizer

        stem = None
        if self.stemmer != "none":
            import Stemmer

            try:
                stem = Stemmer.Stemmer(self.stemmer).stemWord
            except KeyError as err:
                raise InputError(
                    "unknown stemmer language",
                    found=repr(self.stemmer),
                    hint=f"Known: {', '.join(Stemmer.algorithms())}, none.",
                ) from err
        stopwords = [] if self.stopwords == "none" else self.stopwords
        return Tokenizer(
            lower=self.lowercase, splitter=TOKEN_PATTERN, stopwords=stopwords, stemmer=stem
        )

    def index(self, corpus: Sequence[str]) -> BM25Index:
        """Tokenise and index ``corpus`` with this retriever's analyzer and parameters."""
        return BM25Index(corpus, self._tokenizer(), self.k1, self.b)

    def score_texts(self, corpus: Sequence[str], queries: Sequence[str]) -> Iterator[np.ndarray]:
        """Yield one float32 BM25 score array over ``corpus`` per query (see :class:`BM25Index`)."""
        return self.index(corpus).scores(queries)

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank passages (tasks 1-2) or pairs by passage text (Task 4) with BM25.

        Args:
            data: The task's data for one domain.
            source: Unused (BM25 reads text only).
            k: How many documents to keep per query, after exclusions.

        Returns:
            query_id -> doc_id -> score.
        """
        check_task(self, data.task)
        check_k(k)
        return rank_by_text_scores(data, k, self.score_texts)


class BM25Index:
    """A bm25s index of a corpus, scoring queries with the tokenizer that built it.

    Args:
        corpus: The document texts.
        tokenizer: A bm25s ``Tokenizer`` (its vocabulary is filled from ``corpus``).
        k1: Term frequency saturation.
        b: Length normalisation.
    """

    def __init__(self, corpus: Sequence[str], tokenizer: Any, k1: float, b: float) -> None:
        import bm25s

        self.size = len(corpus)
        self.tokenizer = tokenizer
        # allow_empty keeps empty passages indexable (they get the empty token); queries
        # drop it so that a query made only of stop words matches nothing, not empty passages.
        ids = tokenizer.tokenize(
            list(corpus), update_vocab=True, return_as="ids", show_progress=False
        )
        self.model = bm25s.BM25(k1=k1, b=b, method="lucene")
        self.model.index(tokenizer.to_tokenized_tuple(ids), show_progress=False)

    def scores(self, queries: Sequence[str]) -> Iterator[np.ndarray]:
        """Yield one float32 score array over the corpus per query, in order."""
        tokens = self.tokenizer.tokenize(
            list(queries),
            update_vocab=False,
            return_as="string",
            show_progress=False,
            allow_empty=False,
        )
        for query_tokens in tqdm(tokens, desc="bm25 queries", unit="q", leave=False, disable=None):
            token_ids = self.model.get_tokens_ids(query_tokens)
            if token_ids:
                yield self.model.get_scores_from_ids(token_ids)
            else:
                yield np.zeros(self.size, dtype=np.float32)


def rank_by_text_scores(data: TaskData, k: int, score_texts: Any) -> dict[str, dict[str, float]]:
    """Score each distinct passage once with ``score_texts`` and cut every query's ranking.

    Args:
        data: The task's data (passages, or Task 4 pairs grouped by passage).
        k: The per-query cut, applied after exclusions.
        score_texts: ``(corpus texts, query texts) -> [score array per query]``.

    Returns:
        query_id -> doc_id -> score; documents scoring 0 or less are left out.
    """
    if not data.corpus or not data.queries:
        return {q.query_id: {} for q in data.queries}
    groups = Groups.from_keys([passage_id(d.doc_id) for d in data.corpus])
    first = groups.members[groups.offsets[:-1]]
    texts = [data.corpus[i].text for i in first]
    doc_ids = np.array([d.doc_id for d in data.corpus])
    query_ids = [q.query_id for q in data.queries]
    exclude = excluded_indices(query_ids, data.excluded, doc_positions(doc_ids.tolist()))
    scores = score_texts(texts, [q.text for q in data.queries])
    return {
        query_id: top_k_array(
            doc_ids,
            unit_scores[groups.unit_of_doc].astype(np.float64),
            k,
            exclude[i],
            min_score=0.0,
        )
        for i, (query_id, unit_scores) in enumerate(zip(query_ids, scores, strict=True))
    }

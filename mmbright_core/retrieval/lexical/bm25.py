"""BM25 as the official baseline computes it.

The formula is in docs/protocol.md, The baselines against the official harness.

The official harness (xlang-ai/BRIGHT ``retrievers.py`` and mm-bright/MM-BRIGHT
``src/retrievers/task1_text.py``, both ``retrieval_bm25``) analyses passages and queries with
pyserini's default Lucene analyzer, builds a gensim ``Dictionary`` over the analysed corpus,
weighs the corpus AND the query's bag of words with gensim's ``LuceneBM25Model(k1=0.9,
b=0.4)`` and scores with a plain dot product (``SparseMatrixSimilarity`` with both
normalisations off). In gensim 4.x (``gensim/models/bm25model.py``) a term of a text of ``n``
tokens with frequency ``tf`` weighs ``idf * tf / (tf + k1 * (1 - b + b * n / avgdl))`` with
``idf = ln(N + 1) - ln(df + 0.5)`` and ``avgdl`` = corpus tokens / ``N``; ``doc2bow`` drops
query terms the dictionary lacks before the query's length ``n`` is counted. So a shared term
adds ``idf**2 * sat(query tf) * sat(passage tf)``: this is ``scoring="gensim"``, the default.

``scoring="lucene"`` is Lucene's own BM25 over the same analysis (``idf = ln(1 + (N - df +
0.5) / (df + 0.5))`` once, each occurrence of a query term adding again, as Lucene's
``BM25Similarity`` does for a query with a repeated term; document lengths exact, where
Lucene stores them in one lossy byte). It ranks long queries differently and is offered for
comparison only.

Both formulas are a dot product of one sparse matrix, the passages' saturated term
frequencies, with a per-query term vector, so one index serves both and every task: tasks 1,
2 and 4 share a domain's passages, and the index
(:mod:`~mmbright_core.retrieval.lexical.bm25_index`, checked against its recorded checksums when
read) is cached on disk by the passages' content, the analyzer and ``k1``/``b`` (see
:meth:`BM25Retriever.index`).

Like the official code, every passage gets a score, zero included, so a query with fewer
than ``k`` matching passages is filled up with zero-scoring ones (see
:func:`~mmbright_core.retrieval.search.index.top_k_array` for which ones).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.base import (
    check_k,
    check_task,
    passage_id,
)
from mmbright_core.retrieval.cache.store import default_cache_dir, settings_key
from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer
from mmbright_core.retrieval.lexical.bm25_explain import explain_lexical
from mmbright_core.retrieval.lexical.bm25_index import BM25Index
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.index import doc_positions, excluded_indices, top_k_array
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mmbright_core.retrieval.base import RebuildContext, RunConfig
    from mmbright_core.retrieval.explanation import Attribution, Question

#: The query weightings: the official one (gensim's, applied to the query too) and Lucene's.
SCORINGS = ("gensim", "lucene")


class BM25Retriever:
    """Lexical retrieval over passage text (tasks 1, 2 and 4).

    Args:
        k1: Term frequency saturation (official: 0.9).
        b: Length normalisation (official: 0.4).
        scoring: ``gensim`` (the official formula, default) or ``lucene`` (Lucene's BM25).
        cache_dir: Where built indexes are kept (default: ``$MMBRIGHT_CACHE`` or
            ``~/.cache/mmbright``); ``none`` keeps them in memory only.
    """

    name = "bm25"
    tasks = BACKENDS["bm25"].tasks

    def __init__(
        self, k1: float = 0.9, b: float = 0.4, scoring: str = "gensim", cache_dir: str | None = None
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise InputError(
                "invalid BM25 parameters",
                expected="k1 >= 0 and 0 <= b <= 1",
                found=f"k1={k1}, b={b}",
            )
        if scoring not in SCORINGS:
            raise UnknownNameError("BM25 scoring", scoring, SCORINGS)
        self.k1, self.b, self.scoring = float(k1), float(b), scoring
        self.analyzer = EnglishAnalyzer()
        self.cache_root = None if cache_dir == "none" else default_cache_dir(cache_dir) / "bm25"
        self._last: tuple[str, BM25Index] | None = None

    def label(self) -> str:
        """Return ``bm25``, the name its output folders carry (``run_it2t_bm25``...)."""
        return "bm25"

    def settings(self) -> dict[str, Any]:
        """Return the formula, its parameters and the analyzer."""
        analyzer = self.analyzer.settings()
        return {
            "model": "bm25",
            "scoring": self.scoring,
            "k1": self.k1,
            "b": self.b,
            "analyzer": analyzer["name"],
            "analyzer_settings": settings_key(analyzer)[:16],
        }

    def index(self, corpus: Sequence[str]) -> BM25Index:
        """Return the index of ``corpus``: the last one built, a cached one, or a new one.

        The key is the sha256 of the analyzer's settings, ``k1``, ``b`` and every text in
        order, so a change to any of them builds a new index, never a stale one.
        """
        digest = hashlib.sha256(settings_key(self._index_settings()).encode())
        for text in corpus:
            data = text.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
        key = digest.hexdigest()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        self._last = None  # another domain's index must not sit beside the new one
        folder = None if self.cache_root is None else self.cache_root / key
        index = BM25Index.load(folder) if folder is not None else None
        if index is None:
            index = BM25Index.from_texts(corpus, self.analyzer, self.k1, self.b)
            if folder is not None:
                index.save(folder)
        self._last = (key, index)
        return index

    def _index_settings(self) -> dict[str, Any]:
        return {"k1": self.k1, "b": self.b, "analyzer": self.analyzer.settings()}

    def score_texts(self, corpus: Sequence[str], queries: Sequence[str]) -> Iterator[np.ndarray]:
        """Yield one float64 BM25 score array over ``corpus`` per query."""
        index = self.index(corpus)
        for query in tqdm(queries, desc="bm25 queries", unit="q", leave=False, disable=None):
            yield index.scores(self.analyzer.analyze(query), self.scoring)

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

    def explain_scores(self, question: Question) -> Mapping[str, Attribution]:
        """Split each document's BM25 score into its query terms' contributions."""
        return explain_lexical(self.analyzer, self.scoring, self.index, question)


def rank_by_text_scores(data: TaskData, k: int, score_texts: Any) -> dict[str, dict[str, float]]:
    """Score each distinct passage once with ``score_texts`` and cut every query's ranking.

    Args:
        data: The task's data (passages, or Task 4 pairs grouped by passage).
        k: The per-query cut, applied after exclusions.
        score_texts: ``(corpus texts, query texts) -> [score array per query]``.

    Returns:
        query_id -> doc_id -> score, zero-scoring documents included as the official code
        keeps them.
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
            doc_ids, unit_scores[groups.unit_of_doc].astype(np.float64), k, exclude[i]
        )
        for i, (query_id, unit_scores) in enumerate(zip(query_ids, scores, strict=True))
    }


def rebuild(config: RunConfig, options: dict[str, Any], context: RebuildContext) -> dict[str, Any]:
    """Return the options that rebuild a run's ``bm25`` from its configuration."""
    return {
        "k1": options["k1"],
        "b": options["b"],
        "scoring": options["scoring"],
        "cache_dir": context.cache_dir,
    }

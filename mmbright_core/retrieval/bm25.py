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
2 and 4 share a domain's passages, and the index is cached on disk by the passages' content,
the analyzer and ``k1``/``b`` (see :meth:`BM25Retriever.index`). The index folder's
``checks.json`` records each file's size, checksum, shape and dtype; an index that does not
match it (a shuffled ``data.npy``, a truncated file) is reported with its path, deleted and
built again (:mod:`mmbright_core.retrieval.verify`), never scored with.

Like the official code, every passage gets a score, zero included, so a query with fewer
than ``k`` matching passages is filled up with zero-scoring ones (see
:func:`~mmbright_core.retrieval.index.top_k_array` for which ones).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, count
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from tqdm.auto import tqdm

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.analyzer import EnglishAnalyzer
from mmbright_core.retrieval.base import (
    ImageSource,
    Retriever,
    check_k,
    check_task,
    passage_id,
)
from mmbright_core.retrieval.cache import default_cache_dir, settings_key
from mmbright_core.retrieval.index import Groups, doc_positions, excluded_indices, top_k_array
from mmbright_core.retrieval.verify import check_files, file_record, npy_layout, report_damaged
from mmbright_core.types import Query, TaskData

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RunConfig
    from mmbright_core.retrieval.rebuild import RebuildContext

#: The query weightings: the official one (gensim's, applied to the query too) and Lucene's.
SCORINGS = ("gensim", "lucene")
# Passages analysed per block while the index is built: bounds the memory the token lists
# take (a block of physics-sized passages holds a few million tokens).
_BLOCK = 8192
_FILES = ("terms.txt", "indptr.npy", "indices.npy", "data.npy", "stats.npy")
_CHECKS = "checks.json"


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
    tasks = frozenset({1, 2, 4})

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
            index = BM25Index.build(self.analyzer.analyze_many(corpus), self.k1, self.b)
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

    def explain_scores(
        self,
        data: TaskData,
        source: ImageSource | None,
        query: Query,
        positions: dict[str, int],
        through: Retriever | None = None,
        rewrite: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Split each document's BM25 score into its query terms' contributions.

        ``through``: the OCR retriever whose augmented query this one scored, if any.
        ``rewrite``: ``(original text, LLM answer)`` when ``query`` is a rewritten one.
        """
        from mmbright_core.analysis.attribution_lexical import explain_lexical

        return explain_lexical(through or self, data, source, query, positions, rewrite)  # type: ignore[arg-type]


@dataclass(frozen=True)
class BM25Index:
    """Saturated term frequencies of a corpus, term-major, with the statistics BM25 needs.

    Attributes:
        terms: term -> row of ``postings``.
        postings: A ``(terms, passages)`` CSR matrix of ``tf / (tf + k1 * (1 - b + b * n /
            avgdl))`` (float32, as gensim's ``SparseMatrixSimilarity`` stores its index).
        size: The number of passages (empty ones included, as gensim counts them).
        avgdl: Mean analysed length of a passage.
        k1: Term frequency saturation.
        b: Length normalisation.
    """

    terms: dict[str, int]
    postings: sparse.csr_matrix
    size: int
    avgdl: float
    k1: float
    b: float

    @classmethod
    def build(cls, analysed: Iterable[list[str]], k1: float, b: float) -> BM25Index:
        """Index analysed passages (one token list each, in corpus order)."""
        terms: defaultdict[str, int] = defaultdict(count().__next__)
        blocks = _Blocks()
        for block in _chunks(analysed):
            blocks.add(block, terms)
        by_passage = blocks.saturated(k1, b, len(terms))
        # Term-major for queries: a query reads the rows of its terms only.
        postings = by_passage.T.tocsr()
        return cls(dict(terms), postings, by_passage.shape[0], blocks.avgdl, k1, b)

    def idf(self, rows: npt.NDArray[np.intp], scoring: str) -> npt.NDArray[np.float64]:
        """Return the idf of the terms at ``rows`` under ``scoring``'s formula."""
        df = np.diff(self.postings.indptr)[rows].astype(np.float64)
        if scoring == "lucene":
            return np.log1p((self.size - df + 0.5) / (df + 0.5))
        return np.log(self.size + 1.0) - np.log(df + 0.5)

    def query_weights(
        self, tokens: Sequence[str], scoring: str
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """Return the rows of a query's known terms and the weight each multiplies by.

        ``gensim``: ``idf**2 * sat(query tf)``, the query's length counting known terms only
        (``doc2bow`` drops the others first); ``lucene``: ``idf * query tf``.
        """
        known = [self.terms[t] for t in tokens if t in self.terms]
        rows, tf = np.unique(np.asarray(known, dtype=np.intp), return_counts=True)
        idf = self.idf(rows, scoring)
        if scoring == "lucene":
            return rows, idf * tf
        tf = tf.astype(np.float64)
        norm = 1 - self.b + self.b * tf.sum() / self.avgdl
        return rows, idf * idf * tf / (tf + self.k1 * norm)

    def scores(self, tokens: Sequence[str], scoring: str) -> npt.NDArray[np.float64]:
        """Return an analysed query's score for every passage (0 where nothing is shared)."""
        rows, weights = self.query_weights(tokens, scoring)
        if not len(rows):
            return np.zeros(self.size)
        return np.asarray(self.postings[rows].T @ weights, dtype=np.float64)

    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` (built aside, then renamed into place whole)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            ordered = sorted(self.terms, key=self.terms.__getitem__)
            (tmp / "terms.txt").write_text("\n".join(ordered), encoding="utf-8")
            records = {"terms.txt": file_record(tmp / "terms.txt")}
            stats = np.array([self.size, self.avgdl, self.k1, self.b])
            postings = self.postings
            for name, array in zip(
                _FILES[1:], (postings.indptr, postings.indices, postings.data, stats), strict=True
            ):
                np.save(tmp / name, array)
                records[name] = file_record(tmp / name, array)
            (tmp / _CHECKS).write_text(json.dumps(records, sort_keys=True), encoding="utf-8")
            os.replace(tmp, folder)
        except OSError:
            # Another run saved the same index first (the rename fails on a non-empty
            # folder), or the disk is full: the index in memory is still good.
            shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, folder: Path) -> BM25Index | None:
        """Read an index written by :meth:`save` (memory-mapped), or None if there is none.

        An index that does not match its checks (or lacks them) is reported, deleted, and
        None returned, so that it is built again.
        """
        if not folder.is_dir():
            return None
        problem = _index_problem(folder)
        if problem is not None:
            report_damaged(folder, problem)
            shutil.rmtree(folder, ignore_errors=True)
            return None
        text = (folder / "terms.txt").read_text(encoding="utf-8")
        terms = {term: i for i, term in enumerate(text.split("\n"))} if text else {}
        size, avgdl, k1, b = np.load(folder / "stats.npy").tolist()
        arrays = [np.load(folder / name, mmap_mode="r") for name in _FILES[1:4]]
        postings = sparse.csr_matrix(
            (arrays[2], arrays[1], arrays[0]), shape=(len(terms), int(size)), copy=False
        )
        return cls(terms, postings, int(size), avgdl, k1, b)


def _index_problem(folder: Path) -> str | None:
    """Why an index folder cannot be used (its files against their checks), or None."""
    try:
        records = json.loads((folder / _CHECKS).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"{_CHECKS} is unreadable ({type(err).__name__})"
    problem = check_files(folder, records, _FILES)
    if problem is not None:
        return problem
    # The shapes must fit one another too (one column index per value).
    indptr, indices, data = (npy_layout(folder / name)[0] for name in _FILES[1:4])
    if indices != data or len(indptr) != 1:
        return f"inconsistent shapes: indptr {indptr}, indices {indices}, data {data}"
    return None


def _chunks(analysed: Iterable[list[str]]) -> Iterator[list[list[str]]]:
    block: list[list[str]] = []
    for tokens in analysed:
        block.append(tokens)
        if len(block) == _BLOCK:
            yield block
            block = []
    if block:
        yield block


class _Blocks:
    """Passage-major term counts, appended block by block (CSR parts: no COO, no re-sort)."""

    def __init__(self) -> None:
        self.lengths: list[np.ndarray] = []
        self.per_passage: list[np.ndarray] = []
        self.indices: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []

    def add(self, block: list[list[str]], terms: defaultdict[str, int]) -> None:
        """Count one block's terms; ``terms`` numbers a new term on first sight.

        The tokens flow from the lists to the id array through C-level iterators only.
        """
        sizes = np.fromiter(map(len, block), dtype=np.int64, count=len(block))
        ids = np.fromiter(
            map(terms.__getitem__, chain.from_iterable(block)), dtype=np.int64, count=sizes.sum()
        )
        passage = np.repeat(np.arange(len(block), dtype=np.int64), sizes)
        pairs, tf = np.unique((passage << 32) | ids, return_counts=True)  # passage, then term
        self.lengths.append(sizes)
        self.per_passage.append(np.bincount(pairs >> 32, minlength=len(block)))
        self.indices.append((pairs & 0xFFFFFFFF).astype(np.int32))
        self.counts.append(tf.astype(np.float32))

    @property
    def avgdl(self) -> float:
        """Mean analysed length (gensim: corpus tokens / passages, empty passages counted)."""
        total = sum(int(n.sum()) for n in self.lengths)
        size = sum(len(n) for n in self.lengths)
        return total / size if size and total else 1.0

    def saturated(self, k1: float, b: float, terms: int) -> sparse.csr_matrix:
        """Return the (passages, terms) matrix of ``tf / (tf + k1 * (1 - b + b * n / avgdl))``.

        The weights are computed in float64 and stored in float32, as gensim's index does.
        """
        avgdl = self.avgdl
        length = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
        indptr = np.zeros(len(length) + 1, dtype=np.int64)
        if self.per_passage:
            np.cumsum(np.concatenate(self.per_passage), out=indptr[1:])
        indices = np.concatenate(self.indices) if self.indices else np.zeros(0, np.int32)
        data = np.concatenate(self.counts) if self.counts else np.zeros(0, np.float32)
        self.indices, self.counts, self.per_passage = [], [], []
        norm = k1 * (1 - b + b * length / avgdl)
        for start in range(0, len(length), _BLOCK):  # bounded float64 temporaries
            stop = min(start + _BLOCK, len(length))
            low, high = indptr[start], indptr[stop]
            tf = data[low:high].astype(np.float64)
            tf /= tf + np.repeat(norm[start:stop], np.diff(indptr[start : stop + 1]))
            data[low:high] = tf
        return sparse.csr_matrix((data, indices, indptr), shape=(len(length), terms))


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

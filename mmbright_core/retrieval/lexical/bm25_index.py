"""A BM25 index: a corpus's saturated term frequencies, term-major, cached on disk.

The formula is in docs/protocol.md, The baselines against the official harness; the retriever
that builds and queries an index is :class:`~mmbright_core.retrieval.lexical.bm25.BM25Retriever`.
Both weightings (``gensim`` and ``lucene``) are a dot product of the one sparse matrix kept
here, the passages' saturated term frequencies, with a per-query term vector, so one index
serves both. Saved to a folder, the index's ``checks.json`` records each file's size,
checksum, shape and dtype; an index that does not match it (a shuffled ``data.npy``, a
truncated file) is reported with its path, deleted and built again
(:mod:`mmbright_core.retrieval.cache.verify`), never scored with.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, count, repeat
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse

from mmbright_core.retrieval.cache.verify import (
    check_files,
    file_record,
    npy_layout,
    report_damaged,
)
from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer, SplitBatch

# Passages analysed per block while the index is built: bounds the memory the token lists
# take (a block of physics-sized passages holds a few million tokens).
_BLOCK = 8192
_FILES = ("terms.txt", "indptr.npy", "indices.npy", "data.npy", "stats.npy")
_CHECKS = "checks.json"


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
            sizes = np.fromiter(map(len, block), dtype=np.int64, count=len(block))
            # The tokens flow from the lists to the id array through C-level iterators only.
            ids = map(terms.__getitem__, chain.from_iterable(block))
            passage = np.repeat(np.arange(len(block), dtype=np.int64), sizes)
            blocks.add(sizes, passage, np.fromiter(ids, dtype=np.int64, count=sizes.sum()))
        return cls._from_blocks(blocks, terms, k1, b)

    @classmethod
    def from_texts(
        cls, texts: Sequence[str], analyzer: EnglishAnalyzer, k1: float, b: float
    ) -> BM25Index:
        """Analyse and index passages, a block at a time, without a token list per passage.

        Gives the index :meth:`build` gives on ``analyzer.analyze_many(texts)``: each block
        is split at white space as arrays (:meth:`EnglishAnalyzer.split_batch`), each distinct
        piece of the corpus analysed and its terms numbered once, and the pieces expanded
        into term ids by numpy.
        """
        terms: defaultdict[str, int] = defaultdict(count().__next__)
        pieces = _PieceIds(analyzer, terms)
        blocks = _Blocks()
        for start in range(0, len(texts), _BLOCK):
            batch = analyzer.split_batch(texts[start : start + _BLOCK])
            blocks.add(*pieces.block_terms(batch))
        return cls._from_blocks(blocks, terms, k1, b)

    @classmethod
    def _from_blocks(cls, blocks: _Blocks, terms: dict[str, int], k1: float, b: float) -> BM25Index:
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


class _PieceIds:
    """Every distinct piece of a corpus seen so far, numbered, with its terms' ids.

    Attributes:
        sizes: Per piece, how many terms it has.
        single: Per piece, the id of its one term, or -1 if it has none or several.
        first: Per piece, where its term ids start in ``flat``.
        flat: Every piece's term ids, one piece after another.
    """

    def __init__(self, analyzer: EnglishAnalyzer, terms: defaultdict[str, int]) -> None:
        self._analyzer, self._terms = analyzer, terms
        self._code: dict[str, int] = {}
        self.sizes = np.zeros(0, np.int32)
        self.single = np.zeros(0, np.int32)
        self.first = np.zeros(0, np.int64)
        self.flat = np.zeros(0, np.int32)

    def codes(self, batch: SplitBatch) -> npt.NDArray[np.int32]:
        """The number of each of the batch's distinct pieces, analysing the new ones."""
        code, distinct = self._code, batch.distinct
        found = np.fromiter(map(code.get, distinct, repeat(-1)), np.int32, len(distinct))
        new_at = np.flatnonzero(found < 0)
        if new_at.size:
            new = [distinct[i] for i in new_at.tolist()]
            terms = self._analyzer.piece_terms(new)
            numbered = [tuple(map(self._terms.__getitem__, t)) for t in terms]
            sizes = np.fromiter(map(len, numbered), np.int32, len(numbered))
            ids = np.fromiter(chain.from_iterable(numbered), np.int32, int(sizes.sum()))
            starts = np.cumsum(sizes) - sizes
            single = np.full(sizes.size, -1, np.int32)
            single[sizes == 1] = ids[starts[sizes == 1]]
            self.single = np.concatenate((self.single, single))
            first = starts + self.flat.size
            self.first = np.concatenate((self.first, first))
            self.sizes = np.concatenate((self.sizes, sizes))
            self.flat = np.concatenate((self.flat, ids))
            found[new_at] = np.arange(len(code), len(code) + len(new))
            code.update(zip(new, count(len(code))))
        return found

    def block_terms(
        self, batch: SplitBatch
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """A batch's terms: tokens per passage, and each token's passage and term id.

        Most pieces are one term, whose id is one look-up; the others (a stop word gives
        none, "e-mail" two) are expanded into their terms' ids after them.
        """
        codes = self.codes(batch)[batch.pieces]
        passage = np.repeat(
            np.arange(len(batch.offsets) - 1, dtype=np.int32), np.diff(batch.offsets)
        )
        per_piece = self.sizes[codes]
        many = np.concatenate(([0], np.cumsum(per_piece)))
        sizes = many[batch.offsets[1:]] - many[batch.offsets[:-1]]
        single = self.single[codes]
        one = single >= 0
        ids, owners = single[one], passage[one]
        several = np.flatnonzero(per_piece > 1)
        if not several.size:
            return sizes, owners, ids
        count_of = per_piece[several]
        ends = np.cumsum(count_of)
        within = np.arange(int(ends[-1])) - np.repeat(ends - count_of, count_of)
        more = self.flat[np.repeat(self.first[codes[several]], count_of) + within]
        owned = np.repeat(passage[several], count_of)
        return sizes, np.concatenate((owners, owned)), np.concatenate((ids, more))


class _Blocks:
    """Passage-major term counts, appended block by block (CSR parts: no COO, no re-sort)."""

    def __init__(self) -> None:
        self.lengths: list[np.ndarray] = []
        self.per_passage: list[np.ndarray] = []
        self.indices: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []

    def add(
        self,
        sizes: npt.NDArray[np.int64],
        passage: npt.NDArray[np.integer[Any]],
        ids: npt.NDArray[np.integer[Any]],
    ) -> None:
        """Count one block's terms.

        Args:
            sizes: How many tokens each passage of the block has.
            passage: Each token's passage, in the block.
            ids: Each token's term id, in the same (any) order.
        """
        width = int(ids.max()) + 1 if ids.size else 1
        # One key per (passage, term), sorted by passage then term; 32-bit keys, which sort
        # twice as fast, whenever the block's passages and terms fit them.
        kind: type[np.signedinteger[Any]] = np.int32 if len(sizes) * width < 2**31 else np.int64
        keys = passage.astype(kind, copy=False) * width + ids.astype(kind, copy=False)
        pairs, tf = np.unique(keys, return_counts=True)
        self.lengths.append(sizes)
        self.per_passage.append(np.bincount(pairs // width, minlength=len(sizes)))
        self.indices.append((pairs % width).astype(np.int32))
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

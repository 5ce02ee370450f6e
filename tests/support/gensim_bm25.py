"""The official BM25 recipe through gensim (BRIGHT retrievers.py retrieval_bm25), built once.

The tests check this package's BM25 against it and a benchmark times the two side by side.
"""

from __future__ import annotations

from gensim.corpora import Dictionary
from gensim.models import LuceneBM25Model
from gensim.similarities import SparseMatrixSimilarity


def official_index(
    corpus_tokens: list[list[str]],
) -> tuple[Dictionary, LuceneBM25Model, SparseMatrixSimilarity]:
    """gensim's Lucene BM25 (k1 0.9, b 0.4) over analysed passages: dictionary, model, index.

    A query's scores are ``index[model[dictionary.doc2bow(tokens)]]``.
    """
    dictionary = Dictionary(corpus_tokens)
    model = LuceneBM25Model(dictionary=dictionary, k1=0.9, b=0.4)
    index = SparseMatrixSimilarity(
        model[list(map(dictionary.doc2bow, corpus_tokens))],
        num_docs=len(corpus_tokens),
        num_terms=len(dictionary),
        normalize_queries=False,
        normalize_documents=False,
    )
    return dictionary, model, index

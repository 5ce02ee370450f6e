"""Lexical retrieval: the Lucene analysis, the BM25 index and retriever, and BM25's explanation.

``analyzer.py`` is the analysis the official harness's Pyserini runs (with its tokenizer in
``tokenizer.py``), ``bm25_index.py`` the inverted index built from it, ``bm25.py`` the
retriever, and ``bm25_explain.py`` each query term's share of a document's score.
"""

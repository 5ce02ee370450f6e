"""Time explaining the top 10 of one long BM25 query against scoring that query.

A synthetic physics-sized domain (``synthetic_texts`` of ``bench_bm25.py``: Zipf words, 338,291
passages by default, the largest domain's size) is indexed first; then one 200-word query is
(a) scored the plain way, as a run scores it (``BM25Retriever.score_texts``: the index found
by the corpus's content hash, every passage scored, the top 10 cut), and (b) explained
(``explain``: the same index look-up, the query's weights, the postings of the 10 passages,
their analysis and snippets). Both include the index look-up, which hashes the corpus; it is
also timed alone. Each timing is the best of ``--repeat`` runs.

Run: ``python benchmarks/bench_attribution.py [--passages 338291] [--words 80] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_bm25 import PHYSICS, synthetic_texts  # the script's folder is on sys.path
from common import best

from mmbright_core.analysis.attribution import LexicalAttribution, explain
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever
from mmbright_core.retrieval.search.index import top_k_array
from mmbright_core.types import Document, Query, TaskData


def main() -> None:
    """Build the index, then time the plain scoring and the explanation of one query."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=PHYSICS)
    parser.add_argument("--words", type=int, default=80, help="mean words per passage")
    parser.add_argument("--query-words", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    texts = synthetic_texts(args.passages, args.words, seed=0)
    (query_text,) = synthetic_texts(1, args.query_words, seed=1)
    data = TaskData(
        task=2,
        domain="physics",
        protocol="paper",
        queries=(Query("q", "physics", query_text),),
        corpus=tuple(Document(f"physics/{i:08x}_1.txt", t) for i, t in enumerate(texts)),
        qrels={},
        excluded={},
    )
    ids = np.array([d.doc_id for d in data.corpus])
    retriever = BM25Retriever(cache_dir="none")
    start = time.perf_counter()
    retriever.index(texts)
    print(f"index: {args.passages:,} passages of ~{args.words} words, built in "
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip

    def plain() -> dict[str, float]:
        (scores,) = retriever.score_texts(texts, [query_text])
        return top_k_array(ids, scores, 10)

    top = plain()
    lookup = best(args.repeat, lambda: retriever.index(texts))
    scoring = best(args.repeat, plain)
    explaining = best(args.repeat, lambda: explain(retriever, data, None, "q", list(top)))
    explained = explain(retriever, data, None, "q", list(top))
    for doc_id, score in top.items():
        found = explained[doc_id]
        if not isinstance(found, LexicalAttribution) or abs(found.score - score) > 1e-6 * score:
            raise SystemExit(f"{doc_id}: explained {found}, scored {score}")
    terms = len(set(retriever.analyzer.analyze(query_text)))
    print(f"query: {args.query_words} words, {terms} distinct terms; best of {args.repeat}")
    print(f"index look-up (corpus hash)  {lookup * 1000:8.1f} ms")
    print(f"plain scoring + top 10       {scoring * 1000:8.1f} ms")
    print(f"explain top 10               {explaining * 1000:8.1f} ms "
          f"(x{explaining / scoring:.2f} the scoring)")  # fmt: skip


if __name__ == "__main__":
    main()

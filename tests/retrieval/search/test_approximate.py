"""The widening search: it asks for more until no unseen unit could enter a query's cut."""

from __future__ import annotations

import numpy as np

from mmbright_core.retrieval.search.approximate import settled_candidates


class BruteForce:
    """An exact stand-in for a faiss index, recording how many results each call asked for."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors
        self.widths: list[int] = []

    def __len__(self) -> int:
        return len(self.vectors)

    def search(self, queries, n: int):
        self.widths.append(n)
        scores = np.asarray(queries, dtype=np.float32) @ self.vectors.T
        order = np.argsort(-scores, axis=1, kind="stable")[:, :n]
        return np.take_along_axis(scores, order, axis=1), order.astype(np.int64)


def test_excluded_top_documents_widen_the_search_until_the_cut_is_settled():
    # 40 documents on a line of falling scores; the query excludes its 30 best.
    vectors = np.linspace(1.0, 0.0, 40, dtype=np.float32)[:, None]
    index = BruteForce(vectors)
    exclude = [np.arange(30, dtype=np.int64)]
    ((docs, values),) = settled_candidates(index, np.ones((1, 1), np.float32), exclude, None, 5)
    assert index.widths == [40]  # k + 30 exclusions + 16 is past the corpus: one exhaustive ask
    assert docs.tolist() == list(range(30, 40)) and values[0] == vectors[30, 0]


def test_a_cut_tied_with_unseen_scores_asks_again_four_times_wider():
    # 100 documents; the first 40 all score 1.0, so the 21st best ties everything unseen.
    vectors = np.concatenate([np.ones(40), np.zeros(60)]).astype(np.float32)[:, None]
    index = BruteForce(vectors)
    none = [np.array([], dtype=np.int64)]
    ((docs, _),) = settled_candidates(index, np.ones((1, 1), np.float32), none, None, 5)
    assert index.widths == [21, 84]
    assert docs.tolist() == sorted(docs.tolist()) and set(range(40)) <= set(docs.tolist())

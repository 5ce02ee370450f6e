"""Search over vectors: the top-k cut, exact and approximate indexes, and indexed units.

``index.py`` is the one top-k cut and the vector index, ``exact.py`` the exactly rounded
search, ``approximate.py`` faiss' HNSW and IVF indexes, and ``groups.py`` the indexed units
and the documents they stand for (a Task 4 pair's two halves, a passage's chunks).
"""

"""The dual encoder: any text and image embedder run under the official protocol.

``embedder.py`` is the model-side protocol a backend implements, ``encoder.py`` the retriever
(documents, the fused queries, the cached raw vectors and the text and image parts of a
fused score), ``options.py`` the options a backend hands it, and ``fusion.py`` the named
rules that fuse a query's text and image vectors.
"""

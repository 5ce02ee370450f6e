"""The dual encoder: any text and image embedder run under the official protocol.

``embedder.py`` is the model-side protocol a backend implements, ``encoder.py`` the retriever
(documents, the fused queries, the cached raw vectors, the text and image parts of a fused
score, and ``DualOptions``, the options a backend hands it), ``encoders.py`` a retriever's
corpus jobs and the encoder of each role (what the Ray engine runs), ``textcap.py`` the one
text cap, and ``fusion.py`` the named rules that fuse a query's text and image vectors.
"""

"""The embedding cache: content keys, its files and the check of every entry.

``store.py`` keys vectors by content and settings, ``shards.py`` writes and reads the
``.npy`` shards, and ``verify.py`` checks every entry before it is trusted.
"""

"""The hub-code backend: models that run their own code from the hub, behind one interface table.

``interfaces.py`` is the backend (the table of calls into a model's own code), ``shared.py``
what those calls share, and ``towers.py``, ``bge.py``, ``st.py`` and ``text.py`` the calls of
each model family.
"""

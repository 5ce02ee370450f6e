"""Running a retriever: a task's domains written as the official folders, and runs rebuilt.

``task_run.py`` runs a task (``run_task``), ``folders.py`` names its folders, ``stored.py``
reuses a stored domain, ``engines.py`` and ``ray_engine.py`` say where the corpus is
encoded, ``rewritten.py`` runs any retriever on a rewritten query set, and
``rebuild.py`` rebuilds a run's retriever from its ``config.json``.
"""

"""Retrieval backends behind one protocol, found by name, and the runner that writes outputs.

``get_retriever("bm25")`` builds a backend; ``run_task`` runs it over a task's domains.
Backends import their heavy packages only when built (see :mod:`.registry`).
"""

from mmbright_core.retrieval.base import Retriever, RunConfig
from mmbright_core.retrieval.registry import available_retrievers, get_retriever, register_retriever

__all__ = [
    "Retriever",
    "RunConfig",
    "available_retrievers",
    "get_retriever",
    "register_retriever",
]

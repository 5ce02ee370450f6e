"""Second-stage reranking of a first-stage run (docs/protocol.md, "Two-stage runs").

:mod:`~mmbright_core.rerank.base` holds the contract every reranker meets;
``build(spec, **options)`` (:mod:`~mmbright_core.rerank.registry`) makes one from
``cross-encoder:NAME``, ``mteb:NAME``, ``llm:MODEL`` or ``MODULE:FACTORY``. ``llm:MODEL``
is made by ``mmbright_core.rerank.llm.llm_reranker(model, **options)``, imported only when
asked for (its options: ``endpoint``, ``mode`` and the client's), like every other factory
``factory(**options) -> Reranker``.
"""

from __future__ import annotations

from mmbright_core.rerank.base import Candidate, ImageStore, Reranked, Reranker, RerankQuery

__all__ = ["Candidate", "ImageStore", "RerankQuery", "Reranked", "Reranker"]

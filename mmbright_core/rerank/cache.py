"""Reranker answers on disk, keyed by everything that changes them.

Each answer is one entry of the package's answer cache
(:class:`~mmbright_core.retrieval.cache.answers.AnswerCache`: a small JSON file, written
atomically without fsync once the reranker has answered) named by the sha256 of the
reranker's settings, the query (task, domain, text, the sha256 of each of its images) and
its candidates in order (doc id, text, the sha256 of each image). A job killed at any point
therefore resumes with every answered query read back and nothing asked twice, and two
models, two prompts or two candidate lists never share an answer. An unreadable entry is
asked again, never trusted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from mmbright_core.rerank.base import Reranked
from mmbright_core.retrieval.cache.answers import AnswerCache
from mmbright_core.retrieval.cache.store import content_key, default_cache_dir, settings_key

#: The cache's folder under the package's cache root (``$MMBRIGHT_CACHE``, ``--cache-dir``).
FOLDER = "rerank"


def answer_key(
    settings: Mapping[str, Any], query: Mapping[str, Any], candidates: Sequence[Any]
) -> str:
    """Return the key of one answer: the sha256 of the settings, the query and the candidates.

    Args:
        settings: The reranker's settings.
        query: What identifies the query's content (task, domain, text, image digests).
        candidates: What identifies each candidate's content, in first-stage order.
    """
    content = {"reranker": settings_key(settings), "query": query, "candidates": candidates}
    return content_key(json.dumps(content, sort_keys=True, ensure_ascii=False))


class RerankCache:
    """The answers of every reranker, one file each, under ``<root>/rerank/<key[:2]>/``.

    Args:
        root: The cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.answers = AnswerCache(default_cache_dir(root), FOLDER, sort_keys=False)

    def get(self, key: str) -> Reranked | None:
        """Return the stored answer of ``key``, or None (absent or unreadable)."""
        return self.answers.get(key, _reranked)

    def put(self, key: str, answer: Reranked) -> None:
        """Store ``answer`` under ``key`` atomically."""
        entry = {
            "order": None if answer.order is None else list(answer.order),
            "scores": None if answer.scores is None else list(answer.scores),
            "ranked": None if answer.ranked is None else [list(pair) for pair in answer.ranked],
            "problem": answer.problem,
        }
        self.answers.put(key, entry)


def _reranked(data: Any) -> Reranked:
    # An entry written before rerankers could rank a part of the candidates has no "ranked".
    return Reranked(
        order=None if data["order"] is None else tuple(int(i) for i in data["order"]),
        scores=None if data["scores"] is None else tuple(map(float, data["scores"])),
        ranked=None
        if data.get("ranked") is None
        else tuple((int(i), float(v)) for i, v in data["ranked"]),
        problem=None if data["problem"] is None else str(data["problem"]),
    )

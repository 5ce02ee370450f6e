"""Answers kept on disk, keyed by everything that made them: the chat client's and the rerankers'.

:class:`AnswerCache` keeps each answer as one small JSON file,
``<root>/<folder>/<key[:2]>/<key>.json`` (two levels, so no folder holds millions of files),
written atomically (:mod:`mmbright_core.io.atomic`, without fsync: an answer can be asked
again) as soon as it arrives, so a job killed at any point keeps every answer received before
the kill and loses at most the requests in flight. An entry that cannot be read or decoded is
asked again, never trusted. What an entry holds is its user's: :class:`ChatCache` keeps the
chat answers under ``chat/``, :class:`~mmbright_core.rerank.cache.RerankCache` the rerankers'
under ``rerank/``.

A chat answer's key is the sha256 of the endpoint, the model, the sampling parameters and the
whole message list (prompt, query text and the images' data URLs): two models, two prompts or
two settings never share an answer, and an answer is reused for nothing but the very request
that produced it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.retrieval.cache.store import settings_key

#: The chat answers' folder under the cache root.
FOLDER = "chat"
FORMAT = "mmbright-chat-answer/1"

Answer = TypeVar("Answer")


class AnswerCache:
    """Answers as JSON files under ``<root>/<folder>/<key[:2]>/<key>.json``.

    Args:
        root: The cache root, or None to keep nothing.
        folder: The answers' folder under the root.
        sort_keys: Whether an entry's fields are written sorted (else in the order given).
    """

    def __init__(self, root: Path | None, folder: str, *, sort_keys: bool) -> None:
        self.folder = None if root is None else root / folder
        self.sort_keys = sort_keys

    def get(self, key: str, decode: Callable[[Any], Answer | None]) -> Answer | None:
        """Return ``decode`` of the entry of ``key`` (its JSON), or None.

        None also when there is no root, no entry, or an entry that cannot be read, is not
        JSON, or that ``decode`` refuses (returns None, or raises ``ValueError``,
        ``KeyError`` or ``TypeError``): such an answer is asked again rather than trusted.
        """
        path = self._path(key)
        if path is None:
            return None
        try:
            return decode(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` under ``key``, atomically (nothing without a root)."""
        path = self._path(key)
        if path is not None:
            text = json.dumps(entry, sort_keys=self.sort_keys) + "\n"
            atomic_write_text(path, text, sync=False)

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"


@dataclass(frozen=True)
class ChatAnswer:
    """What the server answered to one chat request.

    Attributes:
        text: The answer's text.
        prompt_tokens: Tokens of the request, as the server counted them (0 if it did not).
        completion_tokens: Tokens of the answer, as the server counted them.
        cached: True when the answer came from the cache rather than the server.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


def request_key(
    endpoint: str, model: str, parameters: Mapping[str, Any], messages: Sequence[Any]
) -> str:
    """Return the cache key of one chat request: a sha256 of all that makes its answer."""
    return settings_key(
        {
            "endpoint": endpoint,
            "model": model,
            "parameters": dict(parameters),
            "messages": list(messages),
        }
    )


class ChatCache:
    """Chat answers under ``<root>/chat/<key[:2]>/<key>.json``, each naming its key and model.

    Args:
        root: The cache root (``--cache-dir``, ``$MMBRIGHT_CACHE``), or None to keep nothing.
    """

    def __init__(self, root: Path | None) -> None:
        self.answers = AnswerCache(root, FOLDER, sort_keys=True)

    def get(self, key: str, model: str) -> ChatAnswer | None:
        """Return ``model``'s answer stored under ``key``, or None (also for a damaged entry)."""

        def decode(stored: Any) -> ChatAnswer | None:
            if stored["format"] != FORMAT or stored["key"] != key or stored["model"] != model:
                return None
            return ChatAnswer(
                str(stored["text"]),
                int(stored["prompt_tokens"]),
                int(stored["completion_tokens"]),
                cached=True,
            )

        return self.answers.get(key, decode)

    def put(self, key: str, model: str, answer: ChatAnswer) -> None:
        """Store ``model``'s ``answer`` under ``key``, atomically."""
        entry = {
            "format": FORMAT,
            "key": key,
            "model": model,
            "text": answer.text,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }
        self.answers.put(key, entry)

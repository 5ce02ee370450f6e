"""The chat client's answers on disk, keyed by everything that made them.

:class:`ChatCache` keeps each answer as one entry of the package's answer cache
(:class:`~mmbright_core.retrieval.cache.answers.AnswerCache`: a small JSON file under
``chat/``, written atomically without fsync, an answer can be asked again) as soon as it
arrives, so a job killed at any point keeps every answer received before the kill and loses at
most the requests in flight. An entry that cannot be read or decoded is asked again, never
trusted.

A chat answer's key is the sha256 of the endpoint, the model, the sampling parameters and the
whole message list (prompt, query text and the images' data URLs): two models, two prompts or
two settings never share an answer, and an answer is reused for nothing but the very request
that produced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmbright_core.retrieval.cache.answers import AnswerCache
from mmbright_core.retrieval.cache.store import settings_key

#: The chat answers' folder under the cache root.
FOLDER = "chat"
FORMAT = "mmbright-chat-answer/1"


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

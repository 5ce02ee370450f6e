"""Chat answers kept on disk, keyed by everything that made them.

An answer's key is the sha256 of the endpoint, the model, the sampling parameters and the
whole message list (prompt, query text and the images' data URLs): two models, two
prompts or two settings never share an answer, and an answer is reused for nothing but
the very request that produced it. Each answer is one small JSON file written atomically
(:mod:`mmbright_core.io.atomic`, without fsync: an answer can be asked again) as soon as it
arrives, so a job killed at any point keeps every answer received before the kill and loses
at most the requests in flight.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.retrieval.cache.store import settings_key

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


class AnswerCache:
    """Chat answers under ``<root>/chat/<key[:2]>/<key>.json``.

    Args:
        root: The cache root (``--cache-dir``, ``$MMBRIGHT_CACHE``), or None to keep nothing.
    """

    def __init__(self, root: Path | None) -> None:
        self.folder = None if root is None else root / "chat"

    def get(self, key: str, model: str) -> ChatAnswer | None:
        """Return the answer stored under ``key``, or None (also for a damaged entry)."""
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored["format"] != FORMAT or stored["key"] != key or stored["model"] != model:
                return None
            return ChatAnswer(
                str(stored["text"]),
                int(stored["prompt_tokens"]),
                int(stored["completion_tokens"]),
                cached=True,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # damaged: ask the server again rather than trust it

    def put(self, key: str, model: str, answer: ChatAnswer) -> None:
        """Store ``answer`` under ``key``, atomically."""
        path = self._path(key)
        if path is None:
            return
        record = {
            "format": FORMAT,
            "key": key,
            "model": model,
            "text": answer.text,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }
        atomic_write_text(path, json.dumps(record, sort_keys=True) + "\n", sync=False)

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"

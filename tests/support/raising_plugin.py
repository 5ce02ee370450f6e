"""A retriever plugin whose ranking raises an exception quoting ESC sequences and U+202E."""

from __future__ import annotations

from typing import Any

from mmbright_core.retrieval.backends.random_rank import RandomRetriever

#: What the exception says, as Python would print it raw.
MESSAGE = "title \x1b]0;pwned\x07 \x1b[2J cleared, \u202eversed"
#: The same, each control and bidi character written out.
ESCAPED = "title \\x1b]0;pwned\\x07 \\x1b[2J cleared, \\u202eversed"


class Raising(RandomRetriever):
    def retrieve(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(MESSAGE)


def make() -> Raising:
    return Raising()

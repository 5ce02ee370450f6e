"""The one text cap: the start of a passage that holds everything a token truncation keeps.

Shared by the dense and clip encoders and by the Ray engine, which ships texts to workers
capped, so a 25 MB passage (docs/protocol.md, The data as published) is neither tokenised whole nor
copied whole.
"""

from __future__ import annotations

import re

#: Token bound used for a text model whose truncation is not set (no model of docs/protocol.md,
#: Published numbers reads more than 8,192 tokens).
DEFAULT_TOKEN_BOUND = 8192
#: At most this many characters per token survive :func:`cap_text` (a text without spaces).
MAX_CHARS_PER_TOKEN = 64
_WORD = re.compile(r"\S+")


def cap_text(text: str, tokens: int) -> str:
    """Return the start of ``text`` that holds everything a ``tokens``-token truncation keeps.

    WordPiece and CLIP's BPE never merge across whitespace and give every word at least one
    token, so the first ``2 * tokens`` words hold the first ``tokens`` tokens with room to
    spare; a text without whitespace is cut at ``64 * tokens`` characters (reached only when
    words average over 32 characters, where WordPiece reads [UNK] anyway). A model that
    truncates at ``tokens`` sees the same tokens either way, so shipping the capped text to a
    worker changes no vector, while the 25 MB passage of docs/protocol.md, The data as published
    travels as 0.5 MB at most.

    Args:
        text: The passage.
        tokens: The model's truncation, in tokens (an upper bound is fine).

    Returns:
        ``text`` itself when it is short enough, else its capped start.
    """
    head = text[: tokens * MAX_CHARS_PER_TOKEN]
    words = 2 * tokens
    if len(head) <= words or len(head.split(None, words)) <= words:
        return head
    for count, match in enumerate(_WORD.finditer(head), start=1):
        if count == words:
            return head[: match.end()]
    return head  # unreachable: split() found more than ``words`` words

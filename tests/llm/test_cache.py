"""The chat answers on disk: their layout, their bytes, and what is not trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.llm.cache import ChatAnswer, ChatCache

KEY = "ab" + "0" * 62
# A chat answer as the cache has always written it: sorted fields, ASCII, one line.
WRITTEN_BEFORE = (
    '{"completion_tokens": 4, "format": "mmbright-chat-answer/1", "key": "' + KEY + '", '
    '"model": "m", "prompt_tokens": 3, "text": "r\\u00e9ponse \\"x\\""}\n'
)


def _plant(root: Path, text: str, key: str = KEY) -> Path:
    path = root / "chat" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_chat_answer_written_before_is_read_and_written_again_byte_for_byte(tmp_path: Path):
    _plant(tmp_path / "old", WRITTEN_BEFORE)
    found = ChatCache(tmp_path / "old").get(KEY, "m")
    assert found == ChatAnswer('réponse "x"', 3, 4, cached=True)
    ChatCache(tmp_path / "new").put(KEY, "m", ChatAnswer('réponse "x"', 3, 4))
    (written,) = (tmp_path / "new").rglob("*.json")
    assert written.relative_to(tmp_path / "new") == Path("chat", "ab", f"{KEY}.json")
    assert written.read_text(encoding="utf-8") == WRITTEN_BEFORE


@pytest.mark.parametrize(
    "text",
    [
        WRITTEN_BEFORE.replace('"m"', '"other"'),  # another model's answer
        WRITTEN_BEFORE.replace("answer/1", "answer/2"),  # another format
        WRITTEN_BEFORE.replace(KEY, "cd" + "0" * 62),  # an entry moved under another key
        WRITTEN_BEFORE[:40],  # cut short
        WRITTEN_BEFORE.replace('"prompt_tokens": 3', '"prompt_tokens": "three"'),
        "[1, 2]\n",
    ],
)
def test_a_chat_entry_that_is_not_this_requests_answer_is_not_trusted(tmp_path: Path, text: str):
    _plant(tmp_path, text)
    assert ChatCache(tmp_path).get(KEY, "m") is None


def test_without_a_root_nothing_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    cache = ChatCache(None)
    cache.put(KEY, "m", ChatAnswer("kept nowhere"))
    assert cache.get(KEY, "m") is None
    assert not list(tmp_path.rglob("*"))

"""The answer cache: its layout, its bytes, and the entries it refuses to trust."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mmbright_core.retrieval.cache.answers import AnswerCache

KEY = "ab" + "0" * 62


def test_an_entry_is_what_its_decoder_accepts_and_is_written_in_the_order_given(
    tmp_path: Path,
) -> None:
    cache = AnswerCache(tmp_path, "kind", sort_keys=False)
    cache.put(KEY, {"b": 1, "a": [2]})
    path = tmp_path / "kind" / "ab" / f"{KEY}.json"
    assert path.read_text(encoding="utf-8") == '{"b": 1, "a": [2]}\n'
    assert cache.get(KEY, lambda entry: entry["a"]) == [2]
    assert cache.get(KEY, lambda entry: None) is None  # refused
    assert cache.get(KEY, lambda entry: entry["missing"]) is None  # KeyError: refused
    assert cache.get(KEY, lambda entry: int(entry["a"])) is None  # TypeError: refused
    assert cache.get("cd" + "0" * 62, lambda entry: entry) is None  # absent
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": [2], "b": 1}


def test_a_checked_entry_carries_its_checksum_and_a_damaged_one_is_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = AnswerCache(tmp_path, Path("kind", "sub"), sort_keys=True, checked="text")
    cache.put(KEY, {"text": "words", "format": 1})
    path = tmp_path / "kind" / "sub" / "ab" / f"{KEY}.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert list(stored) == ["checksum", "format", "text"] and stored["checksum"]
    assert cache.get(KEY, lambda entry: entry["text"]) == "words"
    assert cache.get(KEY, lambda entry: None) is None and path.is_file()  # refused, kept
    path.write_text(path.read_text(encoding="utf-8").replace("words", "sword"), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="mmbright"):
        assert cache.get(KEY, lambda entry: entry["text"]) is None
    assert f"damaged cache entry {path}: its checksum does not match its text" in caplog.text
    assert not path.exists()


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"text": 3, "checksum": "x"}'])
def test_an_unreadable_checked_entry_is_deleted_an_unchecked_one_only_refused(
    tmp_path: Path, text: str
) -> None:
    checked = AnswerCache(tmp_path, "checked", sort_keys=False, checked="text")
    plain = AnswerCache(tmp_path, "plain", sort_keys=False)
    for folder in ("checked", "plain"):
        path = tmp_path / folder / "ab" / f"{KEY}.json"
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    assert checked.get(KEY, lambda entry: entry) is None
    assert plain.get(KEY, lambda entry: entry["text"].upper()) is None
    assert not (tmp_path / "checked" / "ab" / f"{KEY}.json").exists()
    assert (tmp_path / "plain" / "ab" / f"{KEY}.json").is_file()

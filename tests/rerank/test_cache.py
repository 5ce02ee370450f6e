"""Rerankers' answers on disk: the entries written before are read, and written alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.rerank.base import Reranked
from mmbright_core.rerank.cache import RerankCache

ORDERED, RANKED = "ab" + "0" * 62, "cd" + "1" * 62
# Answers as the cache has always written them: fields in this order, ASCII, one line.
WRITTEN_BEFORE = {
    ORDERED: '{"order": [2, 0, 1], "scores": [0.5, 1.0, 0.25], "ranked": null, "problem": null}\n',
    RANKED: '{"order": null, "scores": null, "ranked": [[1, 0.5], [0, 2.0]], '
    '"problem": "odd \\u00e9"}\n',
}
ANSWERS = {
    ORDERED: Reranked(order=(2, 0, 1), scores=(0.5, 1.0, 0.25)),
    RANKED: Reranked(ranked=((1, 0.5), (0, 2.0)), problem="odd é"),
}


def _plant(root: Path, key: str, text: str) -> None:
    path = root / "rerank" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_answers_written_before_are_read_and_written_again_byte_for_byte(tmp_path: Path):
    for key, text in WRITTEN_BEFORE.items():
        _plant(tmp_path / "old", key, text)
    old = RerankCache(tmp_path / "old")
    assert {key: old.get(key) for key in WRITTEN_BEFORE} == ANSWERS
    new = RerankCache(tmp_path / "new")
    for key, answer in ANSWERS.items():
        new.put(key, answer)
    for key, text in WRITTEN_BEFORE.items():
        path = tmp_path / "new" / "rerank" / key[:2] / f"{key}.json"
        assert path.read_text(encoding="utf-8") == text


def test_an_answer_written_before_ranked_answers_existed_is_read(tmp_path: Path):
    _plant(tmp_path, ORDERED, '{"order": [1, 0], "scores": null, "problem": null}\n')
    assert RerankCache(tmp_path).get(ORDERED) == Reranked(order=(1, 0))


@pytest.mark.parametrize(
    "text", ['{"order": [1, 0], "scores": null}\n', '{"order": ["x"]', '{"order": 3}\n']
)
def test_a_damaged_answer_is_asked_again(tmp_path: Path, text: str):
    _plant(tmp_path, ORDERED, text)
    assert RerankCache(tmp_path).get(ORDERED) is None


def test_the_answers_live_under_the_cache_root_of_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path))
    RerankCache().put(ORDERED, ANSWERS[ORDERED])
    path = tmp_path / "rerank" / ORDERED[:2] / f"{ORDERED}.json"
    assert path.read_text(encoding="utf-8") == WRITTEN_BEFORE[ORDERED]

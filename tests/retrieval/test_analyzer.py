"""The Python re-implementation of pyserini's default analyzer (Lucene's English chain).

Expected values are Lucene's documented behaviour: cases from Lucene's own tests (named in
comments) and outputs of pyserini 0.22.1's ``Analyzer(get_lucene_analyzer())``.
"""

from __future__ import annotations

import json

import pytest
from analyzer_cases import CASES

from mmbright_core.retrieval.analyzer import STOP_WORDS, EnglishAnalyzer, java_lower


@pytest.fixture(scope="module")
def analyzer() -> EnglishAnalyzer:
    return EnglishAnalyzer()


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_analyze(analyzer: EnglishAnalyzer, text: str, expected: list[str]) -> None:
    assert analyzer.analyze(text) == expected


def test_second_call_uses_the_cache_and_agrees(analyzer: EnglishAnalyzer) -> None:
    text = "The dogs' owners were running, and (running) again."
    assert (
        analyzer.analyze(text)
        == analyzer.analyze(text)
        == ["dog", "owner", "were", "run", "run", "again"]
    )


def test_tokens_longer_than_255_are_chopped(analyzer: EnglishAnalyzer) -> None:
    # StandardTokenizer's buffer is maxTokenLength (255) long: the rest is a new token.
    assert [len(t) for t in analyzer.tokens("a" * 300)] == [255, 45]
    assert analyzer.tokens("x" * 255 + "'s") == ["x" * 255, "s"]
    assert [len(t) for t in analyzer.tokens("a" * 254 + "bcd")] == [255, 2]


def test_analyze_many_matches_analyze(analyzer: EnglishAnalyzer) -> None:
    texts = ["first text", "", "Second TEXT's"]
    assert list(analyzer.analyze_many(texts)) == [["first", "text"], [], ["second", "text"]]


def test_stop_words_are_lucenes_33() -> None:
    assert len(STOP_WORDS) == 33
    assert {"a", "the", "with", "will", "such"} <= STOP_WORDS
    assert "i" not in STOP_WORDS and "can" not in STOP_WORDS


def test_java_lower_differs_from_str_lower() -> None:
    assert java_lower("İ") == "i" and "İ".lower() != "i"
    assert java_lower("ΟΣ") == "οσ" and "ΟΣ".lower() == "ος"


def test_settings_are_json_ready(analyzer: EnglishAnalyzer) -> None:
    settings = json.loads(json.dumps(analyzer.settings()))
    assert settings["name"] == "lucene-english"
    assert settings["stemmer"] == "porter"
    assert settings["max_token_length"] == 255
